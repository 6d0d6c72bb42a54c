"""``groundlock serve`` over real HTTP: uvicorn on a loopback port, ``RemoteRunnable`` as
the client, and two forked workers each writing audit rows (reliability notes T21)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langserve import RemoteRunnable

from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from tests.builders import make_bundle

KEY = "integration-key-0123456789"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    store = tmp_path_factory.mktemp("served") / "audit"
    port = _free_port()
    environment = {**os.environ, "GROUNDLOCK_API_KEYS": f"tech-9:mechanic:{KEY}"}
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


def _client(url: str) -> RemoteRunnable:
    return RemoteRunnable(f"{url}/answer", headers={"X-API-Key": KEY})


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


def test_without_the_key_nothing_runs(served: tuple[str, Path]) -> None:
    url, _ = served
    response = httpx.post(f"{url}/answer/invoke", json={"input": make_bundle()}, timeout=10)
    assert response.status_code == 401


def test_each_worker_writes_its_audit_rows(served: tuple[str, Path]) -> None:
    # Many requests over fresh connections reach both workers; every one is recorded.
    url, store = served
    ids = [f"http-w{i}" for i in range(40)]
    for request_id in ids:
        with httpx.Client(timeout=10) as client:  # a new connection, a fresh worker choice
            response = client.post(
                f"{url}/answer/invoke",
                json={"input": make_bundle(request_id=request_id)},
                headers={"X-API-Key": KEY},
            )
            assert response.json()["output"]["status"] == "OK"
    deadline = time.monotonic() + 30
    audit = DeltaAuditStore(store)
    while time.monotonic() < deadline:
        recorded = {row.request_id for row in audit.select(ValidationRow)}
        if set(ids) <= recorded:
            break
        time.sleep(0.5)
    assert set(ids) <= recorded
    assert len(_writers(store / "validations")) >= 2, "one worker did all the writing"
    queries = {row.request_id: row for row in audit.select(QueryRow)}
    assert queries["http-w0"].requester_id == "tech-9"
    assert queries["http-w0"].requester_role == "mechanic"


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
