"""R3 as an LCEL stage: ``AnswerBundle`` -> ``PromptBuildResult`` (frozen prompt bytes)."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.prompt import PromptBuildResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.prompt import build_prompt, failed_prompt
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
        return build_prompt(bundle, self.policy)

    def _fail_closed(
        self, stage_input: object, reason: ReasonCode, message: str
    ) -> PromptBuildResult:
        return failed_prompt(stage_input, self.policy, reason, message)
