"""Hostile clients over real HTTP (issue 27, items 1-6): body shapes, slow clients, the
deadline and disconnects, planted re-execution keys, one error shape.

Each test runs the real app under a real uvicorn (in a thread of the test process, with the
protocol ``groundlock serve`` uses), a real Delta store, and, where a test needs a slow
model, the real ``ChatOpenAI`` against the local fake OpenAI server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from langchain_openai import ChatOpenAI

from groundlock import grounded_answer_chain, load_policy
from groundlock.policies.loader import lock_policy
from groundlock.serve import Requester, ServeLimits, create_app
from groundlock.serve.limits import least_request_timeout
from groundlock.serve.protocol import UVICORN_OPTIONS
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from tests.builders import make_bundle, make_row, policy_with
from tests.fakes.openai_server import FakeOpenAI, Slow

ATTACKER_KEY = "key-of-the-attacker-0123"
GOOD_KEY = "key-of-a-good-client-0123"
KEYS = {
    ATTACKER_KEY: Requester("mallory", "mechanic"),
    GOOD_KEY: Requester("alice", "mechanic"),
}
ATTACKER = {"X-API-Key": ATTACKER_KEY}
GOOD = {"X-API-Key": GOOD_KEY}
CANARY = f"CANARY-{uuid.uuid4().hex}"
READ_TIMEOUT = 1.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module", autouse=True)
def _short_reads() -> Iterator[None]:
    # The header timeout is read from the environment per connection, as in a worker.
    saved = os.environ.get("GROUNDLOCK_READ_TIMEOUT_SECONDS")
    os.environ["GROUNDLOCK_READ_TIMEOUT_SECONDS"] = str(READ_TIMEOUT)
    yield
    if saved is None:
        del os.environ["GROUNDLOCK_READ_TIMEOUT_SECONDS"]
    else:
        os.environ["GROUNDLOCK_READ_TIMEOUT_SECONDS"] = saved


class Served:
    """An app under a real uvicorn on a loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.port = _free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", **UVICORN_OPTIONS
        )  # (what groundlock serve runs)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def _limits(**values: Any) -> ServeLimits:
    return ServeLimits(read_timeout_seconds=READ_TIMEOUT, **values)


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, DeltaAuditStore]]:
    store = DeltaAuditStore(tmp_path_factory.mktemp("hostile") / "audit")
    chain = grounded_answer_chain(store=store)
    app = create_app(chain, api_keys=KEYS, limits=_limits(max_in_flight=4))
    with Served(app) as served:
        yield served, store


def _rows(store: DeltaAuditStore, row_type: type[Any] = ValidationRow) -> list[Any]:
    store.flush()  # (the server's own store object: its spool is committed now)
    try:
        return list(store.select(row_type))
    except Exception:  # noqa: BLE001  (no table yet: no rows)
        return []


MALFORMED = [
    ("/answer/batch", {"inputs": "x" * 400}),
    ("/answer/batch", {"inputs": {f"k{i}": make_bundle() for i in range(5)}}),
    ("/answer/batch", {"inputs": None}),
    ("/answer/batch", {"inputs": 5}),
    ("/answer/batch", {"inputs": [make_bundle(), "x"]}),
    ("/answer/batch", {"inputs": [make_bundle()], "config": None}),
    ("/answer/batch", {"inputs": [make_bundle()], "config": [{}, {}]}),
    ("/answer/batch", {}),
    ("/answer/invoke", {"input": "x" * 40}),
    ("/answer/invoke", {"input": None}),
    ("/answer/invoke", {"input": [make_bundle()]}),
    ("/answer/invoke", {"input": make_bundle(), "config": "x"}),
    ("/answer/invoke", {"input": make_bundle(), "kwargs": []}),
    ("/answer/invoke", {"input": make_bundle(), CANARY: 1}),
    ("/answer/invoke", {"inputs": [make_bundle()]}),
    ("/answer/invoke", {"input": make_bundle(run_id="run-1~1")}),
    ("/answer/batch", {"inputs": [make_bundle(run_id=f"x~{'0' * 16}")]}),
]


