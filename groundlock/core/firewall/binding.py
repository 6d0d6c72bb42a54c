"""Which predicate a value is bound to (``firewall_v3``'s ``rebound_value``).

``12 valves failed [C0]`` where C0 says ``12 valves were inspected and 3 failed``: every word
and number of the sentence is in the entry, but the 12 belongs to another predicate. The
words next to the value in the sentence's clause (three content words each side) are compared
with the words next to each value in the evidence's clauses. The value is *rebound* when none
of its words is next to it anywhere in the evidence, while two or more are next to another
value of the same unit there that the sentence's clause does not state too (a clause that
says ``from 1969 until 1977`` or ``14,401 votes to his 14,105`` binds both values to one
predicate). Clauses are split at semicolons, commas, tabs, line breaks, sentence ends and
``and``/``but``/``while``, so a list's items and a table's rows are clauses of their own. A
value is found only as a whole token (the ``8`` of ``1968`` is no ``8``), and a number that
labels (``Section 7.2``, ``SOC 2``) binds to nothing. Pure: no I/O.
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
    r"[;\t\n]|\|[ \t]*\||,(?!\d|\s?\d{4}\b)|(?<=[^\W\d_])[.!?](?=\s)"
    r"|\b(?:and|but|while|whereas|whilst)\b|(?<=\s)[-\u2013\u2014](?=\s)",
    re.I,
)
"""Where a clause may end: a point ends one unless it abbreviates a designator (``Sec. 4.3``
is one clause). Not a colon: it joins a label to its value (``Date: 17 June 2024``,
``1955-1956: Guggenheim Fellow``); not a table's bar, but the two of a row's end and the
next row's start (``| Iron | 30 ppm | | Water | 500 ppm |``: sanitising joined the lines):
a row binds its cells; not the comma of ``1,800`` or ``November 20, 2023``. (No pattern
here starts with a run of spaces: one that did would rescan a long run of them from each of
its positions.)"""
_ELLIPTIC_RE = re.compile(
    r"\s*+(?:(?:(?:down|up|rising|falling|increasing|decreasing)\s+)?from|versus|vs\.?"
    r"|compared\s+(?:with|to)|against|including|of\s+which|to|or)?\s*+(?:[$\u20ac\u00a3]\s*+)?\Z",
    re.I,
)
"""What may stand before the value of a clause that opens with it. (Possessive: a run of
spaces is not tried twice.)"""
_RELATIVE_RE = re.compile(r"\s*(?:which|who|whose|where|when)\b", re.I)
_WORD_BEFORE_RE = re.compile(r"([^\W\d_]+)\.?\s*\Z")
"""The word right before a value, with its abbreviation point (``Sec. 7.2``)."""


@dataclass(frozen=True)
class Bound:
    """One value of an evidence clause with the words around it."""

    value: Value
    near: frozenset[str]
    """The content stems next to it in its clause (three each side at most)."""
    shared: frozenset[str] = frozenset()
    """Stems of a neighbouring clause that tells of it: the clause before, for a clause that
    opens with its value (the predicate it leaves out), or a relative clause after it. They
    clear the value (the sentence may say them) but bind no other."""


def _unit_words(ruleset: Ruleset) -> frozenset[str]:
    """Every one-word unit and currency spelling: a value's unit is no predicate.

    Not the words of longer spellings (``water`` of ``inches of water`` names a substance),
    and as written, not as stems (``watts`` and ``water`` share one).
    """
    vocabulary = facts_vocabulary(ruleset)
    return frozenset(
        spelling for spelling in (*vocabulary.units, *vocabulary.currency) if " " not in spelling
    )


def _designators(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("values", "designators"))


def _designated(clause: str, at: int, ruleset: Ruleset) -> bool:
    """Whether the value at ``at`` names a part or a product (``Section 7.2``, ``SOC 2``).

    Such a number labels; it binds to no predicate, and every statement about the thing
    shares it.
    """
    before = _WORD_BEFORE_RE.search(clause[max(0, at - 24) : at])
    if before is None:
        return False
    word = before[1]
    return word.lower() in ruleset.compiled("binding.designators", _designators) or (
        len(word) >= 2 and word.isupper() and word.lower() not in _currencies(ruleset)
    )


def _currencies(ruleset: Ruleset) -> frozenset[str]:
    return ruleset.compiled("binding.currencies", lambda r: frozenset(facts_vocabulary(r).currency))


def _at(clause: str, surface: str) -> int:
    """Where ``surface`` stands in ``clause`` as whole tokens, or -1.

    Not inside a longer number or word: ``str.find`` would read the ``2`` of ``ISO 27001``
    or the ``8`` of ``1968`` as the value.
    """
    at = clause.find(surface)
    while at >= 0:
        end = at + len(surface)
        before = clause[at - 1] if at else " "
        after = clause[end : end + 2]
        if not (before.isalnum() or before in "_.,") and not (
            after[:1].isalnum() or after[:1] == "_" or (after[:1] in ".," and after[1:].isdigit())
        ):
            return at
        at = clause.find(surface, at + 1)
    return -1


def _near(clause: str, value: Value, ruleset: Ruleset, *, counted: bool = True) -> frozenset[str]:
    """The content stems within three words of ``value`` in ``clause``.

    Without ``counted``, the word right after a count is left out: in a sentence it is what
    the value counts (``Twelve pumps``), a noun every statement about it shares, which binds
    the value to no predicate. Only a count's (a value with a unit counts in that unit:
    ``30 ppm alert limit``), and only the very next word (``4 percent on placebo``).
    """
    surface = value.surface
    at = _at(clause, surface)
    if at < 0 or _designated(clause, at, ruleset):
        return frozenset()
    rest = clause[at + len(surface) :]
    after = _content(rest, ruleset)
    following = words(rest)[:1]
    if (
        not counted
        and _unit(value) is None
        and after
        and following
        and stem(following[0]) == after[0]
    ):
        after = after[1:]
    return frozenset(_content(clause[:at], ruleset)[-3:] + after[:3])


def _content(text: str, ruleset: Ruleset) -> list[str]:
    """The stems of ``text``'s words that may name a predicate: no stop word, number or unit."""
    stop = facts_stopwords(ruleset)
    units = ruleset.compiled("binding.units", _unit_words)
    return [
        stem(w)
        for w in words(text)
        if w not in stop and not any(c.isdigit() for c in w) and w not in units
    ]


