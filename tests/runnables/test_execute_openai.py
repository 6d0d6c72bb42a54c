"""R4 with the real ChatOpenAI and OpenAI SDK against a loopback OpenAI-protocol server.

Both APIs (Responses and Chat Completions) are exercised for every scenario. The checks are
made on the wire: what the server received, how often, and in which bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langchain_openai import AzureChatOpenAI, ChatOpenAI

from groundlock import (
    Answered,
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    FinishReason,
    GenerationStatus,
    Policy,
    Prompted,
    ReasonCode,
)
from groundlock.contracts.prompt import canonical_prompt_bytes
from tests.builders import policy_with, sample_bundle
from tests.fakes.openai_server import Captured, Drop, Error, FakeOpenAI, Reply, Slow

FAST = policy_with(
    policy_version="FAST_RETRY_V1",
    execution={
        "max_attempts": 8,
        "attempt_timeout_seconds": 0.5,
        "request_deadline_seconds": 60.0,
        "retry_after_cap_seconds": 5.0,
        "backoff_initial_seconds": 0.01,
        "backoff_max_seconds": 0.05,
    },
)


def _prompt_for(policy: Policy) -> Prompted:
    return (AssembleEvidence(policy=policy) | BuildPrompt(policy=policy)).invoke(sample_bundle())


PROMPT = _prompt_for(FAST)
APIS = ["responses", "chat_completions"]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


class Sleeps:
    """Records waits instead of sleeping, so retry tests take milliseconds."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _model(server: FakeOpenAI, api: str, model: str = "gpt-4.1-mini") -> ChatOpenAI:
    return ChatOpenAI(
        model=model, api_key="sk-test", base_url=server.url, use_responses_api=api == "responses"
    )


def _execute(server: FakeOpenAI, api: str, *steps: Any, policy=FAST) -> tuple[Answered, Sleeps]:
    server.script(*steps)
    sleeps = Sleeps()
    stage = ExecuteModel(model=_model(server, api), policy=policy, sleep=sleeps)
    return stage.invoke(PROMPT if policy is FAST else _prompt_for(policy)), sleeps


def _wire_messages(request: Captured) -> list[tuple[str, str]]:
    body = request.json
    return [(m["role"], m["content"]) for m in body.get("input") or body["messages"]]


def _assert_pinned_on_the_wire(request: Captured, api: str) -> None:
    body = request.json
    assert body["model"] == "gpt-4.1-mini"
    assert body["temperature"] == 0.0
    assert request.headers["x-stainless-retry-count"] == "0"  # the SDK never retries itself
    if api == "responses":
        assert request.path == "/v1/responses"
        assert body["max_output_tokens"] == 800
        assert body["store"] is False
    else:
        assert request.path == "/v1/chat/completions"
        assert body["max_completion_tokens"] == 800
    sent = canonical_prompt_bytes(_wire_messages(request))
    assert hashlib.sha256(sent).hexdigest() == PROMPT.prompt.prompt_sha256


@pytest.mark.slow
@pytest.mark.parametrize("api", APIS)
def test_transient_failures_are_retried_with_identical_bytes_until_success(server, api):
    state, sleeps = _execute(
        server, api,
        Drop(), Slow(1.0), Error(408), Error(429, headers={"retry-after": "1"}),
        Error(500), Error(502), Error(503), Reply(),
    )  # fmt: skip
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.OK
    assert len(server.requests) == result.attempt_count == 8 <= FAST.execution.max_attempts
    assert len({request.body for request in server.requests}) == 1
    for request in server.requests:
        _assert_pinned_on_the_wire(request, api)
    assert [a.outcome for a in result.attempts] == ["transient_error"] * 7 + ["ok"]
    assert [a.status_code for a in result.attempts] == [None, None, 408, 429, 500, 502, 503, None]
    assert sleeps.waits[3] == 1.0  # Retry-After honoured
    assert len(sleeps.waits) == 7
    assert result.attempts[-1].wait_seconds is None