def test_a_body_of_the_wrong_shape_is_422_before_any_work(
    offline: tuple[Served, DeltaAuditStore],
) -> None:
    # Item 1 and 2: a string of inputs ran once per character (400 outputs, 400 rows), an
    # object once per key; null and a number were 500s that broke the connection.
    served, store = offline
    before = len(_rows(store))
    with httpx.Client(base_url=served.url, headers=GOOD, timeout=10) as client:
        for route, body in MALFORMED:
            response = client.post(route, content=json.dumps(body).encode())
            assert response.status_code == 422, (route, str(body)[:80], response.text)
            error = response.json()["error"]
            assert error["code"] == "INVALID_REQUEST"
            assert CANARY not in response.text
            assert "x" * 40 not in response.text
        # The same keep-alive connection still answers (no 500 broke it).
        answer = client.post("/answer/invoke", json={"input": make_bundle(request_id="after")})
        assert answer.json()["output"]["status"] == "OK"
    assert len(_rows(store)) == before + 1  # the malformed bodies wrote nothing


def test_every_error_has_one_shape_and_echoes_nothing(
    offline: tuple[Served, DeltaAuditStore],
) -> None:
    # Item 6: FastAPI's own 404, 405 and 422 bodies were {"detail": ...}, its 422 echoing.
    served, _ = offline
    with httpx.Client(base_url=served.url, headers=GOOD, timeout=10) as client:
        answers = [
            client.get("/nowhere"),
            client.post("/nowhere", json={"input": CANARY}),
            client.get("/answer/invoke"),
            client.post("/answer/invoke", content=b"[1, 2]"),
            client.post("/answer/invoke", content=CANARY.encode()),
            client.post("/answer/invoke", json={"input": make_bundle()}, headers={"X-API-Key": ""}),
            client.post("/answer/batch", json={"inputs": [{"q": CANARY}] * 17}),
        ]
    assert [a.status_code for a in answers] == [404, 404, 405, 422, 422, 401, 413]
    for answer in answers:
        assert set(answer.json()) == {"error"}, answer.text
        assert set(answer.json()["error"]) == {"code", "message"}
        assert CANARY not in answer.text


def _slow_body(port: int, path: str = "/answer/invoke") -> socket.socket:
    """A connection that sends its headers and a few bytes of a 2,000-byte body, then waits."""
    connection = socket.create_connection(("127.0.0.1", port))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"X-API-Key: {ATTACKER_KEY}\r\nContent-Length: 2000\r\n\r\n"
    )
    connection.sendall(head.encode() + b'{"input": ')
    return connection


