"""Where a sentence's values and names can be found.

In the entries it cites, the question, the other entries, or only in an instruction
injected into the evidence.

The substantive rules share this view of one sentence through its
:class:`~groundlock.core.firewall.reading.SentenceReading`, so each lookup is made once:
``unsupported_value`` and ``unsupported_entity`` object to what is found nowhere,
``misattributed_citation`` to what is found only in an entry the sentence does not cite,
``obeyed_instruction`` to what is found only in an instruction to the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar

from groundlock._caches import memoized
from groundlock.contracts.assembly import SelectedEvidence
from groundlock.core.firewall.entities import (
    Name,
    expansion_of,
    initials_match,
    names_in,
    written_otherwise,
)
from groundlock.core.firewall.facts import Facts, facts, question_facts, vocabulary
from groundlock.core.firewall.lexicon import words
from groundlock.core.firewall.parsed import LineKind, Sentence
from groundlock.core.firewall.rule import Context
from groundlock.core.firewall.values import Value, ValueIndex, values_in
from groundlock.policies.ruleset import Ruleset

__all__ = ["Located", "Source", "SupportView", "locate_names", "locate_values", "support_view"]

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""
_T = TypeVar("_T")


class Source(StrEnum):
    """Where a value or a name was found first, in this order of preference."""

    CITED = "cited"
    QUESTION = "question"
    OTHER_ENTRY = "other_entry"
    INSTRUCTION = "instruction"
    NOWHERE = "nowhere"


class Located(NamedTuple, Generic[_T]):
    """A value or a name of a sentence, with where it was found first."""

    item: _T
    source: Source
    anchor: str | None
    """The entry it was found in, when that is an entry the sentence does not cite."""


@dataclass(frozen=True)
class SupportView:
    """The evidence one sentence may draw on, by source."""

    cited: tuple[Facts, ...]
    question: Facts
    others: tuple[tuple[str, Facts], ...]
    """The entries the sentence does not cite, with their anchors."""
    everything: tuple[Facts, ...]
    """Every entry of the request."""

    def value_source(self, value: Value) -> tuple[Source, str | None]:
        """Where ``value`` is found (and, for another entry, its anchor)."""
        if any(f.values.supports(value) for f in self.cited) or self.question.values.supports(
            value
        ):
            return Source.CITED, None
        for anchor, other in self.others:
            if other.values.supports(value):
                return Source.OTHER_ENTRY, anchor
        if any(f.instruction_values.supports(value) for f in self.everything):
            return Source.INSTRUCTION, None
        return Source.NOWHERE, None

    def word_source(self, forms: Iterable[str]) -> tuple[Source, str | None]:
        """Where a word is found, as any of its caseless ``forms`` (word or stem)."""
        wanted = set(forms)
        if any(wanted & f.words for f in self.cited) or wanted & self.question.words:
            return Source.CITED, None
        for anchor, other in self.others:
            if wanted & other.words:
                return Source.OTHER_ENTRY, anchor
        if any(wanted & f.instruction_words for f in self.everything):
            return Source.INSTRUCTION, None
        return Source.NOWHERE, None

    def cited_values(self) -> ValueIndex:
        """The values of the cited entries and the question, together."""
        merged = ValueIndex()
        for part in (*self.cited, self.question):
            merged.update(part.values)
        return merged


def _facts_of(entries: Iterable[SelectedEvidence], ctx: Context) -> tuple[Facts, ...]:
    return tuple(part for e in entries for part in _entry(e, ctx))


def _entry(entry: SelectedEvidence, ctx: Context) -> tuple[Facts, Facts]:
    """An entry's text, and what its header shows the model.

    Its source reference and knowledge id (``Service Bulletin SB-2025-017``) are citable
    names too.
    """
    label = f"{entry.source_reference or ''} {entry.knowledge_id}"
    return facts(entry.sanitized_text, ctx.ruleset), question_facts(label, ctx.ruleset)


def support_view(
    sentence: Sentence, answer_cited: tuple[SelectedEvidence, ...], ctx: Context
) -> SupportView:
    """The evidence ``sentence`` may draw on, by source.

    An uncited heading or label is read against ``answer_cited``, what the whole answer
    cites.
    """
    entries = sentence.cited or answer_cited
    cited = {e.anchor for e in entries}
    return SupportView(
        cited=_facts_of(entries, ctx),
        question=question_facts(ctx.question, ctx.ruleset),
        others=tuple(
            (anchor, part)
            for anchor, entry in ctx.entries.items()
            if anchor not in cited
            for part in _entry(entry, ctx)
        ),
        everything=_facts_of(ctx.entries.values(), ctx),
    )


def locate_values(
    sentence: Sentence, view: SupportView, ruleset: Ruleset
) -> tuple[Located[Value], ...]:
    """Each value of ``sentence`` with where ``view`` finds it."""
    return tuple(
        Located(value, *view.value_source(value))
        for value in values_in(sentence.text, vocabulary(ruleset))
    )


def _connectors(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("entities", "connectors"))


@memoized(4096, max_key_chars=_MAX_KEY_CHARS)
def _spelled_out(acronym: str, text: str, connectors: frozenset[str]) -> bool:
    return initials_match(acronym, text, connectors)


def locate_names(
    sentence: Sentence, view: SupportView, ruleset: Ruleset
) -> tuple[Located[Name], ...]:
    """Each name of ``sentence`` with where ``view`` finds it.

    Headings and table header rows are labels: their capitalised words name nothing. An
    acronym is found where a text spells out its initials; a name where a text writes it
    otherwise (an abbreviation, a word of its root); an expansion written beside its
    acronym only where a text writes the expansion.
    """
    found: list[Located[Name]] = []
    if sentence.kind is not LineKind.TEXT:
        return ()
    connectors = ruleset.compiled("entities.connectors", _connectors)
    texts = [f.statements for f in view.cited] + [view.question.statements]
    for name in names_in(sentence.text, ruleset):
        source, anchor = view.word_source(name.forms)
        abbreviated = len(name.written) <= 4 and f"{name.written}." in sentence.text
        if source is not Source.CITED and name.kind == "acronym":
            if any(_spelled_out(name.written, t, connectors) for t in texts):
                source, anchor = Source.CITED, None
        elif source is not Source.CITED and any(
            written_otherwise(name.written, t, abbreviated=abbreviated) for t in texts
        ):
            source, anchor = Source.CITED, None
        found.append(Located(name, source, anchor))
    for acronym, expansion in expansion_of(sentence.text):
        wanted = " ".join(words(expansion))
        if not any(wanted in " ".join(words(t)) for t in texts):
            name = Name(f"{expansion} ({acronym})", "expansion", frozenset())
            found.append(Located(name, Source.NOWHERE, None))
    return tuple(found)