def _clauses(text: str, ruleset: Ruleset) -> list[str]:
    designators = ruleset.compiled("binding.designators", _designators)
    parts, start = [], 0
    for found in _SPLIT_RE.finditer(text):
        if found[0] in ".!?":
            word = _WORD_BEFORE_RE.search(text[max(0, found.start() - 24) : found.start()])
            if word is not None and word[1].lower() in designators:
                continue
        parts.append(text[start : found.start()])
        start = found.end()
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


@memoized(2048, max_key_chars=_MAX_KEY_CHARS)
def bound_clauses(text: str, ruleset: Ruleset) -> tuple[Bound, ...]:
    """Every value of an evidence text with the words next to it in its clause.

    A clause that opens with its value (``..., down from 21.0% a year earlier``, ``... in 8%
    of the drug group and 6% of the placebo group``) leaves its predicate to the clause
    before it, and a relative clause (``..., which will be your Termination Date``) tells
    more of the values before it: those values share the other clause's words.
    """
    vocabulary = facts_vocabulary(ruleset)
    found: list[Bound] = []
    last: list[Bound] = []
    for clause in _clauses(text, ruleset):
        values = [
            v
            for v in values_in(clause, vocabulary, evidence=True)
            if v.kind in ("number", "date", "time")
        ]
        if _RELATIVE_RE.match(clause) and last:
            more = frozenset(_content(clause, ruleset)[:3])
            found[-len(last) :] = [Bound(b.value, b.near, b.shared | more) for b in last]
        at = _at(clause, values[0].surface) if values else -1
        opens = at >= 0 and _ELLIPTIC_RE.match(clause[:at]) is not None
        before = frozenset().union(*(b.near for b in last)) if opens else frozenset()
        last = [Bound(v, _near(clause, v, ruleset), before) for v in values]
        found.extend(last)
    return tuple(found)


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
    clause = next((c for c in _clauses(sentence, ruleset) if _at(c, value.surface) >= 0), "")
    near = _near(clause, value, ruleset, counted=False)
    if len(near) < 2:
        return None
    mine = [bound for bound in evidence if _same(value, bound.value)]
    if (
        not mine
        or any(near & (b.near | b.shared) for b in mine)
        or not any(len(b.near) >= 2 for b in mine)
    ):
        return None
    unit = _unit(value)
    partners = _partners(clause, ruleset)
    for bound in evidence:
        if bound in mine or _unit(bound.value) != unit:
            continue
        if len(near & bound.near) >= 2 and not any(_same(p, bound.value) for p in partners):
            return " ".join(sorted(near & bound.near))
    return None


def _same(one: Value, other: Value) -> bool:
    """Whether two values state the same thing (``5 February`` is ``5 February 2024``)."""
    if _index(other).supports(one) or _index(one).supports(other):
        return True
    days = {k[-2:] for k in one.keys if k[0] in ("md", "ymd")}
    return any(k[-2:] in days for k in other.keys if k[0] in ("md", "ymd"))


def _index(value: Value) -> ValueIndex:
    index = ValueIndex()
    index.add(value)
    return index


def _partners(clause: str, ruleset: Ruleset) -> list[Value]:
    """The values the sentence's clause states: a predicate bound to one of them is its own."""
    return list(values_in(clause, facts_vocabulary(ruleset), evidence=True))