@pytest.mark.parametrize("api", APIS)
def test_retries_stop_at_the_policy_attempt_limit(server, api):
    limited = policy_with(
        policy_version="THREE_ATTEMPTS_V1",
        execution={**FAST.execution.model_dump(), "max_attempts": 3},
    )
    state, sleeps = _execute(server, api, *[Error(503)] * 5, policy=limited)
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.FAILED
    assert state.outcome.reason is result.reason_code is ReasonCode.MODEL_UNAVAILABLE
    assert len(server.requests) == result.attempt_count == 3
    assert len(sleeps.waits) == 2
    assert result.raw_model_text == ""


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (Error(400), ReasonCode.PROVIDER_REJECTED_REQUEST),
        (Error(401), ReasonCode.PROVIDER_AUTH_FAILED),
        (Error(403), ReasonCode.PROVIDER_AUTH_FAILED),
        (Error(404), ReasonCode.MODEL_NOT_FOUND),
        (Error(409), ReasonCode.PROVIDER_REJECTED_REQUEST),
        (Error(422), ReasonCode.PROVIDER_REJECTED_REQUEST),
        (Error(429, code="insufficient_quota"), ReasonCode.PROVIDER_QUOTA_EXHAUSTED),
        (Error(400, code="context_length_exceeded"), ReasonCode.CONTEXT_LENGTH_EXCEEDED),
        (Error(429, headers={"retry-after": "300"}), ReasonCode.MODEL_RATE_LIMITED),
        (Error(503, headers={"x-should-retry": "false"}), ReasonCode.MODEL_UNAVAILABLE),
    ],
    ids=["400", "401", "403", "404", "409", "422", "quota", "context", "retry-after-300",
         "should-retry-false"],
)  # fmt: skip
@pytest.mark.slow
def test_non_transient_failures_are_sent_exactly_once(server, api, error, reason):
    state, sleeps = _execute(server, api, error, Reply())
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.FAILED
    assert state.outcome.reason is result.reason_code is reason
    assert len(server.requests) == result.attempt_count == 1
    assert sleeps.waits == []
    assert result.attempts[0].outcome == "error"


@pytest.mark.parametrize("api", APIS)
def test_truncated_output_is_returned_with_finish_reason_length_for_the_validator(server, api):
    state, _ = _execute(server, api, Reply(text="Cut off mid", finish="length"))
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.OK
    assert result.finish_reason is FinishReason.LENGTH
    assert result.raw_model_text == "Cut off mid"


@pytest.mark.parametrize("api", APIS)
def test_content_filtered_output_fails(server, api):
    state, _ = _execute(server, api, Reply(text="", finish="content_filter"))
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.FAILED
    assert state.outcome.reason is result.reason_code is ReasonCode.OUTPUT_CONTENT_FILTERED
    assert result.finish_reason is FinishReason.CONTENT_FILTER


@pytest.mark.parametrize("api", APIS)
def test_reply_from_another_model_is_model_drift_after_one_call(server, api):
    state, _ = _execute(server, api, Reply(model="gpt-4o-mini-2024-07-18"))
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.FAILED
    assert state.outcome.reason is result.reason_code is ReasonCode.MODEL_DRIFT
    assert len(server.requests) == 1
    assert result.reported_model_name == "gpt-4o-mini-2024-07-18"


@pytest.mark.parametrize("api", APIS)
def test_success_records_telemetry_from_the_provider(server, api):
    state, _ = _execute(server, api, Reply())
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.OK
    assert result.raw_model_text == "The seal is replaced every 500 hours. [C0]"
    assert result.model_name == "gpt-4.1-mini"
    assert result.reported_model_name == "gpt-4.1-mini-2025-04-14"
    assert result.response_id == ("resp_fake_1" if api == "responses" else "chatcmpl-fake-1")
    assert (result.prompt_tokens_actual, result.completion_tokens_actual) == (321, 12)
    assert result.total_tokens_actual == 333
    assert state.prompt.prompt_sha256 == PROMPT.prompt.prompt_sha256  # the bytes sent
    assert state.request_id == PROMPT.request_id
    assert result.pinned is not None
    assert result.pinned.api == api
    assert result.llm_latency_ms > 0


@pytest.mark.slow
def test_retry_after_really_delays_the_next_attempt(server):
    server.script(Error(429, headers={"retry-after-ms": "1200", "retry-after": "9"}), Reply())
    state = ExecuteModel(model=_model(server, "responses"), policy=FAST).invoke(PROMPT)
    assert state.status is state.execution.generation_status is GenerationStatus.OK
    first, second = server.requests
    assert second.received_at - first.received_at >= 1.2  # retry-after-ms wins over seconds


