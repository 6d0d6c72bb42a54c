"""The sections of stages that did not run: how a state moves on past a request that ended.

Every stage adds its section to the run state, also when it does not run: R3 on a request
that already failed adds a prompt that was not built, R4 an execution that made no call,
R5 a FAILED verdict carrying the request's reason. A later reader (R6, the audit trail)
never meets a missing section, and the "did not run" forms are built here, once, from the
outcome at the top of the state.

They also let a stage answer input that is not a state at all (a stage invoked on its own
with bad data): the input becomes a FAILED :class:`~groundlock.contracts.state.Assembled`
state (keeping whatever request identity it carries), moved on to the stage's output type.

Pure: no LangChain, no I/O beyond the policy's cached template.
"""

from __future__ import annotations

from typing import TypeVar

from groundlock.contracts.enums import (
    BuildStatus,
    GenerationStatus,
    ValidationStatus,
)
from groundlock.contracts.execution import LLMExecutionResult, PinnedModel
from groundlock.contracts.prompt import PromptBuildResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Answered, Assembled, Judged, Outcome, Prompted
from groundlock.contracts.validation import GroundingMetrics, ValidationResult
from groundlock.core.evidence_assembly import failed_bundle
from groundlock.policies.model import Policy
from groundlock.prompts.template import PromptTemplate

__all__ = [
    "advanced",
    "failed_state",
    "failed_verdict",
    "refailed",
    "unanswered",
    "unbuilt",
    "unbuilt_prompt",
    "unjudged",
]

StateT = TypeVar("StateT", bound=Assembled)


def failed_state(payload: object, policy: Policy, reason: ReasonCode, message: str) -> Assembled:
    """A FAILED state for ``payload`` (anything), keeping whatever identity it carries."""
    return Assembled.of(failed_bundle(payload, policy, reason, message))


def unbuilt(state: Assembled, policy: Policy) -> Prompted:
    """``state`` with the prompt R3 did not build: NO_EVIDENCE or FAILED, with its reason."""
    outcome = state.outcome
    status = (
        BuildStatus.NO_EVIDENCE
        if outcome.status is GenerationStatus.NO_EVIDENCE
        else BuildStatus.FAILED
    )
    reason = outcome.reason or ReasonCode.INTERNAL_ERROR
    return state.prompted(unbuilt_prompt(status, reason, outcome.message, policy))


def unbuilt_prompt(
    status: BuildStatus,
    reason: ReasonCode,
    message: str | None,
    policy: Policy,
    *,
    template: PromptTemplate | None = None,
    pruned: int = 0,
) -> PromptBuildResult:
    """A prompt that was not built (NO_EVIDENCE or FAILED): no messages, no hash.

    It still names the template and the refusal of ``policy``: what a prompt would have
    been built from, and what a request without one answers.
    """
    template = template if template is not None else policy.template
    return PromptBuildResult(
        build_status=status,
        reason_code=reason,
        message=message,
        messages=(),
        prompt_sha256=None,
        template_version=template.version,
        template_sha256=template.sha256,
        refusal_text=policy.refusal_text,
        tokens=None,
        pruned_chunk_count=pruned,
    )


def unanswered(state: Prompted, pinned: PinnedModel | None) -> Answered:
    """``state`` with the execution R4 did not make: no call, no text, the request's reason.

    ``pinned`` is None only when no R4 was there to pin a model (a later stage invoked on
    its own with bad data).
    """
    outcome = state.outcome
    failed = outcome.status is GenerationStatus.FAILED
    execution = LLMExecutionResult.uncalled(
        outcome.status,
        reason=(outcome.reason or ReasonCode.INTERNAL_ERROR) if failed else None,
        message=outcome.message if failed else None,
        pinned=pinned,
    )
    return state.answered(execution)


def unjudged(state: Answered) -> Judged:
    """``state`` with a FAILED verdict that carries the request's reason (nothing to judge)."""
    outcome = state.outcome
    if outcome.status is not GenerationStatus.FAILED:
        outcome = Outcome.failed(ReasonCode.INTERNAL_ERROR, "validation: nothing was judged")
    verdict = failed_verdict(state.request_id, outcome.reason, outcome.message)
    return state.judged(verdict, outcome=outcome)


def refailed(state: Judged, reason: ReasonCode, message: str) -> Judged:
    """``state`` FAILED with ``reason`` after its verdict: no answer passes on.

    For a step after R5 (the audit record) that could not do its work.
    """
    return state.with_outcome(Outcome.failed(reason, message))


def failed_verdict(
    request_id: str | None, reason: ReasonCode | None, message: str | None
) -> ValidationResult:
    """A FAILED verdict with no answer judged (no ruleset, no findings, zero metrics)."""
    return ValidationResult(
        request_id=request_id,
        generation_status=GenerationStatus.FAILED,
        validation_status=ValidationStatus.FAILED,
        failure_reason=reason or ReasonCode.INTERNAL_ERROR,
        message=message,
        validated_answer_text="",
        validated_citations=(),
        grounding_metrics=GroundingMetrics.zero(),
    )


def advanced(state: Assembled, target: type[StateT], policy: Policy) -> StateT:
    """``state`` moved on to ``target`` through the did-not-run form of each stage between.

    Used to fail closed: a stage that cannot run (its input was no state, or a bug) still
    returns its own output type, with every section in place and the outcome FAILED.
    """
    current: Assembled = state
    if issubclass(target, Prompted) and not isinstance(current, Prompted):
        current = unbuilt(current, policy)
    if issubclass(target, Answered) and not isinstance(current, Answered):
        assert isinstance(current, Prompted)  # noqa: S101  (built just above)
        current = unanswered(current, None)
    if issubclass(target, Judged) and not isinstance(current, Judged):
        assert isinstance(current, Answered)  # noqa: S101
        current = unjudged(current)
    if not isinstance(current, target):
        raise TypeError(f"cannot move a {type(current).__name__} to {target.__name__}")
    return current
