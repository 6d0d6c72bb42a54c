"""The stage shell adds no LangChain plumbing of its own: counted, not timed.

Every stage is a run, so LangChain builds its config, callback manager and child config;
that is LangChain's cost. These tests count those builds (``ensure_config``, ``patch_config``,
callback manager ``configure`` and ``get_child``) per request with a profiler hook, and pin
that a stage costs exactly what a runnable written the way langchain-core documents (an
``invoke`` that is one ``_call_with_config`` call) costs, and that the real chain costs what
five stages that do nothing cost plus the model's own run: a stage's work adds no runs,
configs or callback managers of its own.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import pytest
from langchain_core.callbacks import manager
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence
from langchain_core.runnables import config as lc_config
from typing_extensions import override

from groundlock import grounded_answer_chain
from groundlock.runnables._stage import Stage
from tests.builders import sample_bundle

BUILDS: dict[CodeType, str] = {
    lc_config.ensure_config.__code__: "ensure_config",
    lc_config.patch_config.__code__: "patch_config",
    manager.CallbackManager.configure.__func__.__code__: "configure",
    manager.AsyncCallbackManager.configure.__func__.__code__: "configure",
    manager.ParentRunManager.get_child.__code__: "get_child",
    manager.AsyncParentRunManager.get_child.__code__: "get_child",
}


class _Plain(Runnable[Any, Any]):
    """LangChain's own minimum for a run: ``invoke`` is one ``_call_with_config`` call."""

    @override
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(_same, input, config)

    @override
    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._acall_with_config(_asame, input, config)


def _same(value: object) -> object:
    return value


async def _asame(value: object) -> object:
    return value


class _NoWork(Stage[Any, Any]):
    """A stage that hands its input on: the shell alone."""

    @override
    def _work(self, stage_input: object, config: RunnableConfig) -> Any:
        return stage_input


def _builds(call: Callable[[], object]) -> Counter[str]:
    """How many times ``call`` has LangChain build each config and callback object."""
    counts: Counter[str] = Counter()

    def count(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and (name := BUILDS.get(frame.f_code)) is not None:
            counts[name] += 1

    sys.setprofile(count)
    try:
        call()
    finally:
        sys.setprofile(None)
    return counts


def _request(runnable: Runnable[Any, Any], value: object, mode: str) -> Callable[[], object]:
    if mode == "sync":
        return lambda: runnable.invoke(value)
    return lambda: asyncio.run(runnable.ainvoke(value))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stage_builds_what_a_plain_run_builds_and_no_more(mode: str):
    stages = RunnableSequence(*(_NoWork(name=f"noop{i}") for i in range(5)))
    plain = RunnableSequence(*(_Plain() for _ in range(5)))
    bundle = sample_bundle()
    ours, langchains = (
        _builds(_request(stages, bundle, mode)),
        _builds(_request(plain, bundle, mode)),
    )
    assert ours == langchains
    assert ours["configure"] == 6  # the sequence's run and each stage's


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_chain_builds_what_its_runs_need_and_nothing_for_its_stages_work(mode: str):
    # The real chain: five stages' runs, and one child run (the model's); a stage's work
    # (reading input, building states, validating) builds no config or callback manager.
    chain = grounded_answer_chain()
    nothing = RunnableSequence(*(_NoWork(name=f"noop{i}") for i in range(5)))
    bundle = sample_bundle()
    chain.invoke(bundle)  # warm
    real, shell = _builds(_request(chain, bundle, mode)), _builds(_request(nothing, bundle, mode))
    model_run = Counter({"ensure_config": 1, "configure": 1})
    assert real == shell + model_run
