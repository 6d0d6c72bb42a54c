"""The R6 public contract: the only object that leaves a groundlock chain.

It holds the validated answer, public citation metadata, token usage and latency, and a
reason code when the request failed. By construction it cannot hold chunk text, similarity
scores, the prompt, raw model text, provider ids or stage metrics: there is no field for
them, and unknown fields are refused (a snapshot test pins the JSON schema).
"""

from __future__ import annotations

from pydantic import NonNegativeFloat, NonNegativeInt

from groundlock.contracts._base import Contract
from groundlock.contracts.enums import Confidence, GenerationStatus
from groundlock.contracts.reasons import ReasonCode

__all__ = ["PublicCitation", "PublicResponse", "TokenUsage"]


class PublicCitation(Contract):
    """What a reader may know about one cited evidence entry."""

    anchor: str
    """The marker as the answer writes it, without its brackets: ``C0`` (the default),
    ``IPC_420_0``, ``CIT-01`` or ``Source: manual.pdf, p.14`` under the presets."""
    knowledge_id: str
    source_reference: str | None
    event_date: str | None
    """ISO date (``YYYY-MM-DD``) or null."""
    equipment_id: str | None
    page: int | None
    """The page of the source, counted from 1, when the row gave one."""
    citation_label: str | None
    """How the source is named in a citation, when the row gave one."""
    document_id: str | None
    """The document the entry belongs to, when the row gave one."""


class TokenUsage(Contract):
    """Tokens the provider reported; 0 when no model was called, None when not reported."""

    prompt_tokens: NonNegativeInt | None
    completion_tokens: NonNegativeInt | None
    total_tokens: NonNegativeInt | None


class PublicResponse(Contract):
    """The response to one request (``000`` R6, plus ``failure_reason`` and its message)."""

    request_id: str | None
    """The caller's request_id; null only when the request was too malformed to carry one."""
    status: GenerationStatus
    answer: str
    """The validated answer, the exact refusal for NO_EVIDENCE, empty for FAILED."""
    citations: tuple[PublicCitation, ...]
    """In the order the answer first uses them; empty unless OK."""
    token_usage: TokenUsage
    latency_ms: NonNegativeFloat
    """Model latency, attempts and waits included (``000`` R6: from the LLM result)."""
    failure_reason: ReasonCode | None
    """Why the request FAILED, as a code; null unless FAILED."""
    failure_message: str | None
    """For a request that failed an input check only: which field is at fault and why."""
    confidence: Confidence | None
    """For an OK answer: how strongly retrieval matched the question (``high``, ``medium``,
    ``low``, from the top admitted score and the policy's thresholds). A retrieval signal,
    not a correctness claim. A NO_EVIDENCE refusal has ``low`` under a policy that says so
    (004's bands), else null; null when FAILED."""
    model_used: str | None
    """The pinned model that answered (its identity, as R4 pinned it); null when no model
    was called."""

    def _check(self) -> None:
        failed = self.status is GenerationStatus.FAILED
        if failed != (self.failure_reason is not None):
            raise ValueError("failure_reason is set exactly when the status is FAILED")
        if failed and self.answer:
            raise ValueError("a FAILED response has no answer")
        if self.citations and self.status is not GenerationStatus.OK:
            raise ValueError("only an OK response has citations")
        if self.failure_message is not None and not failed:
            raise ValueError("only a FAILED response has a failure_message")
        if self.confidence is not None and failed:
            raise ValueError("a FAILED response has no confidence")
        if self.status is GenerationStatus.NO_EVIDENCE and self.confidence not in (
            None,
            Confidence.LOW,
        ):
            raise ValueError("a NO_EVIDENCE response's confidence is low, if it has one")
