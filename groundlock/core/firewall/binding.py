"""Which predicate a value is bound to (``firewall_v3``'s ``value_binding``).

``12 valves failed [C0]`` where C0 says ``12 valves were inspected and 3 failed``: every word
and number of the sentence is in the entry, but the 12 belongs to another predicate. The
sentence's clause that states a value is compared with the evidence's clauses: those that
state the value, and those that state another number. The value is *rebound* when a clause
stating another number says clearly more of what the sentence's clause says around the value
than any clause stating the value does (two content words or more, and two more than the
best clause with the value). Clauses are split at semicolons, commas, tabs, line breaks and
``and``/``but``/``while``, so a table's cells and a list's items are clauses of their own.
Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundlock._caches import memoized
from groundlock.core.firewall.facts import stem
from groundlock.core.firewall.facts import stopwords as facts_stopwords
from groundlock.core.firewall.facts import vocabulary as facts_vocabulary
from groundlock.core.firewall.lexicon import words
from groundlock.core.firewall.values import Value, ValueIndex, values_in
from groundlock.policies.ruleset import Ruleset

__all__ = ["Bound", "bound_clauses", "rebound"]

_MAX_KEY_CHARS = 4096
_SPLIT_RE = re.compile(
    r"[;\t\n|,:]|(?<=[^\W\d_])[.!?](?=\s)|\b(?:and|but|while|whereas|whilst)\b"
    r"|(?<=\s)[-\u2013\u2014](?=\s)",
    re.I,
)
"""Where a clause ends. (No pattern here starts with a run of spaces: one that did would
rescan a long run of them from each of its positions.)"""
_MARGIN = 2
"""How many more of the sentence's words the other clause must say than the value's best."""


@dataclass(frozen=True)
class Bound:
    """One value of an evidence clause with the words around it."""

    value: Value
    near: frozenset[str]
    """The content stems next to it in its clause (three each side at most)."""


def _unit_words(ruleset: Ruleset) -> frozenset[str]:
    """The words of every unit and currency spelling: a value's unit is no predicate."""
    vocabulary = facts_vocabulary(ruleset)
    return frozenset(
        stem(word)
        for spelling in (*vocabulary.units, *vocabulary.currency)
        for word in spelling.split()
    )


def _near(clause: str, surface: str, ruleset: Ruleset, *, counted: bool = True) -> frozenset[str]:
    """The content stems within three words of ``surface`` in ``clause``.

    Without ``counted``, the word right after the value is left out: in a sentence it is
    what the value counts (``Twelve pumps``), a noun every statement about it shares, which
    binds the value to no predicate.
    """
    at = clause.find(surface)
    if at < 0:
        return frozenset()
    stop = facts_stopwords(ruleset)
    units = ruleset.compiled("binding.units", _unit_words)

    def content(text: str) -> list[str]:
        return [
            stem(w)
            for w in words(text)
            if w not in stop and not any(c.isdigit() for c in w) and stem(w) not in units
        ]

    after = content(clause[at + len(surface) :])
    return frozenset(content(clause[:at])[-3:] + (after[:3] if counted else after[1:4]))


def _clauses(text: str) -> list[str]:
    return [part for part in _SPLIT_RE.split(text) if part.strip()]


@memoized(2048, max_key_chars=_MAX_KEY_CHARS)
def bound_clauses(text: str, ruleset: Ruleset) -> tuple[Bound, ...]:
    """Every value of an evidence text with the words next to it in its clause."""
    vocabulary = facts_vocabulary(ruleset)
    return tuple(
        Bound(value, _near(clause, value.surface, ruleset))
        for clause in _clauses(text)
        for value in values_in(clause, vocabulary, evidence=True)
        if value.kind in ("number", "date", "time")
    )


def _unit(value: Value) -> object:
    """A value's unit for comparing values (a count, ``#``, is a number without one)."""
    unit = next((k[2] for k in value.keys if k[0] == "n"), value.kind)
    return None if unit == "#" else unit


def rebound(
    sentence: str, value: Value, evidence: tuple[Bound, ...], *, ruleset: Ruleset
) -> str | None:
    """The words ``value`` is bound to in the evidence instead, or None if not rebound.

    Rebound: none of the words next to it in the sentence is next to it anywhere in the
    evidence, while two or more of them are next to another value of the same unit there.
    """
    near = next(
        (
            _near(c, value.surface, ruleset, counted=False)
            for c in _clauses(sentence)
            if value.surface in c
        ),
        frozenset(),
    )
    if len(near) < 2:
        return None
    index = ValueIndex()
    mine = []
    for bound in evidence:
        index.keys.clear()
        index.numbers.clear()
        index.add(bound.value)
        if index.supports(value):
            mine.append(bound)
    if not mine or any(near & b.near for b in mine) or not any(len(b.near) >= 2 for b in mine):
        return None
    unit = _unit(value)
    for bound in evidence:
        if bound in mine or _unit(bound.value) != unit:
            continue
        if len(near & bound.near) >= 2:
            return " ".join(sorted(near & bound.near))
    return None
