"""The R4 output contract: the model's raw text and everything needed to audit the call."""

from __future__ import annotations

from typing import Literal

from pydantic import NonNegativeFloat, NonNegativeInt

from groundlock.contracts._base import Contract
from groundlock.contracts.enums import FinishReason, GenerationStatus
from groundlock.contracts.reasons import ReasonCode

__all__ = ["NO_MODEL", "NO_MODEL_NAME", "AttemptRecord", "LLMExecutionResult", "PinnedModel"]


class PinnedModel(Contract):
    """What R4 fixed on the model before any call, recorded with every result.

    A value is None where the integration has no such setting (a deterministic local model
    has no temperature or SDK retries to pin).
    """

    provider: str
    """Integration class, e.g. ``ChatOpenAI`` or ``ExtractiveChatModel``."""
    model_name: str
    """The model identity sent to the provider; responses must report the same model."""
    temperature: float | None
    max_output_tokens: int | None
    sdk_max_retries: int | None
    """0 wherever the integration retries on its own: groundlock is the only retry layer."""
    api: Literal["responses", "chat_completions"] | None
    """For OpenAI-family models, which API is used (pinned, never auto-selected)."""
    store: bool | None
    """For the Responses API: whether the provider may retain the prompt (default False)."""
    timeout_seconds: float | None


NO_MODEL_NAME = "none"
"""``model_used`` of a response no model was built for (004's ``"none"``)."""

NO_MODEL = PinnedModel(
    provider=NO_MODEL_NAME,
    model_name=NO_MODEL_NAME,
    temperature=None,
    max_output_tokens=None,
    sdk_max_retries=None,
    api=None,
    store=None,
    timeout_seconds=None,
)
"""The pin record of R4 when no model could be built (``on_model_unavailable: refuse``):
nothing was pinned, because nothing was built."""


class AttemptRecord(Contract):
    """One call to the provider, successful or not."""

    number: int
    """1 for the first attempt."""
    started_ms: NonNegativeFloat
    """Milliseconds after the first attempt started."""
    duration_ms: NonNegativeFloat
    outcome: Literal["ok", "transient_error", "error"]
    error_type: str | None
    """Exception class name; never the exception text, which may quote the prompt."""
    status_code: int | None
    reason_code: ReasonCode | None
    """What this attempt's failure would mean if it were the last."""
    retry_after_seconds: NonNegativeFloat | None
    """The wait the provider asked for, if it asked."""
    wait_seconds: NonNegativeFloat | None
    """The wait groundlock took before the next attempt (None after the last)."""


class LLMExecutionResult(Contract):
    """R4's section of the run state (``001`` R3 telemetry): the model's text and the call."""

    generation_status: GenerationStatus
    reason_code: ReasonCode | None
    message: str | None
    raw_model_text: str
    """The model's text exactly as received; the refusal text for NO_EVIDENCE; else empty."""
    reported_model_name: str | None
    """The model the provider said answered (a dated snapshot of the pinned alias is fine)."""
    finish_reason: FinishReason
    attempts: tuple[AttemptRecord, ...]
    llm_latency_ms: NonNegativeFloat
    """From the first attempt's start to the end of the last, waits included."""
    prompt_tokens_actual: NonNegativeInt | None
    completion_tokens_actual: NonNegativeInt | None
    total_tokens_actual: NonNegativeInt | None
    response_id: str | None
    """The provider's id for the response (``resp_…`` / ``chatcmpl-…``), for audit."""
    pinned: PinnedModel | None
    """The model R4 pinned; None only where no R4 ran for the request (a later stage was
    invoked on its own with input that was no run state)."""

    @classmethod
    def uncalled(
        cls,
        status: GenerationStatus,
        *,
        text: str = "",
        reason: ReasonCode | None = None,
        message: str | None = None,
        pinned: PinnedModel | None = None,
    ) -> LLMExecutionResult:
        """An execution that called no model: no attempt, no usage, no reply metadata.

        For a request R4 passes over (FAILED), its refusal for want of evidence, and an
        answer written elsewhere that takes a reply's place.
        """
        return cls(
            generation_status=status,
            reason_code=reason,
            message=message,
            raw_model_text=text,
            reported_model_name=None,
            finish_reason=FinishReason.UNKNOWN,
            attempts=(),
            llm_latency_ms=0.0,
            prompt_tokens_actual=None,
            completion_tokens_actual=None,
            total_tokens_actual=None,
            response_id=None,
            pinned=pinned,
        )

    @property
    def model_name(self) -> str | None:
        """The pinned model identity (``001`` R3 telemetry)."""
        return self.pinned.model_name if self.pinned is not None else None

    @property
    def attempt_count(self) -> int:
        """How many times the provider was called."""
        return len(self.attempts)

    def _check(self) -> None:
        if self.generation_status is GenerationStatus.FAILED and self.reason_code is None:
            raise ValueError("a FAILED execution needs a reason_code")
        if self.generation_status is not GenerationStatus.FAILED and self.reason_code:
            raise ValueError("only a FAILED execution has a reason_code")
        if [a.number for a in self.attempts] != list(range(1, len(self.attempts) + 1)):
            raise ValueError("attempts are numbered 1, 2, ... in order")
