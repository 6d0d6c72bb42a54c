"""Names a sentence introduces that its cited entries and the question do not contain.

Proper names, acronyms and acronym expansions (``001`` P2.2: no new entities, no acronym
expansions absent from the evidence).

An acronym is supported where the evidence writes it or spells out its initials
(``Money Laundering Reporting Officer`` supports ``MLRO``); an expansion written beside its
acronym must itself occur in the evidence.
"""

from __future__ import annotations

from typing import ClassVar

from groundlock._caches import memoized
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.entities import (
    Name,
    expansion_of,
    initials_match,
    names_in,
    written_otherwise,
)
from groundlock.core.firewall.lexicon import words
from groundlock.core.firewall.parsed import LineKind, Sentence
from groundlock.core.firewall.rule import Context, SentenceRule
from groundlock.core.firewall.support import Source, support_view
from groundlock.policies.ruleset import Ruleset

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""

__all__ = ["UnsupportedEntity", "sentence_names"]


def _connectors(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("entities", "connectors"))


@memoized(4096, max_key_chars=_MAX_KEY_CHARS)
def _spelled_out(acronym: str, text: str, connectors: frozenset[str]) -> bool:
    return initials_match(acronym, text, connectors)


def sentence_names(sentence: Sentence, ctx: Context) -> tuple[tuple[Name, Source, str | None], ...]:
    """Each name of a cited sentence with where it was found (computed once a sentence).

    Headings and table header rows are labels: their capitalised words name nothing.
    """
    key = ("names", sentence.number)
    found = ctx.memo.get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    view = support_view(sentence, ctx)
    connectors = ctx.ruleset.compiled("entities.connectors", _connectors)
    found_names = []
    if sentence.kind is LineKind.TEXT:
        for name in names_in(sentence.text, ctx.ruleset):
            source, anchor = view.word_source(name.forms)
            abbreviated = len(name.written) <= 4 and f"{name.written}." in sentence.text
            texts = [f.statements for f in view.cited] + [view.question.statements]
            if source is not Source.CITED and name.kind == "acronym":
                if any(_spelled_out(name.written, t, connectors) for t in texts):
                    source, anchor = Source.CITED, None
            elif source is not Source.CITED and any(
                written_otherwise(name.written, t, abbreviated=abbreviated) for t in texts
            ):
                source, anchor = Source.CITED, None
            found_names.append((name, source, anchor))
        for acronym, expansion in expansion_of(sentence.text):
            wanted = " ".join(words(expansion))
            texts = [f.statements for f in view.cited] + [view.question.statements]
            if not any(wanted in " ".join(words(t)) for t in texts):
                name = Name(f"{expansion} ({acronym})", "expansion", frozenset())
                found_names.append((name, Source.NOWHERE, None))
    result = ctx.memo[key] = tuple(found_names)
    return result


class UnsupportedEntity(SentenceRule):
    """A proper name, acronym or expansion that no entry of the request holds."""

    name: ClassVar[str] = "unsupported_entity"
    reason: ClassVar[ReasonCode] = ReasonCode.UNSUPPORTED_ENTITY

    def objection(self, sentence: Sentence, ctx: Context) -> str | None:
        """Its first name found nowhere."""
        for name, source, _ in sentence_names(sentence, ctx):
            if source is Source.NOWHERE:
                return f"the {name.kind} {name.written!r} is in no evidence entry"
        return None
