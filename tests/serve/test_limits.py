"""Serving under load, in process: batch limits, in-flight bounds, the deadline, identity.

The real FastAPI app and LangServe routes, driven concurrently through httpx's ASGI
transport; the served chain is the real offline chain, held at a gate where a test needs
requests to stay in flight. The same properties over real HTTP (uvicorn, a saturating
client) are in ``test_http.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.runnables import RunnableLambda

from groundlock import grounded_answer_chain, load_policy
from groundlock.contracts.response import PublicResponse
from groundlock.serve import Requester, ServeLimits, create_app
from groundlock.serve.limits import least_request_timeout
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from tests.builders import make_bundle, make_row, policy_with

KEYS = {
    "key-of-alice-0123456789": Requester("alice", "mechanic"),
    "key-of-bob-012345678901": Requester("bob", "mechanic"),
}
ALICE = {"X-API-Key": "key-of-alice-0123456789"}
BOB = {"X-API-Key": "key-of-bob-012345678901"}
CHAIN = grounded_answer_chain()
SHORT = policy_with(
    policy_version="SHORT_DEADLINE_V1",
    execution={**load_policy().execution.model_dump(), "request_deadline_seconds": 0.2,
               "attempt_timeout_seconds": 0.2},
)  # fmt: skip


class Held:
    """The offline chain behind a gate: each run waits until the test opens it."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.running = 0
        self.most = 0
        self.started = 0

    async def __call__(self, bundle: Any) -> PublicResponse:
        self.running += 1
        self.started += 1
        self.most = max(self.most, self.running)
        try:
            await self.open.wait()
            return await CHAIN.ainvoke(bundle)
        finally:
            self.running -= 1


def _sync(_: Any) -> PublicResponse:
    raise AssertionError("served requests run async")


async def _client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://served") as client:
        yield client


@pytest.fixture
async def held() -> AsyncIterator[tuple[Held, httpx.AsyncClient]]:
    gate = Held()
    limits = ServeLimits(
        max_batch_items=16, batch_concurrency=2, max_in_flight=3, max_in_flight_per_client=2
    )
    app = create_app(RunnableLambda(_sync, afunc=gate), api_keys=KEYS, limits=limits)
    async for client in _client(app):
        yield gate, client


async def _started(gate: Held, count: int) -> None:
    for _ in range(500):
        if gate.started >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"only {gate.started} of {count} runs started")


async def test_an_oversized_batch_is_refused_before_anything_runs(
    held: tuple[Held, httpx.AsyncClient],
) -> None:
    gate, client = held
    items = {"inputs": [{"q": i} for i in range(4000)]}  # 30 kB: the cheap attack
    response = await client.post("/answer/batch", json=items, headers=ALICE)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "BATCH_TOO_LARGE"
    assert "at most 16 inputs, not 4000" in response.json()["error"]["message"]
    rows = [make_bundle([make_row(r) for r in range(800)]) for _ in range(3)]
    response = await client.post("/answer/batch", json={"inputs": rows}, headers=ALICE)
    assert response.status_code == 413
    assert "at most 2000 evidence rows in all, not 2400" in response.json()["error"]["message"]
    assert gate.started == 0


async def test_a_batch_runs_its_items_two_at_a_time(
    held: tuple[Held, httpx.AsyncClient],
) -> None:
    gate, client = held
    items = {"inputs": [make_bundle(request_id=f"c{i}") for i in range(10)]}
    batch = asyncio.create_task(client.post("/answer/batch", json=items, headers=ALICE))
    await _started(gate, 2)
    await asyncio.sleep(0.05)
    assert gate.running == 2  # not ten: the batch weighs like two requests
    gate.open.set()
    response = await batch
    assert [r["status"] for r in response.json()["output"]] == ["OK"] * 10
    assert gate.most == 2


async def test_a_client_over_its_share_gets_429_and_a_full_worker_503(
    held: tuple[Held, httpx.AsyncClient],
) -> None:
    gate, client = held

    def ask(headers: dict[str, str], request_id: str) -> asyncio.Task[httpx.Response]:
        body = {"input": make_bundle(request_id=request_id)}
        return asyncio.create_task(client.post("/answer/invoke", json=body, headers=headers))

    alice = [ask(ALICE, "a1"), ask(ALICE, "a2")]
    await _started(gate, 2)
    third = await client.post(
        "/answer/invoke", json={"input": make_bundle(request_id="a3")}, headers=ALICE
    )
    assert third.status_code == 429
    assert third.json()["error"]["code"] == "TOO_MANY_REQUESTS"
    assert third.headers["retry-after"] == "1"
    bob = ask(BOB, "b1")  # another client still gets in: the worker has room for three
    await _started(gate, 3)
    full = await client.post(
        "/answer/invoke", json={"input": make_bundle(request_id="b2")}, headers=BOB
    )
    assert full.status_code == 503
    assert full.json()["error"]["code"] == "OVERLOADED"
    assert (await client.get("/health")).status_code == 200  # no gate before /health
    gate.open.set()
    done = await asyncio.gather(*alice, bob)
    assert [r.json()["output"]["status"] for r in done] == ["OK"] * 3
    # Every slot came back: the same client is admitted again.
    again = await client.post(
        "/answer/invoke", json={"input": make_bundle(request_id="a4")}, headers=ALICE
    )
    assert again.json()["output"]["status"] == "OK"


