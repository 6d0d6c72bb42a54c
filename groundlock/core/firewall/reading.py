"""The answer as every rule reads it: parsed once, each sentence's support looked up once.

A :class:`Reading` is built once per answer by :func:`groundlock.core.firewall.validate_answer`
and handed to every rule. It carries the parsed answer, what the whole answer cites, how
it refuses, and for each sentence a :class:`SentenceReading`: the sentence with the evidence
it may draw on (:class:`~groundlock.core.firewall.support.SupportView`), its values and
names with where each was found, its content stems and its support coverage.

Rules only read it. What several rules need about a sentence (``unsupported_value``,
``misattributed_citation``, ``obeyed_instruction`` and ``contradicts_evidence`` all ask
where a value was found) is a typed, lazily computed property here, computed on first use
and shared, instead of one rule importing another or a memo keyed by strings. Lazy, because
the form-only ruleset (``firewall_v1``) never asks for values or names and must not pay
for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from groundlock.contracts.assembly import SelectedEvidence
from groundlock.core.firewall.entities import Name
from groundlock.core.firewall.facts import Facts, stems, stopwords
from groundlock.core.firewall.parsed import LineKind, ParsedAnswer, Sentence
from groundlock.core.firewall.refusal import Refusal, refusal_of
from groundlock.core.firewall.rule import Context
from groundlock.core.firewall.support import (
    Located,
    SupportView,
    locate_names,
    locate_values,
    support_view,
)
from groundlock.core.firewall.values import Value

__all__ = ["Reading", "SentenceReading"]


@dataclass(frozen=True, eq=False)
class SentenceReading:
    """One sentence of the answer and what the substantive rules know about it."""

    sentence: Sentence
    answer_cited: tuple[SelectedEvidence, ...]
    """What the whole answer cites: an uncited heading or label is read against it."""
    ctx: Context

    @property
    def number(self) -> int:
        """1-based position among the answer's sentences."""
        return self.sentence.number

    @property
    def raw(self) -> str:
        """The sentence as written, markers included."""
        return self.sentence.raw

    @property
    def text(self) -> str:
        """The sentence with its markers blanked out."""
        return self.sentence.text

    @property
    def folded(self) -> str:
        """``text`` folded as ``re.I`` sees it."""
        return self.sentence.folded

    @property
    def anchors(self) -> tuple[str, ...]:
        """Its well-formed anchors, valid or not, in order."""
        return self.sentence.anchors

    @property
    def cited(self) -> tuple[SelectedEvidence, ...]:
        """The entries its valid anchors name, in order."""
        return self.sentence.cited

    @property
    def kind(self) -> LineKind:
        """What its line is (only TEXT states something)."""
        return self.sentence.kind

    @property
    def judged(self) -> bool:
        """Whether the substantive rules judge it.

        A cited one, or an uncited label, heading or table header (read against what the
        whole answer cites).
        """
        return bool(self.sentence.cited) or self.sentence.kind is not LineKind.TEXT

    @cached_property
    def view(self) -> SupportView:
        """The evidence it may draw on, by source."""
        return support_view(self.sentence, self.answer_cited, self.ctx)

    @cached_property
    def values(self) -> tuple[Located[Value], ...]:
        """Each value it states with where it was found."""
        return locate_values(self.sentence, self.view, self.ctx.ruleset)

    @cached_property
    def names(self) -> tuple[Located[Name], ...]:
        """Each name it states with where it was found (a heading's capitals name nothing)."""
        return locate_names(self.sentence, self.view, self.ctx.ruleset)

    @cached_property
    def stems(self) -> frozenset[str]:
        """Its content words as light stems."""
        return stems(self.sentence.text, stopwords(self.ctx.ruleset))

    def coverage_in(self, against: Facts) -> float:
        """The share of its content stems that ``against`` holds (1.0 with none)."""
        said = self.stems
        return len(said & against.words) / len(said) if said else 1.0

    @cached_property
    def coverage(self) -> float:
        """The share of its content stems in its cited entries and the question.

        1.0 for a sentence with no content word, 0.0 for an uncited one.
        """
        said = self.stems
        if not said:
            return 1.0
        if not self.sentence.cited:
            return 0.0
        view = self.view
        known = set(view.question.words).union(*(f.words for f in view.cited))
        return len(said & known) / len(said)


@dataclass(frozen=True, eq=False)
class Reading:
    """One answer as the rules read it."""

    answer: ParsedAnswer
    ctx: Context

    @property
    def text(self) -> str:
        """The answer exactly as the model wrote it."""
        return self.answer.text

    @cached_property
    def cited(self) -> tuple[SelectedEvidence, ...]:
        """Every entry the answer cites anywhere, in first-cited order."""
        found = {e.anchor: e for s in self.answer.sentences for e in s.cited}
        return tuple(found.values())

    @cached_property
    def sentences(self) -> tuple[SentenceReading, ...]:
        """Its sentences, each with what the rules know about it."""
        cited = self.cited
        return tuple(SentenceReading(s, cited, self.ctx) for s in self.answer.sentences)

    @cached_property
    def refusal(self) -> Refusal:
        """How the answer refuses, if it does (several rules and the verdict gate on it)."""
        return refusal_of(self.answer, self.ctx)

    def judged_sentences(self) -> Iterator[SentenceReading]:
        """The sentences the substantive rules judge (see :attr:`SentenceReading.judged`)."""
        return (s for s in self.sentences if s.judged)
