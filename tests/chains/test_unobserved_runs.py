"""Observed or not, the chain behaves the same, and every observer sees every run.

The stages run through LangChain's own run plumbing whether or not anyone listens (an
earlier version skipped it for unobserved runs). These tests pin that observing changes
nothing a caller can see: the same response, the same fail-closed behaviour, and every run
present as soon as anything listens, however it listens (a callbacks argument,
``collect_runs``, debug output).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.globals import set_debug
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tracers.context import collect_runs

from groundlock import (
    AssembleEvidence,
    ExtractiveChatModel,
    GenerationStatus,
    PublicResponse,
    ReasonCode,
    ValidateAnswer,
    grounded_answer_chain,
)
from groundlock.runnables._stage import Stage
from tests.builders import sample_bundle
from tests.fakes.chat import ModelCalls

STAGES = [
    "R2.AssembleEvidence", "R3.BuildPrompt", "R4.ExecuteModel", "R5.ValidateAnswer",
    "R6.PackageResponse",
]  # fmt: skip


def _comparable(response: PublicResponse) -> dict[str, Any]:
    return response.model_dump(exclude={"latency_ms"})


def test_unobserved_and_observed_invocations_give_the_same_response():
    chain = grounded_answer_chain()
    quiet = chain.invoke(sample_bundle())
    calls = ModelCalls()
    observed = chain.invoke(sample_bundle(), config={"callbacks": [calls]})
    assert quiet.status is GenerationStatus.OK
    assert _comparable(quiet) == _comparable(observed)
    assert [name for name, _ in calls.runs if name in STAGES] == STAGES


def test_async_unobserved_and_observed_invocations_give_the_same_response():
    chain = grounded_answer_chain()
    calls = ModelCalls()

    async def both() -> tuple[PublicResponse, PublicResponse]:
        quiet = await chain.ainvoke(sample_bundle())
        observed = await chain.ainvoke(sample_bundle(), config={"callbacks": [calls]})
        return quiet, observed

    quiet, observed = asyncio.run(both())
    assert quiet.status is GenerationStatus.OK
    assert _comparable(quiet) == _comparable(observed)
    assert [name for name, _ in calls.runs if name in STAGES] == STAGES


def test_collect_runs_sees_the_chain_and_every_stage():
    # collect_runs registers a handler that is not inherited: it is added to each run
    # afresh, so each stage must check for it rather than trust its parent's empty list.
    chain = grounded_answer_chain()
    with collect_runs() as collector:
        chain.invoke(sample_bundle())
    names = [run.name for run in collector.traced_runs]
    assert names == ["groundlock.grounded_answer"]
    children = [child.name for child in collector.traced_runs[0].child_runs]
    assert children == STAGES


def test_debug_output_names_every_stage(capsys: pytest.CaptureFixture[str]):
    chain = grounded_answer_chain()
    set_debug(True)
    try:
        chain.invoke(sample_bundle())
    finally:
        set_debug(False)
    printed = capsys.readouterr().out
    for stage in STAGES:
        assert f"chain:{stage}] Entering Chain run" in printed


@pytest.mark.parametrize("observed", [False, True])
def test_a_bug_in_a_stage_fails_closed_with_or_without_observers(
    monkeypatch: pytest.MonkeyPatch, *, observed: bool
):
    def broken(self: ValidateAnswer, stage_input: object, config: RunnableConfig) -> Any:
        raise RuntimeError("validator bug")

    monkeypatch.setattr(ValidateAnswer, "_run", broken)
    config: RunnableConfig = {"callbacks": [ModelCalls()]} if observed else {}
    response = grounded_answer_chain().invoke(sample_bundle(), config=config)
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.INTERNAL_ERROR
    assert response.answer == ""


def test_interrupts_propagate_on_the_unobserved_path(monkeypatch: pytest.MonkeyPatch):
    def interrupted(self: Stage[Any, Any], stage_input: object, config: RunnableConfig) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(ValidateAnswer, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        grounded_answer_chain().invoke(sample_bundle())


def test_a_stage_on_its_own_opens_its_run_even_with_an_empty_manager():
    # An empty manager from anywhere but the chain is not a promise that nobody listens:
    # LangChain's own configure adds debug output, tracers and collect_runs per run.
    with collect_runs() as collector:
        AssembleEvidence().invoke(sample_bundle(), {"callbacks": CallbackManager(handlers=[])})
    assert [run.name for run in collector.traced_runs] == ["R2.AssembleEvidence"]


def test_a_stage_inside_another_graph_is_traced_when_debug_is_switched_on_inside_it(
    capsys: pytest.CaptureFixture[str],
):
    stage = AssembleEvidence()

    def switch_on_then_call(bundle: dict[str, Any], config: RunnableConfig) -> Any:
        set_debug(True)
        return stage.invoke(bundle, config)

    try:
        RunnableLambda(switch_on_then_call).invoke(sample_bundle())
    finally:
        set_debug(False)
    assert "chain:R2.AssembleEvidence] Entering Chain run" in capsys.readouterr().out


class _Starts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.model_starts: list[tuple[Any, dict[str, Any]]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.model_starts.append((kwargs.get("parent_run_id"), dict(kwargs.get("metadata") or {})))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_handlers_set_on_the_model_itself_keep_the_runs_and_their_metadata(mode: str):
    handler = _Starts()
    chain = grounded_answer_chain(model=ExtractiveChatModel(callbacks=[handler]))
    if mode == "sync":
        response = chain.invoke(sample_bundle())
    else:
        response = asyncio.run(chain.ainvoke(sample_bundle()))
    assert response.status is GenerationStatus.OK
    ((parent, metadata),) = handler.model_starts
    assert parent is not None  # R4's run
    assert metadata["request_id"] == sample_bundle()["request_id"]
    assert {"policy_version", "policy_sha256", "prompt_sha256"} <= set(metadata)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_handler_passed_only_as_inheritable_sees_every_stage(mode: str):
    calls = ModelCalls()
    manager = CallbackManager(handlers=[], inheritable_handlers=[calls])
    chain = grounded_answer_chain()
    if mode == "sync":
        chain.invoke(sample_bundle(), {"callbacks": manager})
    else:
        asyncio.run(chain.ainvoke(sample_bundle(), {"callbacks": manager}))
    assert [name for name, _ in calls.runs if name in STAGES] == STAGES
    assert calls.model_calls == 1
