"""The shell every groundlock stage shares: typed, traced, and closed on failure.

A stage's decision lives in a pure function; the stage only routes LCEL calls to it. Both
``invoke`` and ``ainvoke`` go through ``_call_with_config`` / ``_acall_with_config``, so
callbacks, tracing and ``run_name`` work the same on both paths, and both end in the same
``_run``: there is no second, async copy of the logic to drift.

If ``_run`` raises, that is a bug, not bad input (bad input is a FAILED result by design).
The stage logs the traceback without the exception message, which may quote evidence, and
returns the stage's FAILED output with ``INTERNAL_ERROR``: it fails closed, never open.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig, RunnableSerializable
from typing_extensions import override

from groundlock.contracts.reasons import ReasonCode

__all__ = ["Stage"]

logger = logging.getLogger("groundlock")

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


class Stage(RunnableSerializable[InputT, OutputT]):
    """Base class of the pipeline stages (not part of the public API)."""

    def _run(self, stage_input: object) -> OutputT:
        raise NotImplementedError

    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> OutputT:
        raise NotImplementedError

    def _guarded_run(self, stage_input: object) -> OutputT:
        try:
            return self._run(stage_input)
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            frames = "".join(traceback.format_tb(exc.__traceback__))
            logger.error(  # noqa: TRY400  (the message may quote evidence; log frames only)
                "stage %s failed closed with %s\n%s", self.get_name(), type(exc).__name__, frames
            )
            return self._fail_closed(
                stage_input,
                ReasonCode.INTERNAL_ERROR,
                f"{self.get_name()}: internal error ({type(exc).__name__})",
            )

    async def _aguarded_run(self, stage_input: object) -> OutputT:
        return self._guarded_run(stage_input)

    @override
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> OutputT:
        return self._call_with_config(self._guarded_run, input, config, **kwargs)

    @override
    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> OutputT:
        return await self._acall_with_config(self._aguarded_run, input, config, **kwargs)
