"""Clauses that let off a requirement or allow what is forbidden (``firewall_v3``).

``A face shield isn't really necessary when adding water``, ``the cooling period can be
skipped``, ``Reusing the old seal is fine``: the negation rule reads modal verbs and
negators (``may exceed`` against ``must not exceed``); these say the same in other words.
A clause *waives* what its other content words name (``not necessary``, ``can be skipped``,
``no need to``, ``need not``) or *permits* it (``is fine``, ``is acceptable``); the forms are
the ruleset's (``waivers.patterns``). An evidence clause *requires* what it orders (an
imperative, ``must``, ``shall``, ``required``) and *forbids* what it negates with a strict
modal or a negated order (``must not``, ``never``, ``do not``), as
:mod:`~groundlock.core.firewall.polarity` reads it. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundlock._caches import memoized
from groundlock.core.firewall.facts import stem
from groundlock.core.firewall.lexicon import apostrophes, words
from groundlock.core.firewall.polarity import Clause, Lexicon
from groundlock.policies.ruleset import Ruleset
from groundlock.text.fold import fold

__all__ = ["Waiver", "forbids", "requires", "waivers"]

_MAX_KEY_CHARS = 4096
_CLAUSE_RE = re.compile(r"[;:\u2014\u2013]|\s-\s|,\s*(?:and|but|so|while|whereas)\s|\bbut\b")


@dataclass(frozen=True, slots=True)
class Waiver:
    """A clause that waives or permits what its content words name."""

    kind: str
    """``waiver`` (the obligation is denied) or ``permission`` (the act is allowed)."""
    stems: frozenset[str]
    """What it waives or permits: its content stems, without the waiving words."""


def _forms(ruleset: Ruleset) -> dict[str, re.Pattern[str]]:
    found = {}
    for kind in ("waiver", "permission"):
        patterns = [apostrophes(p) for p in ruleset.entries("waivers", kind)]
        if patterns:
            found[kind] = re.compile("|".join(f"(?:{p})" for p in patterns))
    return found


@memoized(4096, max_key_chars=_MAX_KEY_CHARS)
def waivers(text: str, lex: Lexicon, ruleset: Ruleset) -> tuple[Waiver, ...]:
    """The waivers and permissions of ``text``'s clauses."""
    forms = ruleset.compiled("waivers.forms", _forms)
    if not forms:
        return ()
    found = []
    for clause in _CLAUSE_RE.split(fold(text).replace("\u2019", "'")):
        for kind, pattern in forms.items():
            match = pattern.search(clause)
            if match is None:
                continue
            rest = clause[: match.start()] + " " + clause[match.end() :]
            stems = frozenset(
                stem(w)
                for w in words(rest)
                if w not in lex.stopwords
                and w not in lex.negators
                and w not in lex.obligation
                and w not in lex.permission
                and not w.isdigit()
                and len(w) > 2
            )
            if stems:
                found.append(Waiver(kind, stems))
            break
    return tuple(found)


def requires(clause: Clause) -> bool:
    """Whether an evidence clause orders what it names (``Wear a face shield``, ``must``)."""
    if clause.negative or clause.restricted:
        return False
    return clause.order is not None or "obligation" in clause.modal.values()


def forbids(clause: Clause) -> bool:
    """Whether an evidence clause forbids what it names (``must not``, ``never``, ``do not``)."""
    return clause.negated_order or "prohibition" in clause.modal.values()
