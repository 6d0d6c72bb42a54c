"""The form rules of the contract: what every answer must be before its content is judged.

Truncation, emptiness, the exact refusal, malformed and invented anchors, uncited sentences
and citation lists (``000`` R5, ``001`` P4). These always enforce: no policy can flag them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from groundlock.contracts.enums import FinishReason
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.parsed import LineKind
from groundlock.core.firewall.refusal import RefusalForm
from groundlock.core.firewall.rule import Context, Finding

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import Reading

__all__ = [
    "CitationList",
    "EmptyAnswer",
    "MalformedCitation",
    "OutputTruncated",
    "RefusalFormat",
    "UncitedSentence",
    "UnknownAnchor",
    "WordLimit",
]

_WORD_RE = re.compile(r"[^\W_]+(?:['\u2019.,\-][^\W_]+)*")
"""A word: letters or digits, joined across an apostrophe, a hyphen, or the point or comma
inside a number (``don't``, ``29-11-00``, ``3.5``, ``1,200`` are one word each)."""


class OutputTruncated:
    """The model stopped at the output cap: first, as it breaks every later check too."""

    name: ClassVar[str] = "output_truncated"
    reason: ClassVar[ReasonCode] = ReasonCode.OUTPUT_TRUNCATED
    judges_exact_refusal: ClassVar[bool] = True

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """A finding when the model's finish reason is ``length``."""
        if ctx.execution.finish_reason is FinishReason.LENGTH:
            pinned = ctx.execution.pinned
            cap = pinned.max_output_tokens if pinned is not None else None
            yield Finding(self.name, self.reason, f"answer: cut at the output cap ({cap} tokens)")


class EmptyAnswer:
    """Not one sentence with a letter or digit outside its markers."""

    name: ClassVar[str] = "empty_answer"
    reason: ClassVar[ReasonCode] = ReasonCode.EMPTY_ANSWER
    judges_exact_refusal: ClassVar[bool] = True

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """Only markers, punctuation, a citation list or list markers (``1.``) is empty."""
        if not reading.sentences:
            yield Finding(self.name, self.reason, "answer: no sentence with a letter or digit")


class RefusalFormat:
    """A refusal that is not exactly the policy's refusal string."""

    name: ClassVar[str] = "refusal_form"
    reason: ClassVar[ReasonCode] = ReasonCode.INVALID_REFUSAL_FORMAT
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """See :mod:`groundlock.core.firewall.refusal` for the forms recognised."""
        refusal = reading.refusal
        if refusal.form is RefusalForm.VARIANT:
            message = f"answer: a refusal that is not exact ({refusal.found})"
            # From firewall_v3 (located_refusals) a refusal in other words names its sentence.
            where = refusal.sentence if ctx.ruleset.has("located_refusals") else None
            yield Finding(self.name, self.reason, message, where)


class MalformedCitation:
    """Marker-like tokens that are not exactly the grammar's marker."""

    name: ClassVar[str] = "malformed_citation"
    reason: ClassVar[ReasonCode] = ReasonCode.MALFORMED_CITATION
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """One finding counting them all."""
        if reading.answer.scan.malformed:
            yield Finding(
                self.name,
                self.reason,
                f"answer: {reading.answer.scan.malformed} anchor-like token(s) not of the form "
                f"{ctx.ruleset.grammar.shape}",
            )


class UnknownAnchor:
    """Well-formed anchors that name no entry of this request (``[C99]``)."""

    name: ClassVar[str] = "unknown_anchor"
    reason: ClassVar[ReasonCode] = ReasonCode.INVALID_CITATION_REFERENCE
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """One finding naming up to five of them and the anchors the request has."""
        unknown = sorted({a for a in reading.answer.scan.anchors if a not in ctx.entries})
        if unknown:
            count = len(ctx.entries)
            grammar = ctx.ruleset.grammar
            if not count:
                have = "no evidence entries"
            elif grammar.name == "bracket_c":
                have = f"C0..C{count - 1}"
            else:  # a preset's markers, as the answer should have written them
                markers = list(dict.fromkeys(grammar.marker(e) for e in ctx.entries.values()))
                more = f" and {len(markers) - 5} more" if len(markers) > 5 else ""
                have = ", ".join(markers[:5]) + more
            yield Finding(
                self.name,
                self.reason,
                f"answer: cites {', '.join(unknown[:5])}; this request has {have}",
            )


class UncitedSentence:
    """A sentence with letters or digits and no valid anchor (``001`` P4.1)."""

    name: ClassVar[str] = "uncited_sentence"
    reason: ClassVar[ReasonCode] = ReasonCode.UNCITED_FACTUAL_STATEMENT
    judges_exact_refusal: ClassVar[bool] = False
    states_headings: ClassVar[bool] = True
    """Whether headings and table header rows need an anchor too (``firewall_v1``: yes)."""

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """One finding per uncited sentence."""
        total = len(reading.sentences)
        for sentence in reading.sentences:
            if sentence.cited:
                continue
            if not self.states_headings and sentence.kind is not LineKind.TEXT:
                continue
            message = f"answer: sentence {sentence.number} of {total} has no anchor"
            yield Finding(self.name, self.reason, message, sentence.number)


class UncitedStatement(UncitedSentence):
    """``uncited_sentence`` that leaves headings and table header rows alone.

    A heading (``## Replacement interval``, a line that is only bold text) or the column
    names above a table's separator row states nothing that needs a citation. They still pass every
    other rule (links, leaks, meta commentary, values).
    """

    name: ClassVar[str] = "uncited_statement"
    states_headings: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """As ``uncited_sentence``; and an answer that cites nothing at all (``Yes!``).

        A bare ``Yes.`` or a heading needs no anchor beside cited statements; alone, it
        answers with no evidence, and an OK answer cites at least one entry.
        """
        found = list(super().check(reading, ctx))
        yield from found
        if not found and reading.sentences and not any(s.cited for s in reading.sentences):
            yield Finding(self.name, self.reason, "answer: cites no evidence at all", 1)


class CitationList:
    """A citation list that disagrees with the answer's anchors, or stray anchors.

    A list the model appended (``Sources: [C0][C1]``) must name exactly the anchors its
    sentences use; an anchor standing alone belongs to no sentence.
    """

    name: ClassVar[str] = "citation_list"
    reason: ClassVar[ReasonCode] = ReasonCode.CITATION_MISMATCH
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """Up to three findings: stray anchors, a different list, a repeating list."""
        if len(reading.answer.used_anchors) != len(reading.answer.body_anchors):
            yield Finding(self.name, self.reason, "answer: anchors that belong to no sentence")
        listed = reading.answer.listed
        if listed is not None and set(listed) != set(reading.answer.used_anchors):
            message = "answer: its citation list differs from its anchors"
            yield Finding(self.name, self.reason, message)
        if listed is not None and len(set(listed)) != len(listed):
            yield Finding(self.name, self.reason, "answer: its citation list repeats an anchor")


class WordLimit:
    """More words than the query type allows (``004``: factual 150, summary 300).

    Words are counted in what the sentences say, markers blanked out, so a long file name in
    a ``[Source: ...]`` marker costs nothing; a citation-list line is not counted either.
    """

    name: ClassVar[str] = "word_limit"
    reason: ClassVar[ReasonCode] = ReasonCode.WORD_LIMIT_EXCEEDED
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """A finding naming the count and the limit, when the policy sets one."""
        try:
            budget = ctx.policy.budget_for(ctx.bundle.query_type)
        except KeyError:  # R2 refuses such a request; nothing to judge against
            return
        if budget is None:
            return
        words = sum(len(_WORD_RE.findall(sentence.text)) for sentence in reading.sentences)
        if words > budget.max_words:
            kind = ctx.bundle.query_type or "factual"
            message = f"answer: {words} words exceed the {kind} limit of {budget.max_words}"
            yield Finding(self.name, self.reason, message)
