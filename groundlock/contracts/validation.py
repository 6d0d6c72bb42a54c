"""The R5 output contract: the validator's verdict and its grounding metrics.

The verdict is accept-or-reject: ``validated_answer_text`` is the model's text unchanged, or
empty. The invariants below make a half-verdict unbuildable: a PASSED result has no failure
reason and cites only anchors of its own bundle; a FAILED one carries a reason and no text.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt

from groundlock.contracts._base import Contract
from groundlock.contracts.enums import GenerationStatus, ValidationStatus
from groundlock.contracts.reasons import ReasonCode

__all__ = ["FirewallFinding", "GroundingMetrics", "JudgeRecord", "JudgeVerdict", "ValidationResult"]


class GroundingMetrics(Contract):
    """How well the answer is grounded; computed in full even when an early check fails.

    Counts are of occurrences, not distinct values. For an exact refusal, or when no model
    answer was validated (an upstream failure), every count is zero.
    """

    sentence_count: NonNegativeInt
    """Sentences with letters or digits (see :mod:`groundlock.text.sentences`)."""
    citation_count: NonNegativeInt
    """Anchors in the answer that name an evidence entry of this request."""
    uncited_sentence_count: NonNegativeInt
    """Sentences with letters or digits and no valid anchor."""
    invalid_anchor_count: NonNegativeInt
    """Well-formed anchors naming no entry of this request (``[C99]``)."""
    malformed_anchor_count: NonNegativeInt
    """Anchor-like tokens that are not exactly ``[C<n>]``."""
    refusal_detected: bool
    """The refusal string, or an evident variant of it, is in the answer."""
    length_ratio_flag: bool
    """The answer is more than 10x as long as the evidence (a flag, never a failure)."""
    suspicious_new_ids: tuple[str, ...]
    """Numbers, codes and acronyms of a sentence found in none of the entries it cites, in
    order of first use (a flag for review, never a failure)."""
    support_coverage: tuple[Annotated[float, Field(ge=0.0, le=1.0)], ...] = ()
    """Per sentence, in order: the share of its content words found in the entries it cites
    (0.0 for an uncited sentence). A metric on every answer; below the policy's
    ``min_support_coverage`` it is a finding of rule ``support_coverage``."""

    @classmethod
    def zero(cls) -> GroundingMetrics:
        """Metrics of an answer that was never validated or is an exact refusal."""
        return cls(
            sentence_count=0,
            citation_count=0,
            uncited_sentence_count=0,
            invalid_anchor_count=0,
            malformed_anchor_count=0,
            refusal_detected=False,
            length_ratio_flag=False,
            suspicious_new_ids=(),
            support_coverage=(),
        )


class FirewallFinding(Contract):
    """One objection of one firewall rule, enforced or only flagged.

    Every finding of every rule is recorded, so that a flagged rule (``flag`` mode) still
    leaves its trace in the audit trail, and an auditor sees every reason an answer was
    withheld, not only the first.
    """

    rule: str
    """The rule's name in the ruleset (``unsupported_value``)."""
    reason: ReasonCode
    mode: Literal["enforce", "flag"]
    """``enforce``: this finding fails the answer; ``flag``: recorded only."""
    sentence: NonNegativeInt | None
    """The 1-based sentence it is about, or None for the whole answer."""
    message: str
    """Which sentence, which kind of thing; never the answer's text at length."""


class JudgeVerdict(Contract):
    """The support judge's verdict on one sentence."""

    sentence: NonNegativeInt
    """The 1-based sentence judged."""
    supported: bool
    """Whether the judge found the sentence supported by the entries it cites (its verdict,
    and its score at least the policy's ``min_score``)."""
    score: Annotated[float, Field(ge=0.0, le=1.0)]
    """The judge's own score that the sentence is supported."""


class JudgeRecord(Contract):
    """What the policy's support judge was and said: who judged, with which prompt, what."""

    judge: str
    """The judge's identity: the pinned model's name, or the runnable's name."""
    prompt_version: str | None
    """The frozen judge prompt a chat-model judge was given (None for another runnable)."""
    prompt_sha256: str | None
    verdicts: tuple[JudgeVerdict, ...]
    error: str | None
    """Why the judge gave no verdicts (an error or the deadline), by kind, never its text."""


