"""R5 as an LCEL stage: ``LLMExecutionResult`` -> ``ValidationResult`` (the firewall)."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.validation import ValidationResult
from groundlock.core.firewall import failed_validation, validate_answer
from groundlock.core.intake import salvage_nested_request_id
from groundlock.core.prompt import policy_mismatch
from groundlock.runnables._stage import PolicyStage, coerce_input

__all__ = ["ValidateAnswer"]


class ValidateAnswer(PolicyStage[LLMExecutionResult, ValidationResult]):
    """R5: accept the model's answer exactly as written, or reject it with a reason code.

    It calls no model and never edits text (see :mod:`groundlock.core.firewall` for the
    checks and their order). A FAILED execution passes its reason through.
    """

    name: str | None = "R5.ValidateAnswer"

    def _run(self, stage_input: object, config: RunnableConfig) -> ValidationResult:
        execution = coerce_input(LLMExecutionResult, stage_input)
        if isinstance(execution, str):
            return self._fail_closed(stage_input, ReasonCode.INPUT_SCHEMA_INVALID, execution)
        problem = policy_mismatch(execution.prompt.bundle, self.policy)
        if problem is None and execution.prompt.refusal_text != self.policy.refusal_text:
            problem = "prompt: demands another refusal text than this stage's policy"
        if problem:
            return failed_validation(
                execution.request_id, execution, ReasonCode.INPUT_SCHEMA_INVALID, problem
            )
        return validate_answer(execution, self.policy)

    def _fail_closed(
        self, stage_input: object, reason: ReasonCode, message: str
    ) -> ValidationResult:
        if isinstance(stage_input, LLMExecutionResult):
            return failed_validation(stage_input.request_id, stage_input, reason, message)
        request_id = salvage_nested_request_id(stage_input, "prompt", "bundle")
        return failed_validation(request_id, None, reason, message)
