"""One accumulating run state: the request's identity and outcome, and a section per stage.

The chain passes one state from stage to stage, each adding its section: R2's
:class:`~groundlock.AnswerBundle`, R3's :class:`~groundlock.PromptBuildResult`, R4's
:class:`~groundlock.LLMExecutionResult`, R5's :class:`~groundlock.ValidationResult`. The
sections keep the names and fields the specs give them, but no longer contain each other:
what every reader wants (the request and run ids, the policy, how the request stands) is at
the top, once, and a section is read as ``state.execution.attempts``, never as
``result.execution.prompt.bundle``.

A typestate subclass per stage keeps every stage typed: R3 takes an :class:`Assembled`
state and returns a :class:`Prompted` one, and so on up to :class:`Judged`. The
:class:`Outcome` at the top says status, reason and message once; a stage that does not
run on an outcome (R3 on a FAILED request) still adds its section, in the form that says it
did not run, so a later reader never meets a missing section.

The invariants that join sections (an OK prompt needs OK evidence, a prompt that was not
built never reached a model, an OK answer cites anchors of its own evidence) are checked
here, where both sections are in view, when a state is built.
"""

from __future__ import annotations

from typing import ClassVar, Self, TypeVar

from pydantic import Field

from groundlock.contracts._base import Contract
from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.enums import (
    AssemblyStatus,
    BuildStatus,
    GenerationStatus,
    ValidationStatus,
)
from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.prompt import PromptBuildResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.contracts.validation import ValidationResult

__all__ = ["Answered", "Assembled", "Judged", "Outcome", "Prompted", "RunState"]

StateT = TypeVar("StateT", bound="RunState")


class Outcome(Contract):
    """How the request stands: OK so far, a refusal (NO_EVIDENCE), or FAILED with a reason."""

    status: GenerationStatus
    reason: ReasonCode | None
    """Why it is not OK (FAILED always has one; a NO_EVIDENCE gate names its own)."""
    message: str | None
    """Internal detail for the audit trail; never shown for reasons that are not the
    caller's input."""

    @classmethod
    def ok(cls) -> Outcome:
        """A request nothing has gone wrong with (yet)."""
        return _OK

    @classmethod
    def failed(cls, reason: ReasonCode, message: str | None) -> Outcome:
        """A FAILED outcome."""
        return cls(status=GenerationStatus.FAILED, reason=reason, message=message)

    def _check(self) -> None:
        if self.status is GenerationStatus.FAILED and self.reason is None:
            raise ValueError("a FAILED outcome has a reason")
        if self.status is GenerationStatus.OK and (self.reason or self.message):
            raise ValueError("an OK outcome has no reason and no message")


_OK = Outcome(status=GenerationStatus.OK, reason=None, message=None)


class RunState(Contract):
    """The top of every state: who asked, under which policy, and how the request stands."""

    request_id: str | None
    """Null only for input too malformed to carry a usable request_id."""
    run_id: str | None
    """This execution of the request; with request_id, the audit key."""
    policy_version: str
    policy_sha256: str
    """The policy every stage of this request ran under (a stage refuses another's state)."""
    outcome: Outcome

    verdict_given: ClassVar[bool] = False
    """Whether R5 has decided the outcome. Before it, NO_EVIDENCE can only mean that R2
    found no evidence; after it, also that the model refused."""

    @property
    def status(self) -> GenerationStatus:
        """The outcome's status."""
        return self.outcome.status

    def carried_into(self, target: type[StateT], **changes: object) -> StateT:
        """A ``target`` state holding this one's fields, with ``changes`` added or replaced.

        Sections are carried by reference (they are frozen); the target's own checks run.
        """
        carried = {name: getattr(self, name) for name in target.model_fields if name not in changes}
        return target.model_validate({**carried, **changes})

    def _check(self) -> None:
        """Nothing to join at the top; each section adds its own."""


class Assembled(RunState):
    """After R2: the admitted evidence (or why there is none)."""

    bundle: AnswerBundle
    """The evidence as it stands: R3 may prune it to fit the prompt budget."""
    retrieval: RetrievalBundle | None = Field(default=None, exclude=True)
    """R2's input as it was read (None when R2 refused it): what the opt-in evidence
    archive keeps so that ``groundlock replay`` can run R2 again. Held by reference and
    left out of the state's serialisation: only an archive writes it, to its own table."""

    def _check(self) -> None:
        super()._check()
        bundle = self.bundle
        if bundle.request_id != self.request_id or bundle.trace.run_id != self.run_id:
            raise ValueError("the bundle answers another request")
        if bundle.trace.policy_sha256 != self.policy_sha256:
            raise ValueError("the bundle was assembled under another policy")
        retrieval = self.retrieval
        if retrieval is not None and (
            retrieval.request_id != self.request_id or retrieval.run_id != self.run_id
        ):
            raise ValueError("the retrieval bundle is another request's")
        if bundle.assembly_status is AssemblyStatus.FAILED and self.status is not _FAILED:
            raise ValueError("a FAILED bundle fails the request")
        if bundle.assembly_status is AssemblyStatus.NO_EVIDENCE and self.status is _OK_STATUS:
            raise ValueError("a request without evidence cannot be OK")
        if (
            self.status is _NO_EVIDENCE
            and not self.verdict_given
            and bundle.assembly_status is not AssemblyStatus.NO_EVIDENCE
        ):
            raise ValueError("before a verdict, NO_EVIDENCE means the evidence is NO_EVIDENCE")

    @classmethod
    def of(cls, bundle: AnswerBundle, retrieval: RetrievalBundle | None = None) -> Assembled:
        """The state R2 leaves: its outcome is the bundle's status."""
        status = {
            AssemblyStatus.OK: GenerationStatus.OK,
            AssemblyStatus.NO_EVIDENCE: GenerationStatus.NO_EVIDENCE,
            AssemblyStatus.FAILED: GenerationStatus.FAILED,
        }[bundle.assembly_status]
        outcome = (
            _OK
            if status is _OK_STATUS
            else Outcome(status=status, reason=bundle.reason_code, message=bundle.message)
        )
        return cls(
            request_id=bundle.request_id,
            run_id=bundle.trace.run_id,
            policy_version=bundle.trace.policy_version,
            policy_sha256=bundle.trace.policy_sha256,
            outcome=outcome,
            bundle=bundle,
            retrieval=retrieval,
        )

    def prompted(
        self,
        prompt: PromptBuildResult,
        *,
        bundle: AnswerBundle | None = None,
        outcome: Outcome | None = None,
    ) -> Prompted:
        """The state R3 leaves: this one with its prompt (and the evidence it holds)."""
        return self.carried_into(
            Prompted, outcome=outcome or self.outcome, bundle=bundle or self.bundle, prompt=prompt
        )

    def with_outcome(self, outcome: Outcome) -> Self:
        """This state with another outcome (a stage that failed closed on it)."""
        return self.model_copy(update={"outcome": outcome})


