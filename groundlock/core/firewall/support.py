"""Where a sentence's values and names can be found.

In the entries it cites, the question, the other entries, or only in an instruction
injected into the evidence.

The substantive rules share this view of one sentence, so each lookup is made once:
``unsupported_value`` and ``unsupported_entity`` object to what is found nowhere,
``misattributed_citation`` to what is found only in an entry the sentence does not cite,
``instruction_followed`` to what is found only in an instruction to the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from groundlock.contracts.assembly import SelectedEvidence
from groundlock.core.firewall.facts import Facts, facts, question_facts
from groundlock.core.firewall.parsed import LineKind, Sentence
from groundlock.core.firewall.rule import Context
from groundlock.core.firewall.values import Value, ValueIndex

__all__ = ["Source", "SupportView", "judged", "support_view"]


class Source(StrEnum):
    """Where a value or a name was found first, in this order of preference."""

    CITED = "cited"
    QUESTION = "question"
    OTHER_ENTRY = "other_entry"
    INSTRUCTION = "instruction"
    NOWHERE = "nowhere"


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


def support_view(sentence: Sentence, ctx: Context) -> SupportView:
    """The support view of ``sentence`` under ``ctx`` (built once per sentence)."""
    key = ("support_view", sentence.number)
    view: SupportView | None = ctx.memo.get(key)
    if view is None:
        view = ctx.memo[key] = _view(sentence, ctx)
    return view


def judged(sentence: Sentence) -> bool:
    """Whether the substantive rules judge ``sentence``.

    A cited one, or an uncited label, heading or table header (which is read against what
    the whole answer cites).
    """
    return bool(sentence.cited) or sentence.kind is not LineKind.TEXT


def _view(sentence: Sentence, ctx: Context) -> SupportView:
    entries = sentence.cited or tuple(ctx.memo.get("answer_cited", ()))
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
