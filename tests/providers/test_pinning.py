"""Pinning is checked on the request, not on model attributes, and keeps the caller's endpoint."""

from __future__ import annotations

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage
from langchain_openai import AzureChatOpenAI, ChatOpenAI

from groundlock import (
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    GenerationStatus,
    ModelPinningError,
    ReasonCode,
)
from groundlock.providers.chat import read_reply
from tests.builders import sample_bundle
from tests.fakes.openai_server import FakeOpenAI, Reply

PROMPT = (AssembleEvidence() | BuildPrompt()).invoke(sample_bundle())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("extra_body", {"temperature": 1.3}),
        ("extra_body", {"model": "gpt-4o", "store": True}),
        ("extra_body", {"max_output_tokens": 9000}),
        ("model_kwargs", {"max_output_tokens": 9000}),
        ("model_kwargs", {"stream_options": {"include_usage": True}}),
    ],
)
def test_settings_that_would_override_a_pin_on_the_wire_are_refused(field: str, value: dict):
    model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", **{field: value})
    with pytest.raises(ModelPinningError, match="override pinned settings"):
        ExecuteModel(model=model)


def test_a_model_asking_for_several_answers_is_refused_from_its_request():
    model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", n=3)
    with pytest.raises(ModelPinningError, match="several answers"):
        ExecuteModel(model=model)


def test_loose_instance_settings_are_replaced_on_the_wire():
    with FakeOpenAI() as server:
        loose = ChatOpenAI(
            model="gpt-4.1-mini", api_key="sk-test", base_url=server.url, temperature=0.9,
            max_tokens=5, max_retries=6, use_responses_api=False,
        )  # fmt: skip
        ExecuteModel(model=loose).invoke(PROMPT)
        (request,) = server.requests
    body = request.json
    assert (body["temperature"], body["max_completion_tokens"]) == (0.0, 800)
    assert request.headers["x-stainless-retry-count"] == "0"


def test_the_callers_endpoint_headers_and_http_client_are_kept():
    seen: list[str] = []
    with (
        FakeOpenAI() as server,
        httpx.Client(event_hooks={"request": [lambda r: seen.append(str(r.url))]}) as client,
    ):
        model = ChatOpenAI(
            model="gpt-4.1-mini", api_key="sk-team", base_url=server.url,
            default_headers={"x-team": "maintenance"}, http_client=client,
            use_responses_api=False,
        )  # fmt: skip
        stage = ExecuteModel(model=model)
        assert stage.invoke(PROMPT).execution.generation_status is GenerationStatus.OK
        (request,) = server.requests
    assert request.headers["x-team"] == "maintenance"
    assert request.headers["authorization"] == "Bearer sk-team"
    assert seen == [server.url + "/chat/completions"]


def test_a_caller_supplied_sdk_client_for_another_endpoint_is_refused():
    local = openai.OpenAI(api_key="sk-local", base_url="http://127.0.0.1:9/v1", max_retries=0)
    model = ChatOpenAI(
        model="gpt-4.1-mini", api_key="sk-other", root_client=local, client=local.chat.completions
    )
    with pytest.raises(ModelPinningError, match="its own SDK client"):
        ExecuteModel(model=model)


def test_openai_compatible_servers_default_to_chat_completions():
    vllm = ChatOpenAI(model="qwen2.5-7b", api_key="none", base_url="http://gpu-01:8000/v1")
    assert ExecuteModel(model=vllm).pinned.api == "chat_completions"
    official = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test")
    assert ExecuteModel(model=official).pinned.api == "responses"
    explicit = ChatOpenAI(
        model="qwen2.5-7b", api_key="none", base_url="http://gpu-01:8000/v1", use_responses_api=True
    )
    assert ExecuteModel(model=explicit).pinned.api == "responses"


def test_azure_without_a_model_name_is_refused_because_drift_could_not_be_checked():
    azure = AzureChatOpenAI(
        azure_endpoint="https://example.openai.azure.com",
        azure_deployment="gpt5-prod",
        api_version="2025-04-01-preview",
        api_key="azure-test",
    )
    with pytest.raises(ModelPinningError, match="needs model="):
        ExecuteModel(model=azure)


def test_an_openai_reply_that_names_no_model_is_not_trusted():
    with FakeOpenAI() as server:
        server.script(Reply(model=""))
        model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=server.url)
        state = ExecuteModel(model=model).invoke(PROMPT)
    assert (state.execution.generation_status, state.execution.reason_code) == (
        GenerationStatus.FAILED,
        ReasonCode.MODEL_DRIFT,
    )
    assert (state.status, state.outcome.reason) == (GenerationStatus.FAILED, ReasonCode.MODEL_DRIFT)


def test_malformed_usage_counts_are_recorded_as_unknown():
    message = AIMessage(
        "x", usage_metadata={"input_tokens": -1, "output_tokens": 2, "total_tokens": 1}
    )
    reply = read_reply(message)
    assert (reply.input_tokens, reply.output_tokens, reply.total_tokens) == (None, 2, 1)
