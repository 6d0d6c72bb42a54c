"""The public chain end to end: every status path, every LCEL entry point, tracing, logs."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda, RunnableSequence
from langchain_core.tracers.context import collect_runs
from langchain_openai import ChatOpenAI

from groundlock import (
    AssembleEvidence,
    BuildPrompt,
    ExtractiveChatModel,
    GenerationStatus,
    PublicResponse,
    ReasonCode,
    RetrievalBundle,
    grounded_answer_chain,
    load_policy,
)
from tests.builders import make_bundle, make_row, sample_bundle
from tests.fakes.chat import ModelCalls, ScriptedChatModel
from tests.fakes.openai_server import Error, FakeOpenAI, Reply

POLICY = load_policy()
REFUSAL = POLICY.refusal_text
STAGES = [
    "R2.AssembleEvidence", "R3.BuildPrompt", "R4.ExecuteModel", "R5.ValidateAnswer",
    "R6.PackageResponse",
]  # fmt: skip


def run(chain: RunnableSequence, bundle: Any) -> tuple[PublicResponse, ModelCalls]:
    calls = ModelCalls()
    return chain.invoke(bundle, config={"callbacks": [calls]}), calls


def test_the_chain_is_one_sequence_of_the_five_named_stages():
    chain = grounded_answer_chain()
    assert isinstance(chain, RunnableSequence)
    assert [step.name for step in chain.steps] == STAGES
    assert chain.get_input_jsonschema() == RetrievalBundle.model_json_schema()
    assert chain.get_output_jsonschema() == PublicResponse.model_json_schema()


# Status paths -----------------------------------------------------------------------------


def test_ok_answer_is_validated_and_cites_public_metadata_of_the_entries():
    bundle = sample_bundle()
    response, calls = run(grounded_answer_chain(), bundle)
    assert response.status is GenerationStatus.OK
    assert calls.model_calls == 1
    assert (response.failure_reason, response.failure_message) == (None, None)
    rows = {row["chunk_id"]: row for row in bundle["results"]}
    chunk_of = (AssembleEvidence() | BuildPrompt()).invoke(bundle).bundle.anchor_map
    anchors_in_text = list(dict.fromkeys(a for a in ("C0", "C1", "C2", "C3", "C4", "C5")
                                         if f"[{a}]" in response.answer))  # fmt: skip
    assert [c.anchor for c in response.citations] == sorted(
        anchors_in_text, key=lambda a: response.answer.index(f"[{a}]")
    )
    for citation in response.citations:
        row = rows[chunk_of[citation.anchor]]
        assert citation.knowledge_id == row["knowledge_id"]
        assert citation.source_reference == row["source_reference"]
        assert citation.equipment_id == row["equipment_id"]
        assert citation.event_date == row.get("event_date")
    usage = response.token_usage
    assert usage.prompt_tokens
    assert usage.completion_tokens
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


@pytest.mark.parametrize(
    "bundle",
    [
        make_bundle([make_row(0, similarity=0.5)]),
        make_bundle([], retrieval_status="NO_EVIDENCE", top_k=5),
        make_bundle([make_row(0, equipment_id=None)], filters_applied={"equipment_id": "P-9"}),
    ],
    ids=["below-gate", "retriever-found-nothing", "all-filtered"],
)
def test_no_evidence_from_assembly_answers_the_exact_refusal_without_a_model(bundle):
    response, calls = run(grounded_answer_chain(model=ScriptedChatModel(text="x [C0]")), bundle)
    assert calls.model_calls == 0
    assert response.status is GenerationStatus.NO_EVIDENCE
    assert (response.answer, response.citations, response.failure_reason) == (REFUSAL, (), None)
    assert response.token_usage.total_tokens == 0


def test_the_model_may_refuse_and_that_is_no_evidence_too():
    bundle = make_bundle(user_question="Who painted the hangar doors?")
    response, calls = run(grounded_answer_chain(), bundle)
    assert calls.model_calls == 1
    assert (response.status, response.answer) == (GenerationStatus.NO_EVIDENCE, REFUSAL)


@pytest.mark.parametrize(
    ("bundle", "reason", "field"),
    [
        (make_bundle([make_row(0), make_row(2)]), ReasonCode.RANK_INTEGRITY, "rank"),
        (make_bundle([make_row(0, similarity=1.5)]), ReasonCode.SIMILARITY_INTEGRITY,
         "similarity"),
        (make_bundle([make_row(0, knowledge_type_effective="RUMOUR")]),
         ReasonCode.DOMAIN_INTEGRITY, "knowledge_type"),
        ({"request_id": "r-9"}, ReasonCode.INPUT_SCHEMA_INVALID, "user_question"),
        (make_bundle(user_question="Why? " * 400), ReasonCode.PROMPT_BUDGET_EXCEEDED,
         "question"),
    ],
    ids=["rank", "similarity", "domain", "schema", "question-budget"],
)  # fmt: skip
def test_invalid_requests_fail_with_a_code_and_a_message_and_no_model_call(bundle, reason, field):
    response, calls = run(grounded_answer_chain(model=ScriptedChatModel(text="x [C0]")), bundle)
    assert calls.model_calls == 0
    assert (response.status, response.failure_reason) == (GenerationStatus.FAILED, reason)
    assert response.answer == ""
    assert response.failure_message is not None
    assert field in response.failure_message


@pytest.mark.parametrize("payload", ["a string", None, 42, [1, 2], {"results": "x"}, b"\xff"])
def test_anything_that_is_not_a_bundle_fails_closed_without_raising(payload):
    response, calls = run(grounded_answer_chain(), payload)
    assert (response.status, response.failure_reason) == (
        GenerationStatus.FAILED, ReasonCode.INPUT_SCHEMA_INVALID,
    )  # fmt: skip
    assert calls.model_calls == 0


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("The element is replaced weekly.", ReasonCode.UNCITED_FACTUAL_STATEMENT),
        ("The element is replaced weekly. [C7]", ReasonCode.INVALID_CITATION_REFERENCE),
        ("The element is replaced weekly. (C0)", ReasonCode.MALFORMED_CITATION),
        (REFUSAL.lower(), ReasonCode.INVALID_REFUSAL_FORMAT),
        ("![x](https://evil.example/?q=1) [C0]", ReasonCode.UNSAFE_OUTPUT),
    ],
)
def test_a_rejected_answer_is_withheld_but_its_usage_is_reported(text, reason):
    response, calls = run(grounded_answer_chain(model=ScriptedChatModel(text=text)), make_bundle())
    assert calls.model_calls == 1
    assert (response.status, response.failure_reason) == (GenerationStatus.FAILED, reason)
    assert (response.answer, response.citations, response.failure_message) == ("", (), None)
    assert response.latency_ms > 0


def test_a_provider_failure_is_failed_with_its_code_through_the_real_openai_client():
    with FakeOpenAI() as server:
        server.script(Error(401, code="invalid_api_key"))
        model = _openai(server)
        response, calls = run(grounded_answer_chain(model=model), make_bundle())
        assert len(server.requests) == 1
    assert calls.model_calls == 1
    assert (response.status, response.failure_reason) == (
        GenerationStatus.FAILED, ReasonCode.PROVIDER_AUTH_FAILED,
    )  # fmt: skip
    assert response.failure_message is None  # a code only: the provider's text stays inside


def test_a_provider_answer_is_validated_like_any_other():
    with FakeOpenAI() as server:
        server.script(
            Reply(text="Procedure 0 covers the pump. [C0]", model="gpt-4.1-mini-2025-04-14")
        )
        response, _ = run(grounded_answer_chain(model=_openai(server)), make_bundle())
    assert response.status is GenerationStatus.OK
    assert [c.anchor for c in response.citations] == ["C0"]


def test_a_provider_model_string_is_resolved_and_pinned(monkeypatch):
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        server.script(Reply(text="Procedure 0 covers the pump. [C0]", model="gpt-4.1-mini"))
        response, _ = run(grounded_answer_chain(model="openai:gpt-4.1-mini"), make_bundle())
        sent = server.requests[0].json
    assert response.status is GenerationStatus.OK
    assert (sent["model"], sent["temperature"]) == ("gpt-4.1-mini", 0.0)


def _openai(server: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=server.url)


# Entry points ------------------------------------------------------------------------------

BUNDLES = [
    sample_bundle(),
    make_bundle(),
    make_bundle([make_row(0, similarity=0.5)]),
    make_bundle([make_row(0), make_row(0)]),
    make_bundle(user_question="Who painted the hangar doors?"),
]


def _comparable(response: PublicResponse) -> dict[str, Any]:
    return response.model_dump(exclude={"latency_ms"})


def test_invoke_ainvoke_batch_abatch_stream_and_astream_agree():
    chain = grounded_answer_chain()
    expected = [_comparable(chain.invoke(b)) for b in BUNDLES]
    assert [_comparable(asyncio.run(chain.ainvoke(b))) for b in BUNDLES] == expected
    assert [_comparable(r) for r in chain.batch(BUNDLES)] == expected
    assert [_comparable(r) for r in asyncio.run(chain.abatch(BUNDLES))] == expected
    for bundle, want in zip(BUNDLES, expected, strict=True):
        # A stream ends with the response invoke returns; its deltas join into the answer.
        events = list(chain.stream(bundle))
        assert [_comparable(events[-1].response)] == [want]
        deltas = [e.text for e in events[:-1] if e.type == "answer_delta"]
        assert "".join(deltas) == (events[-1].response.answer if deltas else "")

        async def collect(b: Any = bundle) -> list[Any]:
            return [event async for event in chain.astream(b)]

        assert [_comparable(asyncio.run(collect())[-1].response)] == [want]
    assert len({json.dumps(e, sort_keys=True) for e in expected}) == len(BUNDLES)


def test_a_streaming_model_streams_nothing_before_validation():
    unsafe = "Replace it weekly. ![x](https://evil.example/?q=1) [C0]"
    model = GenericFakeChatModel(messages=iter([AIMessage(unsafe)]))
    events = list(grounded_answer_chain(model=model).stream(make_bundle()))
    assert [event.type for event in events] == ["response"]
    assert (events[0].response.status, events[0].response.answer) == (GenerationStatus.FAILED, "")
    assert "evil.example" not in repr(events)


def test_a_loaded_policy_object_is_accepted_and_shared_by_every_stage():
    chain = grounded_answer_chain(policy=POLICY)
    assert all(step.policy is POLICY for step in chain.steps)


# Observability ---------------------------------------------------------------------------


def test_each_stage_is_a_named_run_carrying_request_policy_and_prompt_hash():
    bundle = make_bundle()
    calls = ModelCalls()
    grounded_answer_chain().invoke(bundle, config={"callbacks": [calls]})
    prompt = (AssembleEvidence() | BuildPrompt()).invoke(bundle).prompt
    runs = dict(calls.runs)
    assert [name for name, _ in calls.runs] == ["groundlock.grounded_answer", *STAGES]
    # The chain's own run is a plain RunnableSequence's (it carries what the caller passes);
    # every stage run carries the request, the policy and, from R3 on, the prompt's hash.
    for name in STAGES:
        assert runs[name]["request_id"] == "req-1"
        assert runs[name]["policy_version"] == POLICY.policy_version
        assert runs[name]["policy_sha256"] == POLICY.policy_sha256
    for name in STAGES[2:]:
        assert runs[name]["prompt_sha256"] == prompt.prompt_sha256
    assert "prompt_sha256" not in runs["R2.AssembleEvidence"]


@pytest.mark.parametrize(
    ("bundle", "level", "status"),
    [
        (make_bundle(), logging.INFO, "OK"),
        (make_bundle([make_row(0, similarity=0.5)]), logging.INFO, "NO_EVIDENCE"),
        (make_bundle([make_row(1)]), logging.WARNING, "FAILED"),
    ],
)
def test_one_structured_log_line_per_request_without_any_text(bundle, level, status, caplog):
    with caplog.at_level(logging.DEBUG, logger="groundlock"):
        grounded_answer_chain().invoke(bundle)
    lines = [r for r in caplog.records if r.name == "groundlock.request"]
    assert len(lines) == 1
    assert lines[0].levelno == level
    fields = json.loads(lines[0].getMessage().removeprefix("groundlock.request "))
    assert fields == lines[0].groundlock  # also attached for structured handlers
    assert fields["status"] == status
    minimum = {
        "request_id", "run_id", "policy_version", "index_version", "embedding_model",
        "prompt_sha256", "response_id", "latency_ms", "prompt_tokens", "completion_tokens",
        "total_tokens", "generation_status", "validation_status", "failure_reason",
        "citation_count", "uncited_sentence_count", "invalid_anchor_count",
    }  # fmt: skip
    assert minimum <= fields.keys()
    assert fields["request_id"] == "req-1"
    rendered = caplog.text
    for row in bundle["results"]:
        assert row["chunk_text"] not in rendered
    assert bundle["user_question"] not in rendered


def test_extractive_default_model_is_used_when_none_is_given():
    chain = grounded_answer_chain()
    assert chain.steps[2].pinned.provider == ExtractiveChatModel.__name__


class _CallsWithoutConfig(ExtractiveChatModel):
    """A model that runs a runnable of its own without passing config (as wrappers do)."""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):
        RunnableLambda(lambda text: text, name="inner.helper").invoke("x")
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ):
        await RunnableLambda(lambda text: text, name="inner.helper").ainvoke("x")
        return super()._generate(messages, stop, run_manager, **kwargs)


def _tree(run: Any, depth: int = 0) -> list[tuple[int, str]]:
    return [(depth, run.name)] + [
        line for child in run.child_runs for line in _tree(child, depth + 1)
    ]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "batch"])
def test_every_run_is_parented_under_the_chain_even_without_passed_config(mode: str):
    chain = grounded_answer_chain(model=_CallsWithoutConfig())
    with collect_runs() as collected:
        if mode == "invoke":
            response = chain.invoke(make_bundle())
        elif mode == "ainvoke":
            response = asyncio.run(chain.ainvoke(make_bundle()))
        else:
            response = chain.batch([make_bundle()])[0]
    assert response.status is GenerationStatus.OK
    roots = collected.traced_runs
    assert [run.name for run in roots] == ["groundlock.grounded_answer"]
    tree = _tree(roots[0])
    stages = [name for depth, name in tree if depth == 1]
    assert stages == STAGES
    # the helper the model ran without config is inside R4's run, not a root of its own
    # (a chat model sets no context for its own run, so the stage's run is its parent)
    inner = tree.index((2, "inner.helper"))
    assert [name for depth, name in tree[:inner] if depth == 1][-1] == "R4.ExecuteModel"


def test_the_chain_draws_itself_from_a_fresh_install():
    # grandalf is a declared dependency: LangChain needs it for draw_ascii but does not say so.
    drawing = grounded_answer_chain().get_graph().draw_ascii()
    positions = [drawing.index(name) for name in ["RetrievalBundle", *STAGES, "PublicResponse"]]
    assert positions == sorted(positions)