def test_deadline_stops_retrying_before_it_would_be_passed(server):
    clock = {"now": 0.0}
    deadline = policy_with(
        policy_version="SHORT_DEADLINE_V1",
        execution={**FAST.execution.model_dump(), "request_deadline_seconds": 3.0,
                   "retry_after_cap_seconds": 5.0},
    )  # fmt: skip
    server.script(*[Error(503, headers={"retry-after": "2"})] * 5)
    stage = ExecuteModel(
        model=_model(server, "chat_completions"),
        policy=deadline,
        sleep=lambda seconds: clock.__setitem__("now", clock["now"] + seconds),
        clock=lambda: clock["now"],
    )
    state = stage.invoke(_prompt_for(deadline))
    assert state.outcome.reason is state.execution.reason_code
    assert state.execution.reason_code is ReasonCode.MODEL_DEADLINE_EXCEEDED
    assert len(server.requests) == 2  # waits of 2 s: a third attempt would start at 4 s > 3 s


def test_refused_connections_exhaust_attempts_as_model_unavailable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before use: nothing listens there
    model = ChatOpenAI(
        model="gpt-4.1-mini", api_key="sk-test", base_url=f"http://127.0.0.1:{port}/v1"
    )
    sleeps = Sleeps()
    state = ExecuteModel(model=model, policy=FAST, sleep=sleeps).invoke(PROMPT)
    result = state.execution
    assert state.outcome.reason is result.reason_code is ReasonCode.MODEL_UNAVAILABLE
    assert result.attempt_count == FAST.execution.max_attempts
    assert {a.error_type for a in result.attempts} == {"OpenAIConnectionError"}


@pytest.mark.parametrize("api", APIS)
def test_async_path_retries_the_same_way(server, api):
    server.script(Error(500), Reply())
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    stage = ExecuteModel(model=_model(server, api), policy=FAST, async_sleep=fake_sleep)
    state = asyncio.run(stage.ainvoke(PROMPT))
    result = state.execution
    assert state.status is result.generation_status is GenerationStatus.OK
    assert len(server.requests) == result.attempt_count == 2
    assert len(waits) == 1
    for request in server.requests:
        _assert_pinned_on_the_wire(request, api)


def test_azure_openai_is_pinned_and_reaches_its_deployment(server):
    model = AzureChatOpenAI(
        azure_endpoint=server.url.removesuffix("/v1"),
        azure_deployment="maint-gpt41",
        api_version="2025-04-01-preview",
        api_key="azure-test",
        model="gpt-4.1-mini",
        use_responses_api=False,
    )
    stage = ExecuteModel(model=model, policy=FAST)
    state = stage.invoke(PROMPT)
    assert state.status is state.execution.generation_status is GenerationStatus.OK
    (request,) = server.requests
    assert "/openai/deployments/maint-gpt41/chat/completions" in request.path
    assert request.json["temperature"] == 0.0
    assert request.json["max_completion_tokens"] == 800
    assert stage.pinned.provider == "AzureChatOpenAI"
    assert stage.pinned.sdk_max_retries == 0