def _closed_within(connection: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing ``connection``; fails if it stays open."""
    connection.settimeout(seconds)
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except TimeoutError:
        pytest.fail(f"the server kept the connection open past {seconds} s: {received[:200]!r}")
    finally:
        connection.close()
    return received


@pytest.mark.slow
def test_slow_bodies_hold_no_slot_and_are_cut_at_the_read_timeout(
    offline: tuple[Served, DeltaAuditStore],
) -> None:
    # Item 3: the slot was taken before the body was read, with no deadline on reading it:
    # 128 unfinished bodies made every other client get 503. Here four slots, twelve.
    served, _ = offline
    slow = [_slow_body(served.port) for _ in range(12)]
    time.sleep(0.2)
    with httpx.Client(base_url=served.url, headers=GOOD, timeout=10) as client:
        for i in range(6):
            answer = client.post("/answer/invoke", json={"input": make_bundle(request_id=f"g{i}")})
            assert answer.status_code == 200, answer.text
    started = time.monotonic()
    for connection in slow:
        received = _closed_within(connection, READ_TIMEOUT + 5)
        assert received.startswith(b"HTTP/1.1 408"), received[:100]
        assert b"REQUEST_TIMEOUT" in received
    assert time.monotonic() - started < READ_TIMEOUT + 5


@pytest.mark.slow
def test_slow_headers_are_cut_at_the_read_timeout(offline: tuple[Served, DeltaAuditStore]) -> None:
    # The same class one step earlier: uvicorn bounds no request's headers, so a client
    # that never finishes them (or never sends a byte) kept its connection forever.
    served, _ = offline
    partial = socket.create_connection(("127.0.0.1", served.port))
    partial.sendall(b"POST /answer/invoke HTTP/1.1\r\nHost: x\r\n")
    silent = socket.create_connection(("127.0.0.1", served.port))
    trickle = socket.create_connection(("127.0.0.1", served.port))
    trickle.sendall(b"POST /answer/invoke HTTP/1.1\r\n")
    started = time.monotonic()
    cut = False
    while not cut and time.monotonic() - started < READ_TIMEOUT + 5:
        try:  # a header line every quarter second: cut all the same
            trickle.sendall(b"X-More: 1\r\n")
        except OSError:
            cut = True
        time.sleep(0.25)
    assert cut
    assert READ_TIMEOUT * 0.8 < time.monotonic() - started < READ_TIMEOUT + 5
    trickle.close()
    for connection in (partial, silent):
        _closed_within(connection, READ_TIMEOUT + 5)
    # A keep-alive client between requests is not cut by it: the next request is served.
    with httpx.Client(base_url=served.url, headers=GOOD, timeout=10) as client:
        for i in range(2):
            answer = client.post("/answer/invoke", json={"input": make_bundle(request_id=f"k{i}")})
            assert answer.status_code == 200
            time.sleep(READ_TIMEOUT + 0.3)


# -- the deadline and disconnects: a slow model behind the real OpenAI client ---------------

SHORT = policy_with(
    policy_version="SHORT_SERVE_V1",
    execution={**load_policy().execution.model_dump(), "max_attempts": 1,
               "request_deadline_seconds": 2.0, "attempt_timeout_seconds": 2.0},
)  # fmt: skip


@pytest.fixture(scope="module")
def slow_model(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Served, DeltaAuditStore, FakeOpenAI]]:
    store = DeltaAuditStore(tmp_path_factory.mktemp("deadline") / "audit")
    with FakeOpenAI() as openai:
        model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=openai.url)  # type: ignore[arg-type]
        chain = grounded_answer_chain(model=model, policy=SHORT, store=store)
        limits = _limits(
            request_timeout_seconds=least_request_timeout(SHORT), batch_concurrency=1,
            max_in_flight=2,
        )  # fmt: skip
        app = create_app(chain, policy=SHORT, api_keys=KEYS, limits=limits)
        with Served(app) as served:
            yield served, store, openai


def _bundle(request_id: str) -> dict[str, Any]:
    text = "The seal is replaced every 500 hours."
    return make_bundle([make_row(0, chunk_text=text, similarity=0.9)], request_id=request_id)


def _recorded(
    store: DeltaAuditStore, ids: set[str], row_type: type[Any] = ValidationRow
) -> list[Any]:
    deadline = time.monotonic() + 20
    while True:
        rows = [r for r in _rows(store, row_type) if r.request_id in ids]
        if {r.request_id for r in rows} >= ids or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


@pytest.mark.slow
def test_a_request_cut_by_the_deadline_is_recorded_once(
    slow_model: tuple[Served, DeltaAuditStore, FakeOpenAI],
) -> None:
    # Item 4: a 504 left no record though the model was called. The deadline (3 s, the
    # least under a 2 s model deadline) cuts a batch of four 1.8 s answers run one at a
    # time: the first is answered and recorded as such; the one the model was answering
    # and the two not started are recorded FAILED DEADLINE_EXCEEDED. Four requests, four
    # records, two model calls.
    served, store, openai = slow_model
    openai.script(*[Slow(1.8)] * 4)
    calls = len(openai.requests)
    ids = [f"cut-{i}" for i in range(4)]
    started = time.monotonic()
    response = httpx.post(
        f"{served.url}/answer/batch", json={"inputs": [_bundle(i) for i in ids]},
        headers=GOOD, timeout=30,
    )  # fmt: skip
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "DEADLINE_EXCEEDED"
    assert time.monotonic() - started < least_request_timeout(SHORT) + 1.5
    assert len(openai.requests) - calls == 2  # paid for, and recorded below
    rows = _recorded(store, set(ids))
    assert sorted(r.request_id for r in rows) == ids  # exactly one record each
    by_id = {r.request_id: (r.status, r.failure_reason) for r in rows}
    assert by_id.pop("cut-0") == ("OK", None)
    assert set(by_id.values()) == {("FAILED", "DEADLINE_EXCEEDED")}
    queries = _recorded(store, set(ids), QueryRow)
    assert sorted(q.request_id for q in queries) == ids
    assert {q.requester_id for q in queries} == {"alice"}
    # The slots are back at once (the cut work was cancelled, not left running).
    openai.script()
    again = httpx.post(
        f"{served.url}/answer/invoke", json={"input": _bundle("after-cut")}, headers=GOOD,
        timeout=30,
    )  # fmt: skip
    assert again.json()["output"]["status"] == "OK"


@pytest.mark.slow
def test_a_client_that_goes_away_frees_its_slot_and_is_recorded(
    slow_model: tuple[Served, DeltaAuditStore, FakeOpenAI],
) -> None:
    # "Release the slot on disconnect": two slots, two clients that go away while the
    # model is slow; the next request is admitted at once, and the two are recorded.
    served, store, openai = slow_model
    openai.script(Slow(1.9), Slow(1.9))
    gone = []
    for i in range(2):
        body = json.dumps({"input": _bundle(f"gone-{i}")}).encode()
        connection = socket.create_connection(("127.0.0.1", served.port))
        connection.sendall(
            b"POST /answer/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"X-API-Key: {GOOD_KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        gone.append(connection)
    time.sleep(0.5)  # both in flight, each waiting for the model
    for connection in gone:
        connection.close()
    time.sleep(0.3)
    answer = httpx.post(
        f"{served.url}/answer/invoke", json={"input": _bundle("beside")}, headers=GOOD,
        timeout=30,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    rows = _recorded(store, {"gone-0", "gone-1"})
    assert sorted((r.request_id, r.failure_reason) for r in rows) == [
        ("gone-0", "CLIENT_DISCONNECTED"),
        ("gone-1", "CLIENT_DISCONNECTED"),
    ]


@pytest.mark.slow
def test_the_start_check_reads_the_policy_the_workers_will_read(tmp_path: Path) -> None:
    # GROUNDLOCK_POLICY (documented) was not what the check loaded: a policy whose model
    # deadline needs 220 s passed with 120 s, and the workers then failed, again and again.
    builtin = Path(str(resources.files("groundlock.policies"))) / "R2_POLICY_V3.json"
    data = json.loads(builtin.read_text(encoding="utf-8"))
    data["policy_version"] = "SLOW_MODEL_V1"
    data["execution"]["request_deadline_seconds"] = 200.0
    path = tmp_path / "SLOW_MODEL_V1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    lock_policy(path)
    result = subprocess.run(
        [str(Path(sys.executable).with_name("groundlock")), "serve", "--port", "1",
         "--request-timeout-seconds", "120"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "GROUNDLOCK_POLICY": str(path)},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "at least 220 s under SLOW_MODEL_V1" in result.stderr


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--request-timeout-seconds", "5"], "request_timeout_seconds must be at least 99 s"),
        (["--read-timeout-seconds", "0"], "read_timeout_seconds must be positive"),
        (["--request-timeout-seconds", "1e30"], "request_timeout_seconds must be positive"),
    ],
)
@pytest.mark.slow
def test_a_deadline_the_policy_cannot_keep_is_refused_at_start(flags: list[str], says: str) -> None:
    # Item 4's second half: a serving deadline below the model's own would cut, as 504s,
    # requests the policy lets end in their own audited outcome. Refused before any worker.
    result = subprocess.run(
        [str(Path(sys.executable).with_name("groundlock")), "serve", "--port", "1", *flags],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_requests_cut_while_their_audit_write_waits_are_each_recorded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A slow disk (every fsync takes 0.2 s) and more requests than the executor has
    # threads: most audit writes are queued when the clients go away. A queued write that
    # the cancellation dropped left no record at all (the stage had started, so the server
    # did not record the request either). Each request: exactly one record.
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.2)
        real_fsync(fd)

    store = DeltaAuditStore(tmp_path / "audit")
    app = create_app(grounded_answer_chain(store=store), api_keys=KEYS, limits=_limits())
    ids = [f"queued-{i}" for i in range(48)]
    with Served(app) as served:
        monkeypatch.setattr(os, "fsync", slow_fsync)
        clients = []
        for request_id in ids:
            body = json.dumps({"input": make_bundle(request_id=request_id)}).encode()
            connection = socket.create_connection(("127.0.0.1", served.port))
            connection.sendall(
                b"POST /answer/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"X-API-Key: {GOOD_KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            clients.append(connection)
        time.sleep(0.3)
        for connection in clients:
            connection.close()
        time.sleep(1.0)
        monkeypatch.setattr(os, "fsync", real_fsync)
        rows = _recorded(store, set(ids))
    assert sorted(r.request_id for r in rows) == sorted(ids)
    assert {r.failure_reason for r in rows} <= {None, "CLIENT_DISCONNECTED"}


@pytest.mark.slow
def test_a_client_that_reads_no_responses_is_cut(offline: tuple[Served, DeltaAuditStore]) -> None:
    # Pipelined requests whose answers are never read: writing pauses, no timer ran, and
    # the connection (with a slot, on a gated route) stayed as long as the client liked.
    # Never reading, the client learns of the cut when a send of its own is refused.
    served, _ = offline
    client = socket.socket()
    try:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        client.connect(("127.0.0.1", served.port))
        client.settimeout(0.0)  # non-blocking
        request = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        pending, started = request * 20000, time.monotonic()
        cut = False
        while not cut and time.monotonic() - started < READ_TIMEOUT + 30:
            try:
                pending = pending[client.send(pending or request) :]
            except BlockingIOError:
                time.sleep(0.05)  # the server's buffers are full: it is not reading either
            except OSError:  # reset, or a broken pipe: the server cut the connection
                cut = True
        assert cut, "the server kept a connection that reads nothing"
    finally:
        client.close()


def test_deep_json_and_a_non_ascii_key_are_4xx_not_500(
    offline: tuple[Served, DeltaAuditStore],
) -> None:
    # JSON nested just under the gate's parser limit overflowed LangServe's second parse
    # (500, traceback); an X-API-Key outside ASCII made compare_digest raise (500).
    served, _ = offline
    with httpx.Client(base_url=served.url, headers=GOOD, timeout=30) as client:
        for depth in (65, 500, 960, 966, 970, 2000, 100_000):
            body = '{"input": {"request_id": "d"}, "kwargs": {"a": ' + "[" * depth
            body += "]" * depth + "}}"
            response = client.post("/answer/invoke", content=body.encode())
            assert response.status_code == 422, (depth, response.text[:200])
            assert response.json()["error"]["code"] == "INVALID_JSON"
        shallow = client.post("/answer/invoke", json={"input": make_bundle(request_id="shallow")})
        assert shallow.json()["output"]["status"] == "OK"
    for key in ("ключ-0123456789abcdef", "é" * 24, GOOD_KEY[:-1] + "\u00ff"):
        response = httpx.post(
            f"{served.url}/answer/invoke",
            content=json.dumps({"input": make_bundle()}).encode(),
            headers=[(b"X-API-Key", key.encode())],
            timeout=10,
        )
        assert response.status_code == 401, response.text
        assert response.json()["error"]["code"] == "UNAUTHORIZED"
    # No slash redirect either (it was a 307 to a URL built from the client's Host).
    moved = httpx.post(
        f"{served.url}/answer/invoke/", json={"input": make_bundle()}, headers=GOOD, timeout=10
    )
    assert moved.status_code == 404
    assert "location" not in moved.headers


@pytest.mark.slow
def test_a_forwarded_for_header_does_not_make_one_client_many(
    slow_model: tuple[Served, DeltaAuditStore, FakeOpenAI],
) -> None:
    # Keys off, one request at a time per client (its address). uvicorn trusted
    # X-Forwarded-For from loopback by default: a new value per request was a new client.
    _, store, openai = slow_model
    model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=openai.url)  # type: ignore[arg-type]
    chain = grounded_answer_chain(model=model, policy=SHORT, store=store)
    limits = _limits(request_timeout_seconds=least_request_timeout(SHORT),
                     max_in_flight_per_client=1)  # fmt: skip
    app = create_app(chain, policy=SHORT, api_keys={}, limits=limits)
    openai.script(Slow(1.5))
    with Served(app) as served:
        held = threading.Thread(
            target=httpx.post, args=(f"{served.url}/answer/invoke",),
            kwargs={"json": {"input": _bundle("held")}, "timeout": 30},
        )  # fmt: skip
        held.start()
        time.sleep(0.5)
        other = httpx.post(
            f"{served.url}/answer/invoke", json={"input": _bundle("forwarded")},
            headers={"X-Forwarded-For": "203.0.113.9"}, timeout=30,
        )  # fmt: skip
        held.join(30)
    assert other.status_code == 429
    assert other.json()["error"]["code"] == "TOO_MANY_REQUESTS"