class Prompted(Assembled):
    """After R3: the exact prompt (or why there is none)."""

    prompt: PromptBuildResult

    def answered(
        self, execution: LLMExecutionResult, *, outcome: Outcome | None = None
    ) -> Answered:
        """The state R4 leaves: this one with its execution."""
        return self.carried_into(Answered, outcome=outcome or self.outcome, execution=execution)

    def _check(self) -> None:
        super()._check()
        if self.prompt.build_status is BuildStatus.OK:
            if self.bundle.assembly_status is not AssemblyStatus.OK:
                raise ValueError("an OK prompt needs OK evidence")
        elif self.status is _OK_STATUS:
            raise ValueError("a request without a prompt cannot be OK")
        if (
            self.status is _NO_EVIDENCE
            and not self.verdict_given
            and self.prompt.build_status is not BuildStatus.NO_EVIDENCE
        ):
            raise ValueError("before a verdict, a NO_EVIDENCE request has no prompt")


class Answered(Prompted):
    """After R4: the model's text exactly as received (or why there is none)."""

    execution: LLMExecutionResult

    def judged(self, validation: ValidationResult, *, outcome: Outcome) -> Judged:
        """The state R5 leaves: this one with its verdict, and the outcome it decides."""
        return self.carried_into(Judged, outcome=outcome, validation=validation)

    def _check(self) -> None:
        super()._check()
        if self.prompt.build_status is not BuildStatus.OK and self.execution.attempts:
            raise ValueError("a prompt that was not built must never reach the model")
        execution = self.execution
        if execution.generation_status is _FAILED and self.status is not _FAILED:
            raise ValueError("a FAILED execution fails the request")
        if execution.generation_status is _NO_EVIDENCE and (
            self.prompt.build_status is not BuildStatus.NO_EVIDENCE
            or execution.attempts
            or execution.raw_model_text != self.prompt.refusal_text
        ):
            raise ValueError(
                "a NO_EVIDENCE execution answers an unbuilt prompt with its refusal, uncalled"
            )
        if (
            self.status is _NO_EVIDENCE
            and not self.verdict_given
            and execution.generation_status is not _NO_EVIDENCE
        ):
            raise ValueError("before a verdict, a NO_EVIDENCE request has no model answer")


class Judged(Answered):
    """After R5: the verdict. Its outcome is the request's final status and reason."""

    validation: ValidationResult

    verdict_given: ClassVar[bool] = True

    def with_outcome(self, outcome: Outcome) -> Self:
        """This state with another outcome; a FAILED one withdraws the verdict's answer."""
        if outcome.status is not GenerationStatus.FAILED:
            return super().with_outcome(outcome)
        verdict = ValidationResult(
            request_id=self.request_id,
            generation_status=GenerationStatus.FAILED,
            validation_status=ValidationStatus.FAILED,
            failure_reason=outcome.reason,
            message=outcome.message,
            validated_answer_text="",
            validated_citations=(),
            grounding_metrics=self.validation.grounding_metrics,
            firewall_ruleset=self.validation.firewall_ruleset,
            firewall_ruleset_sha256=self.validation.firewall_ruleset_sha256,
            findings=self.validation.findings,
            judge=self.validation.judge,
            invalid_citations=self.validation.invalid_citations,
            malformed_citations=self.validation.malformed_citations,
            retrieved_ids=self.validation.retrieved_ids,
        )
        return self.model_copy(update={"outcome": outcome, "validation": verdict})

    def _check(self) -> None:
        super()._check()
        verdict = self.validation
        if verdict.request_id != self.request_id:
            raise ValueError("the verdict answers another request")
        if verdict.generation_status is not self.status:
            raise ValueError("the outcome is the verdict's status")
        if verdict.validation_status is ValidationStatus.PASSED and verdict.validated_citations:
            allowed = set(self.bundle.allowed_anchors)
            if not allowed >= set(verdict.validated_citations):
                raise ValueError("an OK answer cites anchors of its own evidence")


_OK_STATUS = GenerationStatus.OK
_NO_EVIDENCE = GenerationStatus.NO_EVIDENCE
_FAILED = GenerationStatus.FAILED