@pytest.mark.slow
async def test_a_request_past_its_deadline_gets_504() -> None:
    async def slow(bundle: Any) -> PublicResponse:
        await asyncio.sleep(30)
        return await CHAIN.ainvoke(bundle)

    limits = ServeLimits(request_timeout_seconds=least_request_timeout(SHORT))
    app = create_app(RunnableLambda(_sync, afunc=slow), policy=SHORT, api_keys={}, limits=limits)
    async for client in _client(app):
        response = await client.post("/answer/invoke", json={"input": make_bundle()})
        assert response.status_code == 504
        assert response.json()["error"]["code"] == "DEADLINE_EXCEEDED"
        # The slot is back: a fast request passes the same gate.
        assert (await client.get("/health")).status_code == 200


def test_a_deadline_below_the_policys_model_deadline_is_refused() -> None:
    # Below the model's own deadline the server would cut, as 504s, requests the policy
    # lets finish with an audited MODEL_DEADLINE_EXCEEDED. None is the policy's least.
    least = least_request_timeout(load_policy())
    assert least == pytest.approx(99.0)  # 90 s for the model, a tenth as margin
    with pytest.raises(ValueError, match="at least 99 s"):
        create_app(CHAIN, limits=ServeLimits(request_timeout_seconds=98.0))
    assert ServeLimits().request_timeout(load_policy()) == 120.0
    judged = load_policy("R2_POLICY_V2_JUDGED")
    assert ServeLimits().request_timeout(judged) == least_request_timeout(judged) > 150


def test_limits_come_from_the_environment_and_must_be_positive() -> None:
    limits = ServeLimits.from_env(
        {"GROUNDLOCK_MAX_BATCH_ITEMS": "4", "GROUNDLOCK_REQUEST_TIMEOUT_SECONDS": "2.5"}
    )
    assert (limits.max_batch_items, limits.request_timeout_seconds) == (4, 2.5)
    assert limits.max_in_flight == ServeLimits().max_in_flight
    with pytest.raises(ValueError, match="max_in_flight must be positive"):
        ServeLimits(max_in_flight=0)
    with pytest.raises(ValueError, match="GROUNDLOCK_MAX_BATCH_ROWS must be a number"):
        ServeLimits.from_env({"GROUNDLOCK_MAX_BATCH_ROWS": "lots"})


async def _rows(store: DeltaAuditStore, request_id: str) -> list[tuple[str | None, str | None]]:
    store.flush()
    validations = [
        (row.run_id, row.status)
        for row in store.select(ValidationRow)
        if row.request_id == request_id
    ]
    queries = [
        (row.run_id, row.status) for row in store.select(QueryRow) if row.request_id == request_id
    ]
    assert sorted(validations, key=str) == sorted(queries, key=str)
    return sorted(validations, key=str)


async def test_no_requester_can_shadow_another_requesters_record(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    app = create_app(grounded_answer_chain(store=store), api_keys=KEYS)
    shared = {"request_id": "shared-1", "run_id": "run-1"}
    refused = make_bundle([make_row(0, similarity=0.01)], **shared)  # NO_EVIDENCE
    answered = make_bundle(**shared)  # OK
    async for client in _client(app):
        first = await client.post("/answer/invoke", json={"input": refused}, headers=ALICE)
        second = await client.post("/answer/invoke", json={"input": answered}, headers=BOB)
        retry = await client.post("/answer/invoke", json={"input": refused}, headers=ALICE)
        statuses = [r.json()["output"]["status"] for r in (first, second, retry)]
        assert statuses == ["NO_EVIDENCE", "OK", "NO_EVIDENCE"]
    # Each requester's record stands; Alice's retry is idempotent (the same record).
    assert await _rows(store, "shared-1") == [
        ("alice:run-1", "NO_EVIDENCE"),
        ("bob:run-1", "OK"),
    ]
    store.close()


async def test_a_different_outcome_under_a_requesters_key_is_recorded_too(
    tmp_path: Path,
) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    app = create_app(grounded_answer_chain(store=store), api_keys=KEYS)
    refused = make_bundle([make_row(0, similarity=0.01)], request_id="again")
    answered = make_bundle(request_id="again")
    async for client in _client(app):
        for bundle in (refused, answered):
            await client.post("/answer/invoke", json={"input": bundle}, headers=ALICE)
    rows = await _rows(store, "again")
    assert [status for _, status in rows] == ["NO_EVIDENCE", "OK"]
    assert rows[0][0] == "alice:run-1"
    assert str(rows[1][0]).startswith("alice:run-1~")  # a re-run, under a derived run_id
    store.close()


async def test_without_keys_every_request_is_its_own_record(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    app = create_app(grounded_answer_chain(store=store), api_keys={})
    bundle = make_bundle(request_id="anon-1", run_id="chosen-by-client")
    async for client in _client(app):
        for _ in range(2):
            response = await client.post("/answer/invoke", json={"input": bundle})
            assert response.json()["output"]["status"] == "OK"
    rows = await _rows(store, "anon-1")
    assert len(rows) == 2
    assert all(str(run_id).startswith("anonymous:") for run_id, _ in rows)
    assert rows[0][0] != rows[1][0]
    store.close()


async def test_the_server_scopes_a_missing_or_unusable_client_run_id(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    app = create_app(grounded_answer_chain(store=store), api_keys=KEYS)
    async for client in _client(app):
        for request_id, run_id in (("none", None), ("bracketed", "run[1]"), ("number", 7)):
            bundle = {**make_bundle(request_id=request_id), "run_id": run_id}
            response = await client.post("/answer/invoke", json={"input": bundle}, headers=BOB)
            assert response.json()["output"]["status"] == "OK"  # the run_id is the server's
    assert await _rows(store, "none") == [("bob:-", "OK")]
    for request_id in ("bracketed", "number"):
        ((run_id, _),) = await _rows(store, request_id)
        assert str(run_id).startswith("bob:#")
        assert len(str(run_id)) == len("bob:#") + 32
    store.close()
