"""R3 as an LCEL stage: an ``Assembled`` state -> a ``Prompted`` one (frozen prompt bytes)."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from typing_extensions import override

from groundlock.contracts.enums import AssemblyStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Assembled, Outcome, Prompted
from groundlock.core.prompt_build import build_prompt, check_outside_bundle
from groundlock.core.skipped import unbuilt
from groundlock.runnables._stage import StateStage

__all__ = ["BuildPrompt"]


class BuildPrompt(StateStage[Assembled, Prompted]):
    """R3: render the policy's frozen template into the exact bytes the model will get.

    A FAILED or NO_EVIDENCE request passes through with a prompt that was not built, so
    nothing downstream can call a model for it.
    """

    name: str | None = "R3.BuildPrompt"
    consumes = Assembled

    @override
    def _run(self, state: Assembled, config: RunnableConfig) -> Prompted:
        return build_prompt(state, self.policy)

    @override
    def _passed_over(self, state: Assembled) -> Prompted:
        return unbuilt(state, self.policy)

    @override
    def verify(self, state: Assembled) -> Outcome | None:
        """Evidence that arrived as data has its token counts recounted (budgets rely on them)."""
        if state.bundle.assembly_status is not AssemblyStatus.OK:
            return None
        problem = check_outside_bundle(state.bundle, self.policy)
        return Outcome.failed(ReasonCode.INPUT_SCHEMA_INVALID, problem) if problem else None
