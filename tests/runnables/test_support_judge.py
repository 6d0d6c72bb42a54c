"""R5's optional support judge: the real ChatOpenAI against a loopback OpenAI server.

The judge runs after the deterministic rules, only on answers that passed them, one request
per cited sentence, pinned like R4 and given the frozen judge prompt. Its verdicts, identity
and prompt hash are recorded; a judge that errs, times out or answers outside its contract
fails the request closed (or is flagged, if the policy says so).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI

from groundlock import (
    GenerationStatus,
    GroundlockError,
    ReasonCode,
    ValidateAnswer,
    grounded_answer_chain,
    load_policy,
)
from groundlock.core.firewall.judging import load_judge_prompt
from tests.builders import sample_bundle
from tests.fakes.chat import ScriptedChatModel
from tests.fakes.openai_server import Error, FakeOpenAI, Reply, Slow

JUDGED = load_policy("R2_POLICY_V2_JUDGED")
ANSWER = (
    "Replace the case drain filter element every 500 operating hours. [C0]\n"
    "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C1]"
)


def _verdict(verdict: str, score: float) -> Reply:
    return Reply(text=json.dumps({"verdict": verdict, "score": score}))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _judge(server: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=server.url)


def _chain(judge: Any, policy: Any = JUDGED, answer: str = ANSWER) -> Any:
    return grounded_answer_chain(model=ScriptedChatModel(text=answer), policy=policy, judge=judge)


def test_supported_sentences_pass_and_the_verdicts_are_recorded(server):
    server.script(_verdict("supported", 0.97), _verdict("supported", 0.91))
    chain = _chain(_judge(server))
    response = chain.invoke(sample_bundle())
    assert response.status is GenerationStatus.OK
    assert len(server.requests) == 2  # one request per cited sentence (sent concurrently)
    sent = sorted(
        (request.json for request in server.requests),
        key=lambda body: "Replace" not in body["messages"][1]["content"],
    )
    assert all(body["temperature"] == 0 for body in sent)  # pinned like R4
    prompt = load_judge_prompt("judge_prompt_v1")
    assert sent[0]["messages"][0]["content"] == prompt.system
    user = sent[0]["messages"][1]["content"]
    assert "<sentence>\nReplace the case drain filter element" in user
    assert "every 500 operating hours or at the first indication" in user  # what it cites


def test_an_unsupported_sentence_withholds_the_answer(server):
    server.script(_verdict("supported", 0.95), _verdict("unsupported", 0.08))
    response = _chain(_judge(server)).invoke(sample_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.SUPPORT_JUDGE_REJECTED
    assert response.answer == ""


def test_a_supported_verdict_below_the_minimum_score_is_unsupported(server):
    server.script(_verdict("supported", 0.95), _verdict("supported", 0.3))
    response = _chain(_judge(server)).invoke(sample_bundle())
    assert response.failure_reason is ReasonCode.SUPPORT_JUDGE_REJECTED


@pytest.mark.parametrize(
    "steps",
    [
        (Error(500), Error(500)),
        (Reply(text="I think it is supported."), Reply(text="yes")),
        (Reply(text='{"verdict": "maybe", "score": 0.5}'), _verdict("supported", 0.9)),
        (Reply(text='{"verdict": "supported", "score": 7}'), _verdict("supported", 0.9)),
    ],
    ids=["server-error", "not-json", "unknown-verdict", "score-out-of-range"],
)
def test_a_judge_that_errs_or_breaks_its_contract_fails_the_request_closed(server, steps):
    server.script(*steps)
    response = _chain(_judge(server)).invoke(sample_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.SUPPORT_JUDGE_FAILED


def test_a_judge_past_its_deadline_fails_the_request_closed(server):
    settings = JUDGED.support_judge.model_copy(update={"timeout_seconds": 0.5})
    policy = JUDGED.model_copy(
        update={"policy_version": "FAST_JUDGE_V1", "support_judge": settings}
    )
    server.script(Slow(3.0), Slow(3.0))
    response = _chain(_judge(server), policy).invoke(sample_bundle())
    assert response.failure_reason is ReasonCode.SUPPORT_JUDGE_FAILED


def test_a_flagging_policy_records_the_verdict_and_passes(server):
    settings = JUDGED.support_judge.model_copy(update={"mode": "flag", "on_error": "flag"})
    policy = JUDGED.model_copy(
        update={"policy_version": "FLAG_JUDGE_V1", "support_judge": settings}
    )
    server.script(_verdict("unsupported", 0.1), _verdict("unsupported", 0.1))
    stage = ValidateAnswer(policy=policy, judge=_judge(server))
    chain = _chain(_judge(server), policy)
    answered = (chain.steps[0] | chain.steps[1] | chain.steps[2]).invoke(sample_bundle())
    state = stage.invoke(answered)
    assert state.status is GenerationStatus.OK
    result = state.validation
    assert result.generation_status is GenerationStatus.OK
    assert result.judge is not None
    assert [(v.sentence, v.supported) for v in result.judge.verdicts] == [(1, False), (2, False)]
    assert result.judge.judge == "gpt-4.1-mini"
    assert result.judge.prompt_sha256 == load_judge_prompt("judge_prompt_v1").sha256
    judged = [(f.rule, f.mode, f.sentence) for f in result.findings if f.rule == "support_judge"]
    assert judged == [("support_judge", "flag", 1), ("support_judge", "flag", 2)]


def test_the_judge_never_sees_an_answer_the_rules_rejected(server):
    response = _chain(
        _judge(server), answer="Replace the filter every 250 operating hours. [C0]"
    ).invoke(sample_bundle())
    assert response.failure_reason is ReasonCode.UNSUPPORTED_VALUE
    assert server.requests == []


def test_any_runnable_can_judge_and_its_name_is_recorded():
    calls: list[dict[str, Any]] = []

    def entails(request: dict[str, Any]) -> dict[str, Any]:
        calls.append(request)
        return {"supported": "3.5 bar" not in request["sentence"], "score": 0.9}

    judge = RunnableLambda(entails, name="nli-judge")
    stage = ValidateAnswer(policy=JUDGED, judge=judge)
    chain = _chain(judge)
    answered = (chain.steps[0] | chain.steps[1] | chain.steps[2]).invoke(sample_bundle())
    state = stage.invoke(answered)
    assert state.outcome.reason is ReasonCode.SUPPORT_JUDGE_REJECTED
    result = state.validation
    assert result.failure_reason is ReasonCode.SUPPORT_JUDGE_REJECTED
    assert result.judge is not None
    assert result.judge.judge == "nli-judge"
    assert len(calls) == 2


async def test_the_async_path_judges_the_same_way(server):
    server.script(_verdict("supported", 0.95), _verdict("unsupported", 0.2))
    response = await _chain(_judge(server)).ainvoke(sample_bundle())
    assert response.failure_reason is ReasonCode.SUPPORT_JUDGE_REJECTED


def test_a_judge_and_a_policy_must_agree_at_construction(server):
    with pytest.raises(GroundlockError, match="requires a support judge"):
        grounded_answer_chain(policy="R2_POLICY_V2_JUDGED")
    with pytest.raises(GroundlockError, match="names no support_judge"):
        grounded_answer_chain(policy="R2_POLICY_V2", judge=_judge(server))


def test_the_audit_row_records_the_judge(server, tmp_path):
    from groundlock import DeltaAuditStore, ValidationRow  # noqa: PLC0415

    server.script(_verdict("supported", 0.95), _verdict("unsupported", 0.2))
    store = DeltaAuditStore(str(tmp_path / "audit"))
    chain = grounded_answer_chain(
        model=ScriptedChatModel(text=ANSWER), policy=JUDGED, judge=_judge(server), store=store
    )
    chain.invoke(sample_bundle())
    store.flush()
    (row,) = store.select(ValidationRow)
    assert row.judge == "gpt-4.1-mini"
    assert row.judge_prompt_sha256 == load_judge_prompt("judge_prompt_v1").sha256
    # (the two requests go out together: which verdict answers which sentence varies)
    assert sorted(v.split(":", 1)[1] for v in row.judge_verdicts or ()) == [
        "supported:0.950",
        "unsupported:0.200",
    ]
    assert row.failure_reason == "SUPPORT_JUDGE_REJECTED"
    store.close()
