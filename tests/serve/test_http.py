"""``groundlock serve`` over real HTTP: uvicorn on a loopback port, ``RemoteRunnable`` as
the client, and two forked workers each writing audit rows (reliability notes T21)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from langserve import RemoteRunnable

from groundlock.stores import AuditUnavailable, DeltaAuditStore, QueryRow, ValidationRow
from tests.builders import make_bundle, make_row

KEY = "integration-key-0123456789"
OTHER_KEY = "integration-key-of-another-one"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    store = tmp_path_factory.mktemp("served") / "audit"
    port = _free_port()
    keys = f"tech-9:mechanic:{KEY},tech-7:mechanic:{OTHER_KEY}"
    environment = {**os.environ, "GROUNDLOCK_API_KEYS": keys}
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("groundlock")), "serve", "--port", str(port),
         "--workers", "2", "--store", str(store)],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            pytest.fail(f"the server did not start: {server.communicate()[1][-2000:]}")
        time.sleep(0.2)
    yield url, store
    server.send_signal(signal.SIGTERM)  # uvicorn shuts its workers down; they flush on exit
    _, errors = server.communicate(timeout=60)
    assert "PanicException" not in errors
    assert "Traceback" not in errors
    # The start-up log names where it listens (LangServe's banner said "None/").
    assert f"groundlock serve: http://127.0.0.1:{port}/answer (2 workers)" in errors
    assert "None/" not in errors
    assert "LANGSERVE" not in errors


def _client(url: str) -> RemoteRunnable:
    return RemoteRunnable(f"{url}/answer", headers={"X-API-Key": KEY})


@pytest.mark.slow
def test_remote_runnable_invoke_batch_and_ainvoke(served: tuple[str, Path]) -> None:
    url, _ = served
    remote = _client(url)
    one = remote.invoke(make_bundle(request_id="http-1"))
    assert one["status"] == "OK"
    assert one["citations"]
    many = remote.batch([make_bundle(request_id=f"http-b{i}") for i in range(6)])
    assert [r["request_id"] for r in many] == [f"http-b{i}" for i in range(6)]
    assert {r["status"] for r in many} == {"OK"}
    bad = remote.invoke({"request_id": "http-bad"})
    assert bad["status"] == "FAILED"
    assert bad["failure_reason"] == "INPUT_SCHEMA_INVALID"


async def test_remote_runnable_ainvoke(served: tuple[str, Path]) -> None:
    url, _ = served
    answer = await _client(url).ainvoke(make_bundle(request_id="http-async"))
    assert answer["status"] == "OK"


def test_remote_runnable_streams_validated_sentences_then_the_response(
    served: tuple[str, Path],
) -> None:
    url, store = served
    events = list(_client(url).stream(make_bundle(request_id="http-stream")))
    assert [event["type"] for event in events] == ["answer_delta", "response"]
    response = events[-1]["response"]
    assert response["status"] == "OK"
    assert events[0]["text"] == response["answer"]
    assert events[0]["citations"] == response["citations"]
    [row] = _recorded(store, "http-stream", 1)
    assert row.stream_mode == "buffered"


async def test_remote_runnable_astream_events_shows_the_chain_and_its_events_only(
    served: tuple[str, Path],
) -> None:
    url, _ = served
    events = [
        event
        async for event in _client(url).astream_events(
            make_bundle(request_id="http-events"), version="v2"
        )
    ]
    names = {event["name"] for event in events}
    assert not names & {"R4.ExecuteModel", "R5.ValidateAnswer", "ExtractiveChatModel"}
    chunks = [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream"]
    assert chunks[-1]["type"] == "response"
    assert chunks[-1]["response"]["status"] == "OK"
    assert "chunk_text" not in repr([e for e in events if e["event"] != "on_chain_start"])


def test_the_stream_routes_sit_behind_the_key_and_the_limits(served: tuple[str, Path]) -> None:
    url, _ = served
    for route in ("stream", "stream_events"):
        response = httpx.post(f"{url}/answer/{route}", json={"input": make_bundle()}, timeout=10)
        assert response.status_code == 401
        response = httpx.post(
            f"{url}/answer/{route}",
            json={"input": "not a bundle"},
            headers={"X-API-Key": KEY},
            timeout=10,
        )
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "INVALID_REQUEST"
    response = httpx.post(
        f"{url}/answer/stream_events",
        json={"input": make_bundle(), "include_names": "R4.ExecuteModel"},
        headers={"X-API-Key": KEY},
        timeout=10,
    )
    assert response.status_code == 422
    assert "include_names" in response.json()["error"]["message"]


def test_without_the_key_nothing_runs(served: tuple[str, Path]) -> None:
    url, _ = served
    response = httpx.post(f"{url}/answer/invoke", json={"input": make_bundle()}, timeout=10)
    assert response.status_code == 401


@pytest.mark.slow
def test_each_worker_writes_its_audit_rows(served: tuple[str, Path]) -> None:
    # Many requests over fresh connections reach both workers; every one is recorded.
    url, store = served
    ids = [f"http-w{i}" for i in range(40)]

    def ask(request_id: str) -> str:
        with httpx.Client(timeout=30) as client:  # a new connection, a fresh worker choice
            response = client.post(
                f"{url}/answer/invoke",
                json={"input": make_bundle(request_id=request_id)},
                headers={"X-API-Key": KEY},
            )
            return str(response.json()["output"]["status"])

    # Eight at a time, and again while only one worker has written: which worker accepts a
    # connection is the kernel's choice, and on a loaded machine one may accept a round.
    audit = DeltaAuditStore(store)
    for round_number in range(5):
        batch = [f"{i}-r{round_number}" for i in ids]
        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(ask, batch)) == {"OK"}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            recorded = {row.request_id for row in audit.select(ValidationRow)}
            if set(batch) <= recorded:
                break
            time.sleep(0.5)
        assert set(batch) <= recorded  # every request of the round is recorded
        if len(_writers(store / "validations")) >= 2:
            break
    assert len(_writers(store / "validations")) >= 2, "one worker did all the writing"
    queries = {row.request_id: row for row in audit.select(QueryRow)}
    assert queries["http-w0-r0"].requester_id == "tech-9"
    assert queries["http-w0-r0"].requester_role == "mechanic"


def _writers(table: Path) -> set[str]:
    """The spool writers (one per worker process) whose commits the table's log records."""
    writers = set()
    for commit in (table / "_delta_log").glob("*.json"):
        for line in commit.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            app_id = action.get("txn", {}).get("appId", "")
            if app_id.startswith("groundlock-spool-"):
                writers.add(app_id)
    return writers


