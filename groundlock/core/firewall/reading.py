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
from dataclasses import dataclass, replace
from functools import cached_property

from groundlock.contracts.assembly import SelectedEvidence
from groundlock.core.firewall.entities import Name
from groundlock.core.firewall.facts import Facts, facts, stem, stems, stopwords
from groundlock.core.firewall.frames import without_frames
from groundlock.core.firewall.lexicon import words
from groundlock.core.firewall.lookalikes import fold_lookalikes
from groundlock.core.firewall.parsed import LineKind, ParsedAnswer, Sentence
from groundlock.core.firewall.refusal import Refusal, refusal_of
from groundlock.core.firewall.rule import Context
from groundlock.core.firewall.superseded import reports_history
from groundlock.core.firewall.support import (
    Located,
    RequestEvidence,
    Source,
    SupportView,
    locate_names,
    locate_values,
    request_evidence,
    support_view,
)
from groundlock.core.firewall.values import Value
from groundlock.text.fold import fold

__all__ = ["Reading", "SentenceReading"]


def _unit(value: Value) -> object:
    """A value's unit, or its kind where it has none (for setting values side by side)."""
    return next((k[2] for k in value.keys if k[0] == "n"), value.kind)


@dataclass(frozen=True, eq=False)
class SentenceReading:
    """One sentence of the answer and what the substantive rules know about it."""

    sentence: Sentence
    answer_cited: tuple[SelectedEvidence, ...]
    """What the whole answer cites: an uncited heading or label is read against it."""
    ctx: Context
    request: Reading
    """The answer's reading, which holds what every sentence shares (the request's
    evidence, looked up once)."""

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
    def unmasked(self) -> str:
        """``text`` with look-alike letters made ASCII (from ``firewall_v2``; else ``text``)."""
        return fold_lookalikes(self.sentence.text, self.ctx.ruleset)

    @cached_property
    def unmasked_folded(self) -> str:
        """``unmasked`` folded: how the leak and meta patterns read it, once for both rules."""
        if not self.ctx.ruleset.entries("lookalikes"):
            return self.sentence.folded
        return fold(self.unmasked)

    @cached_property
    def words(self) -> tuple[str, ...]:
        """Its caseless words, in order: read once, for every rule that counts words."""
        return tuple(words(self.sentence.text))

    @cached_property
    def content_words(self) -> frozenset[str]:
        """Its words that are not the ruleset's stop words."""
        stop = stopwords(self.ctx.ruleset)
        return frozenset(w for w in self.words if w not in stop)

    @cached_property
    def view(self) -> SupportView:
        """The evidence it may draw on, by source."""
        return support_view(self.sentence, self.answer_cited, self.request.evidence)

    @cached_property
    def values(self) -> tuple[Located[Value], ...]:
        """Each value it states with where it was found."""
        return locate_values(self.sentence, self.view, self.ctx.ruleset)

    @cached_property
    def names(self) -> tuple[Located[Name], ...]:
        """Each name it states with where it was found (a heading's capitals name nothing)."""
        return locate_names(self.sentence, self.view, self.ctx.ruleset)

    @cached_property
    def superseded(self) -> tuple[tuple[Value, str], ...]:
        """Each value it states that an entry it cites marks as replaced, with that entry.

        Not where the sentence reports the change itself (``was reduced from 600 to 400
        hours``). A question that names the old value (``Is it still 45 Nm?``) does not
        make it current.
        """
        if not self.ctx.ruleset.has("superseded") or not self.sentence.cited:
            return ()
        # Amounts, dates and times: a replaced product or document ("the Q7 replaces the Q5")
        # is no wrong value, and a sentence may well name it.
        stated = [
            v.item for v in self.values if v.source is Source.CITED and v.item.kind != "identifier"
        ]
        if not stated:
            return ()
        text = self.sentence.text
        stale = [
            (entry.anchor, facts(entry.sanitized_text, self.ctx.ruleset).superseded)
            for entry in self.sentence.cited
        ]
        found = []
        for value in stated:
            anchor = next((a for a, old in stale if old.supports(value)), None)
            if anchor is None:
                continue
            if reports_history(text, text.find(value.surface), self.ctx.ruleset):
                continue
            # The sentence sets a current value beside the old one ("38 Nm; Rev. A listed 45").
            if any(
                other is not value and _unit(other) == _unit(value) and not old.supports(other)
                for other in stated
                for a, old in stale
                if a == anchor
            ):
                continue
            found.append((value, anchor))
        return tuple(found)

    @cached_property
    def stems(self) -> frozenset[str]:
        """Its content words as light stems."""
        return stems(self.sentence.text, stopwords(self.ctx.ruleset))

    def coverage_in(self, against: Facts) -> float:
        """The share of its content stems that ``against`` holds (1.0 with none)."""
        said = self.stems
        return len(said & against.words) / len(said) if said else 1.0

    @cached_property
    def loose_support(self) -> tuple[float, int, int]:
        """Under ``loose_words``: how much of it its cited entries hold, matched loosely.

        ``(share, added, missing)``: the share of its content words in its cited entries or
        the question (as a word, a stem or the first five letters of a long word), how many
        of its content words the question does not hold, and how many of those no cited
        entry holds either.
        """
        view = self.view
        question = view.question
        q_prefixes = self.request.evidence.question_prefixes
        known = set(question.words).union(*(f.words for f in view.cited))
        prefixes = set(q_prefixes).union(*(f.prefixes for f in view.cited))
        stop = stopwords(self.ctx.ruleset)
        said = [w for w in dict.fromkeys(self.words) if w not in stop]
        if not said:
            return 1.0, 0, 0

        # A word is held by a set of words as itself, its stem, or (a long word) its first
        # five letters among the set's prefixes; written out, not a helper: 90 calls a
        # sentence made the call most of the cost.
        found = sum(
            1 for w in said if w in known or stem(w) in known or (len(w) >= 6 and w[:5] in prefixes)
        )
        asked = question.words
        added = [
            w
            for w in said
            if not (w in asked or stem(w) in asked or (len(w) >= 6 and w[:5] in q_prefixes))
        ]
        missing = sum(
            1
            for w in added
            if not (w in known or stem(w) in known or (len(w) >= 6 and w[:5] in prefixes))
        )
        return found / len(said), len(added), missing

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


def _claim(sentence: Sentence, ctx: Context) -> Sentence:
    claim = without_frames(sentence.text, ctx.ruleset)
    return sentence if claim == sentence.text else replace(sentence, text=claim)


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
        """Its sentences, each with what the rules know about it.

        Under the ``frames`` feature a sentence's ``text`` is its claim: its attribution
        frames blanked (:mod:`~groundlock.core.firewall.frames`); ``raw`` stays as written.
        """
        cited = self.cited
        sentences = self.answer.sentences
        if self.ctx.ruleset.has("frames"):
            sentences = tuple(_claim(s, self.ctx) for s in sentences)
        return tuple(SentenceReading(s, cited, self.ctx, self) for s in sentences)

    @cached_property
    def evidence(self) -> RequestEvidence:
        """The facts of the request's entries and question, looked up once an answer.

        Lazy: the form-only ruleset never asks for a sentence's view and must not pay.
        """
        return request_evidence(self.ctx)

    @cached_property
    def refusal(self) -> Refusal:
        """How the answer refuses, if it does (several rules and the verdict gate on it)."""
        return refusal_of(self.answer, self.ctx)

    def judged_sentences(self) -> Iterator[SentenceReading]:
        """The sentences the substantive rules judge (see :attr:`SentenceReading.judged`)."""
        return (s for s in self.sentences if s.judged)
