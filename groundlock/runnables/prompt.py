"""R3 as an LCEL stage: ``AnswerBundle`` -> ``PromptBuildResult`` (frozen prompt bytes)."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.enums import AssemblyStatus
from groundlock.contracts.prompt import PromptBuildResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.prompt import (
    build_prompt,
    check_outside_bundle,
    failed_prompt,
    policy_mismatch,
)
from groundlock.runnables._stage import PolicyStage, coerce_input

__all__ = ["BuildPrompt"]


class BuildPrompt(PolicyStage[AnswerBundle, PromptBuildResult]):
    """R3: render the policy's frozen template into the exact bytes the model will get.

    A FAILED or NO_EVIDENCE bundle passes through with its reason and no prompt, so nothing
    downstream can call a model for it.
    """

    name: str | None = "R3.BuildPrompt"

    def _run(self, stage_input: object, config: RunnableConfig) -> PromptBuildResult:
        bundle = coerce_input(AnswerBundle, stage_input)
        if isinstance(bundle, str):
            return self._fail_closed(stage_input, ReasonCode.INPUT_SCHEMA_INVALID, bundle)
        if bundle.assembly_status is AssemblyStatus.OK:
            # A bundle that arrived as data, not from R2 here, has its counts recounted.
            outside = bundle is not stage_input
            problem = policy_mismatch(bundle, self.policy) or (
                check_outside_bundle(bundle, self.policy) if outside else None
            )
            if problem:
                return failed_prompt(bundle, self.policy, ReasonCode.INPUT_SCHEMA_INVALID, problem)
        return build_prompt(bundle, self.policy)

    def _fail_closed(
        self, stage_input: object, reason: ReasonCode, message: str
    ) -> PromptBuildResult:
        return failed_prompt(stage_input, self.policy, reason, message)