@pytest.mark.slow
def test_the_example_client_prints_a_cited_answer(served: tuple[str, Path]) -> None:
    url, _ = served
    example = Path(__file__).resolve().parents[2] / "examples" / "remote_client.py"
    result = subprocess.run(
        [sys.executable, str(example), url], capture_output=True, text=True, timeout=60,
        env={**os.environ, "GROUNDLOCK_API_KEY": KEY}, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("OK")
    assert "[C0]" in result.stdout


def _recorded(store: Path, request_id: str, count: int) -> list[ValidationRow]:
    """The validation rows of ``request_id`` once ``count`` have landed (workers flush later)."""
    audit = DeltaAuditStore(store)
    deadline = time.monotonic() + 30
    while True:
        rows = [r for r in audit.select(ValidationRow) if r.request_id == request_id]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


@pytest.mark.slow
def test_two_keys_sending_the_same_ids_leave_two_records(served: tuple[str, Path]) -> None:
    url, store = served
    shared = {"request_id": "shared-1", "run_id": "run-1"}
    refused = make_bundle([make_row(0, similarity=0.01)], **shared)
    answered = make_bundle(**shared)
    for key, bundle in ((KEY, refused), (OTHER_KEY, answered)):
        with httpx.Client(timeout=10) as client:
            response = client.post(
                f"{url}/answer/invoke", json={"input": bundle}, headers={"X-API-Key": key}
            )
            assert response.status_code == 200
    rows = _recorded(store, "shared-1", 2)
    assert sorted((r.run_id, r.status) for r in rows) == [
        ("tech-7:run-1", "OK"),
        ("tech-9:run-1", "NO_EVIDENCE"),
    ]


@pytest.mark.slow
def test_an_over_limit_batch_is_refused_at_once(served: tuple[str, Path]) -> None:
    # The attack: 4,000 tiny items took 21 s and wrote a row each; refused now
    # before anything runs. (Asserted by what was written, not by a wall-clock bound.)
    url, store = served
    response = httpx.post(
        f"{url}/answer/batch",
        json={"inputs": [{"q": i} for i in range(4000)]},
        headers={"X-API-Key": KEY},
        timeout=10,
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "BATCH_TOO_LARGE"
    # Items without a request_id would each have been recorded with a null one.
    audit = DeltaAuditStore(store)
    deadline = time.monotonic() + 3  # (longer than a worker's flush interval)
    while time.monotonic() < deadline:
        with contextlib.suppress(AuditUnavailable):  # (no table yet: nothing written)
            assert all(row.request_id is not None for row in audit.select(ValidationRow))
        time.sleep(0.5)


@pytest.mark.slow
async def test_a_saturating_client_starves_neither_health_nor_other_clients(
    served: tuple[str, Path],
) -> None:
    url, _ = served
    batch = {"inputs": [make_bundle(request_id=f"flood-{i}") for i in range(16)]}
    stop = asyncio.Event()
    outcomes: list[int] = []

    async def flood(client: httpx.AsyncClient) -> None:
        while not stop.is_set():
            response = await client.post(
                f"{url}/answer/batch", json=batch, headers={"X-API-Key": OTHER_KEY}
            )
            outcomes.append(response.status_code)

    limits = httpx.Limits(max_connections=100)
    async with (
        httpx.AsyncClient(timeout=60, limits=limits) as flooder,
        httpx.AsyncClient(timeout=60) as other,
    ):
        floods = [asyncio.create_task(flood(flooder)) for _ in range(24)]
        await asyncio.sleep(1.0)  # saturated: 24 maximal batches at a time
        health = []
        for _ in range(5):
            started = time.monotonic()
            assert (await other.get(f"{url}/health")).status_code == 200
            health.append(time.monotonic() - started)
        answer = await other.post(
            f"{url}/answer/invoke",
            json={"input": make_bundle(request_id="beside-the-flood")},
            headers={"X-API-Key": KEY},
        )
        stop.set()
        await asyncio.gather(*floods)
    assert answer.json()["output"]["status"] == "OK"
    assert max(health) < 2.0, health
    assert 200 in outcomes  # the flood was served too, not merely refused
