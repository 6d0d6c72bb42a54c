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


def _stream(chain: Any, how: str) -> list[Any]:
    if how == "stream":
        return list(chain.stream(_bundle()))

    async def collect() -> list[Any]:
        if how == "astream":
            return [event async for event in chain.astream(_bundle())]
        events = [event async for event in chain.astream_events(_bundle(), version="v2")]
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


@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_sentence_split_into_single_characters_streams_whole(mode: str) -> None:
    chain, _ = _chain(list(GOOD), mode)
    events = list(chain.stream(_bundle()))
    assert [e.text for e in events[:-1]] == [
        "Replace the case drain filter every 500 operating hours. [C0]",
        " Tighten the filter housing bolts to 40 Nm. [C1]",
        " Record the filter change in the maintenance log. [C2]",
    ]


def test_an_anchor_split_across_tokens_is_read_whole() -> None:
    first, second = GOOD.split(" [C1] ")
    tokens = [first[:-5], first[-5:-1], first[-1], " [", "C", "1", "]", " ", *_words(second)]
    assert "".join(tokens) == f"{first} [C1] {second}"
    chain, _ = _chain(tokens, "progressive")
    events = list(chain.stream(_bundle()))
    assert events[-1].response.status is GenerationStatus.OK
    assert [c.anchor for c in events[0].citations] == ["C0"]
    assert [c.anchor for c in events[1].citations] == ["C1"]


@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_model_that_stops_mid_sentence_shows_no_partial_sentence(mode: str) -> None:
    cut = GOOD[: GOOD.index("Record the filter") + len("Record the fil")]
    chain, _ = _chain(_words(cut), mode)
    events = list(chain.stream(_bundle()))
    assert events[-1].response.status is GenerationStatus.FAILED
    assert "Record" not in repr(events[:-1])
    if mode == "progressive":
        assert _shape(events) == ["answer_delta", "answer_delta", "retract", "response"]


@pytest.mark.parametrize("how", ["stream", "astream"])
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


@pytest.mark.parametrize("mode", ["buffered", "progressive"])
def test_a_refusal_streams_as_the_response_alone(mode: str) -> None:
    chain, store = _chain(_words("x"), mode)
    far = [dict(row, similarity=0.1) for row in ROWS]
    events = list(chain.stream(make_bundle(far)))
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