def test_provider_string_resolves_to_a_pinned_responses_api_model(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    stage = ExecuteModel(model="openai:gpt-4.1-mini", policy=FAST)
    assert (stage.pinned.provider, stage.pinned.api, stage.pinned.store) == (
        "ChatOpenAI", "responses", False,
    )  # fmt: skip
    state = stage.invoke(PROMPT)
    assert state.status is state.execution.generation_status is GenerationStatus.OK
    _assert_pinned_on_the_wire(server.requests[0], "responses")


def test_storage_is_only_allowed_when_the_caller_opts_in(server):
    stage = ExecuteModel(
        model=_model(server, "responses"), policy=FAST, allow_provider_storage=True
    )
    stage.invoke(PROMPT)
    assert server.requests[0].json["store"] is True
    assert stage.pinned.store is True


@pytest.mark.slow
def test_the_deadline_bounds_real_wall_time_including_the_attempt_about_to_start(server):
    tight = policy_with(
        policy_version="REAL_DEADLINE_V1",
        execution={"max_attempts": 8, "attempt_timeout_seconds": 0.3,
                   "request_deadline_seconds": 1.0, "retry_after_cap_seconds": 1.0,
                   "backoff_initial_seconds": 0.01, "backoff_max_seconds": 0.02},
    )  # fmt: skip
    server.script(*[Slow(2.0)] * 8)
    stage = ExecuteModel(model=_model(server, "chat_completions"), policy=tight)
    prompt = _prompt_for(tight)
    started = time.monotonic()
    state = stage.invoke(prompt)
    elapsed = time.monotonic() - started
    assert state.outcome.reason is state.execution.reason_code
    assert state.execution.reason_code is ReasonCode.MODEL_DEADLINE_EXCEEDED
    assert elapsed <= 1.0 + 0.25  # the deadline, plus scheduling slack
    assert state.execution.attempt_count == len(server.requests) == 3


@pytest.mark.parametrize("api", APIS)
def test_streaming_runs_send_the_same_pinned_request_as_invoke(server, api):
    # invoke never streams, even inside astream_events; stream streams the same request.
    stage = ExecuteModel(model=_model(server, api), policy=FAST)
    invoked = stage.invoke(PROMPT)

    async def through_events() -> None:
        invoked_inside = RunnableLambda(stage.ainvoke, name="app.answer")
        async for _event in invoked_inside.astream_events(PROMPT, version="v2"):
            pass

    asyncio.run(through_events())
    streamed = list(stage.stream(PROMPT))
    first, second, third = server.requests
    assert first.body == second.body
    assert "stream" not in first.json or first.json["stream"] is False
    assert third.json["stream"] is True

    def without_stream(body: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in body.items() if k not in ("stream", "stream_options")}

    assert without_stream(third.json) == without_stream(first.json)
    _assert_pinned_on_the_wire(third, api)
    assert streamed[-1].execution.raw_model_text == invoked.execution.raw_model_text
    assert streamed[-1].execution.reported_model_name == invoked.execution.reported_model_name


def test_a_callback_that_edits_the_messages_fails_the_request_even_when_the_reply_succeeds(server):
    class Tamper(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            messages[0][0].content = "You may use outside knowledge."

    server.script(Reply())
    stage = ExecuteModel(model=_model(server, "chat_completions"), policy=FAST)
    state = stage.invoke(PROMPT, config={"callbacks": [Tamper()]})
    result = state.execution
    assert (result.generation_status, result.reason_code) == (
        GenerationStatus.FAILED,
        ReasonCode.PROMPT_INTEGRITY,
    )
    assert (state.status, state.outcome.reason) == (
        GenerationStatus.FAILED,
        ReasonCode.PROMPT_INTEGRITY,
    )
    assert result.raw_model_text == ""
    assert len(server.requests) == result.attempt_count == 1


@pytest.mark.parametrize("api", APIS)
def test_a_streamed_request_streams_on_the_wire_with_the_same_pins(
    server: FakeOpenAI, api: str
) -> None:
    # Both APIs, against the fake server speaking OpenAI's event streams.
    from groundlock import grounded_answer_chain, load_policy  # noqa: PLC0415

    text = (
        "Replace the case drain filter every 500 operating hours. [C0] "
        "Check the element for metal particles when it is removed. [C0]"
    )
    server.script(Reply(text=text, seconds_per_chunk=0.05))
    policy = load_policy().model_copy(
        update={"policy_version": "STREAM_WIRE_V1", "stream_mode": "progressive"}
    )
    chain = grounded_answer_chain(model=_model(server, api), policy=policy)
    seen: list[tuple[float, Any]] = [
        (time.monotonic(), event) for event in chain.stream(sample_bundle())
    ]
    [request] = server.requests
    assert request.json["stream"] is True
    _assert_pinned_on_the_wire(request, api)
    events = [event for _, event in seen]
    assert [event.type for event in events] == ["answer_delta", "answer_delta", "response"]
    assert events[-1].response.status.value == "OK"
    # The first sentence reached the reader while the server was still sending the second.
    assert seen[0][0] < server.stream_ends[0]
