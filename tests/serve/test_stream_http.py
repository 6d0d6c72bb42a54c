"""The served stream routes over real HTTP: judged sentences as they settle, one record.

uvicorn serves the app on a loopback port in a thread; httpx reads the event stream as a
browser would, and goes away mid-answer.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from groundlock import grounded_answer_chain, load_policy
from groundlock.serve import create_app
from groundlock.stores.sink import MemoryAuditSink
from tests.builders import make_bundle
from tests.fakes.chat import TokenStreamModel

ROWS = [
    {"chunk_id": "c0", "rank": 0, "similarity": 0.91, "knowledge_id": "K0",
     "chunk_text": "Replace the case drain filter every 500 operating hours."},
    {"chunk_id": "c1", "rank": 1, "similarity": 0.88, "knowledge_id": "K1",
     "chunk_text": "Tighten the filter housing bolts to 40 Nm."},
]  # fmt: skip
ANSWER = (
    "Replace the case drain filter every 500 operating hours. [C0] "
    "Tighten the filter housing bolts to 40 Nm. [C1] "
) * 3


def _tokens(text: str) -> list[str]:
    words = text.strip().split(" ")
    return [word if index == 0 else " " + word for index, word in enumerate(words)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def _serving(app: Any) -> Iterator[str]:
    # sse-starlette keeps one exit event per process, bound to the first server's loop.
    import sse_starlette.sse  # noqa: PLC0415

    sse_starlette.sse.AppStatus.should_exit_event = None
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


def _served(seconds_per_token: float) -> tuple[Any, MemoryAuditSink]:
    policy = load_policy().model_copy(
        update={"policy_version": "STREAM_HTTP_V1", "stream_mode": "progressive"}
    )
    store = MemoryAuditSink()
    chain = grounded_answer_chain(
        model=TokenStreamModel(tokens=_tokens(ANSWER), seconds_per_token=seconds_per_token),
        policy=policy,
        store=store,
    )
    return create_app(chain, policy=policy, api_keys={}), store


def _events(lines: Iterator[str]) -> Iterator[tuple[float, dict[str, Any]]]:
    for line in lines:
        if line.startswith("data:"):
            data = json.loads(line[5:])
            if isinstance(data, dict) and "type" in data:
                yield time.monotonic(), data


@pytest.mark.slow
@pytest.mark.parametrize("route", ["stream", "stream_events"])
def test_a_progressive_stream_reaches_the_client_sentence_by_sentence(route: str) -> None:
    app, store = _served(seconds_per_token=0.02)
    with _serving(app) as url, httpx.Client(timeout=30) as client:
        started = time.monotonic()
        with client.stream("POST", f"{url}/answer/{route}", json={"input": _bundle()}) as reply:
            assert reply.status_code == 200
            if route == "stream":
                seen = list(_events(reply.iter_lines()))
            else:
                seen = [
                    (at, event["data"]["chunk"])
                    for at, event in _chunks_of_events(reply.iter_lines())
                ]
    kinds = [event["type"] for _, event in seen]
    assert kinds == ["answer_delta"] * 6 + ["response"]
    assert seen[-1][1]["response"]["status"] == "OK"
    # The first sentence arrived while the model was still writing (it takes ~0.9 s).
    assert seen[0][0] - started < (seen[-1][0] - started) / 2
    [row] = store.validations
    assert row.stream_mode == "progressive"


def _chunks_of_events(lines: Iterator[str]) -> Iterator[tuple[float, dict[str, Any]]]:
    for line in lines:
        if line.startswith("data:"):
            data = json.loads(line[5:])
            if isinstance(data, dict) and data.get("event") == "on_chain_stream":
                yield time.monotonic(), data


@pytest.mark.slow
@pytest.mark.parametrize("route", ["stream", "stream_events"])
def test_a_client_that_goes_away_mid_stream_leaves_one_record(route: str) -> None:
    app, store = _served(seconds_per_token=0.05)
    with _serving(app) as url:
        with (
            httpx.Client(timeout=30) as client,
            client.stream("POST", f"{url}/answer/{route}", json={"input": _bundle()}) as reply,
        ):
            for line in reply.iter_lines():
                if line.startswith("data:") and "answer_delta" in line:
                    break  # one sentence read, then the client leaves
        deadline = time.monotonic() + 10
        while not store.validations and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a second record, if any, would come now
    [row] = store.validations
    assert (row.status, row.failure_reason) == ("FAILED", "CLIENT_DISCONNECTED")
    assert row.streamed_before_verdict  # what the client was shown before it left


def _bundle() -> dict[str, Any]:
    return make_bundle(ROWS, user_question="How often is the filter replaced, at what torque?")


@pytest.mark.slow
def test_remote_runnable_streams_good_sentences_then_the_retraction_of_a_failed_answer() -> None:
    from langserve import RemoteRunnable  # noqa: PLC0415

    bad = ANSWER.strip() + " Torque the bolts to 95 Nm with tool ZEBRA-PLUM-7. [C1]"
    policy = load_policy().model_copy(
        update={"policy_version": "STREAM_HTTP_V1", "stream_mode": "progressive"}
    )
    store = MemoryAuditSink()
    chain = grounded_answer_chain(
        model=TokenStreamModel(tokens=_tokens(bad)), policy=policy, store=store
    )
    with _serving(create_app(chain, policy=policy, api_keys={})) as url:
        remote = RemoteRunnable(f"{url}/answer")
        events = list(remote.stream(_bundle()))

        async def through_events() -> list[Any]:
            return [event async for event in remote.astream_events(_bundle(), version="v2")]

        import asyncio  # noqa: PLC0415

        streamed = asyncio.run(through_events())
    kinds = [event["type"] for event in events]
    assert kinds == ["answer_delta"] * 6 + ["retract", "response"]
    assert events[-2]["indexes"] == list(range(6))
    assert events[-1]["response"]["failure_reason"] == "UNSUPPORTED_VALUE"
    assert "ZEBRA-PLUM-7" not in json.dumps(events)
    assert "ZEBRA-PLUM-7" not in json.dumps(streamed, default=str)
    assert len(store.validations) == 2