class ValidationResult(Contract):
    """R5's section of the run state (the frozen schema of ``000`` R5): the verdict."""

    request_id: str | None
    generation_status: GenerationStatus
    """OK for a cited answer, NO_EVIDENCE for the exact refusal, FAILED otherwise."""
    validation_status: ValidationStatus
    failure_reason: ReasonCode | None
    """The first check that failed, or the upstream stage's reason; None when PASSED."""
    message: str | None
    """Internal detail for the audit trail (which sentence, which rule); never quotes the
    answer, and never leaves the chain except for reasons that blame the caller's input."""
    validated_answer_text: str
    """The model's text exactly as received when PASSED; empty when FAILED."""
    validated_citations: tuple[str, ...]
    """Distinct anchors in order of first use; empty unless the answer is OK."""
    grounding_metrics: GroundingMetrics
    firewall_ruleset: str | None = None
    """The ruleset that judged the answer (None when no answer was judged: an upstream
    failure passed through)."""
    firewall_ruleset_sha256: str | None = None
    """Its content hash: ruleset name and hash say exactly which rules decided."""
    findings: tuple[FirewallFinding, ...] = ()
    """Every finding of every rule, enforced or flagged, in rule-table order; the first
    enforced one is ``failure_reason``."""
    judge: JudgeRecord | None = None
    """The support judge's record, when the policy names one and it ran (on answers that
    passed every deterministic rule)."""
    cited_ids: tuple[str, ...] = ()
    """``validated_citations`` as the policy's citation grammar writes them (``IPC_420_0``,
    ``CIT-01``, ``Source: manual.pdf, p.14``, ``C0``): distinct, in order of first use; empty
    unless the answer is OK. Two chunks of one page share one ``Source:`` id."""
    invalid_citations: tuple[str, ...] = ()
    """Well-formed markers naming no evidence entry of this request, as written in the
    answer without their brackets (``IPC_421_0``, ``CIT-07``, ``C9``): distinct, in order of
    first use. Set on a FAILED verdict too: it is what was wrong."""
    malformed_citations: tuple[str, ...] = ()
    """Marker-like tokens that are not one well-formed marker, exactly as written, brackets
    and all (``[IPC_420_0, MWA_2_1]``, ``(C1)``): distinct. Kept apart from
    ``invalid_citations``: a malformed token names no id to look up."""
    retrieved_ids: tuple[str, ...] = ()
    """The ids the answer could cite: the evidence entries the prompt held, in the policy's
    citation form and evidence order, distinct. Empty when no answer was judged (an upstream
    failure) or the request had no evidence."""

    def _check(self) -> None:
        if self.validation_status is ValidationStatus.FAILED:
            if self.failure_reason is None or self.generation_status is not GenerationStatus.FAILED:
                raise ValueError("a FAILED validation has a failure_reason and FAILED status")
            if self.validated_answer_text or self.validated_citations or self.cited_ids:
                raise ValueError("a FAILED validation passes no text and no citations on")
            return
        if self.failure_reason is not None:
            raise ValueError("a PASSED validation has no failure_reason")
        if self.generation_status is GenerationStatus.FAILED:
            raise ValueError("a PASSED validation is OK or NO_EVIDENCE")
        if self.generation_status is GenerationStatus.NO_EVIDENCE:
            if self.validated_citations or self.cited_ids:
                raise ValueError("a refusal cites nothing")
            return
        citations = self.validated_citations
        if not citations or len(set(citations)) != len(citations):
            raise ValueError("an OK answer cites distinct anchors")
        if len(self.cited_ids) > len(citations):
            # (Not required: a verdict of an earlier groundlock has none; R5's own verdict
            # always does, and a verdict arriving as data must equal R5's.)
            raise ValueError("an OK answer has no more cited ids than cited anchors")
