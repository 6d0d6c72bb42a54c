"""The served app (reliability notes T01, T02, T14, T15): routes, config, limits, keys, fuzz.

In-process through Starlette's TestClient (the real FastAPI app and LangServe routes); the
real-HTTP test with uvicorn and RemoteRunnable is in ``test_http.py``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_openai import ChatOpenAI

from groundlock import PublicResponse, RetrievalBundle, grounded_answer_chain, load_policy
from groundlock.serve import Requester, ServeLimits, create_app
from groundlock.stores import DeltaAuditStore, QueryRow
from tests.builders import make_bundle, make_row
from tests.fakes.openai_server import FakeOpenAI, Reply

CANARY = f"CANARY-{uuid.uuid4().hex}"
LIMITS = load_policy().input_limits


@pytest.fixture(scope="module")
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _pinned_model(server: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test", base_url=server.url)


def _bundle(**fields: Any) -> dict[str, Any]:
    text = f"Replace the case drain filter every 500 hours. Ledger {CANARY} is archived."
    return make_bundle([make_row(0, chunk_text=text, similarity=0.8765)], **fields)


@pytest.fixture(scope="module")
def client(openai: FakeOpenAI) -> TestClient:
    return TestClient(create_app(grounded_answer_chain(model=_pinned_model(openai))))


EXPECTED_ROUTES = {
    ("GET", "/health"),
    ("POST", "/answer/invoke"),
    ("POST", "/answer/batch"),
    ("POST", "/answer/stream"),
    ("POST", "/answer/stream_events"),
    ("GET", "/answer/input_schema"),
    ("GET", "/answer/output_schema"),
}


def _routes(app: Any) -> set[tuple[str, str]]:
    return {(method, route.path) for route in app.routes for method in route.methods or ()}


def test_the_route_set_is_exactly_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    # T01: also when LangServe would enable its hosted extras, and with LangSmith configured.
    monkeypatch.setenv("HOSTED_LANGSERVE_ENABLED", "true")
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    app = create_app(grounded_answer_chain())
    assert _routes(app) == EXPECTED_ROUTES


LANGSERVE_PATHS = [
    ("POST", f"/answer{suffix}")
    for suffix in (
        "/stream_log", "/token_feedback", "/feedback",
        "/public_trace_link", "/c/abc/invoke", "/c/abc/batch", "/c/abc/stream",
        "/c/abc/stream_log", "/c/abc/stream_events",
    )
] + [
    ("GET", f"/answer{suffix}")
    for suffix in (
        "/config_schema", "/playground/index.html",
        "/playground/", "/c/abc/input_schema", "/c/abc/playground/index.html", "/invoke",
    )
] + [
    ("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/redoc"),
    ("PUT", "/answer/public_trace_link"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path"), LANGSERVE_PATHS)
def test_no_other_langserve_route_answers_or_leaks(
    client: TestClient, method: str, path: str
) -> None:
    response = client.request(method, path, json={"input": _bundle()})
    assert response.status_code in (404, 405)
    assert CANARY not in response.text
    assert "0.8765" not in response.text


def test_the_schema_routes_serve_the_public_contracts_and_nothing_else(
    client: TestClient,
) -> None:
    # What a client may send (a RetrievalBundle) and get back (a PublicResponse), as the
    # contracts define them: not LangServe's permissive "any JSON" input type.
    served_in = client.get("/answer/input_schema")
    served_out = client.get("/answer/output_schema")
    assert (served_in.status_code, served_out.status_code) == (200, 200)
    assert served_in.json() == RetrievalBundle.model_json_schema(mode="validation")
    assert served_out.json() == PublicResponse.model_json_schema(mode="serialization")
    assert "raw_model_text" not in served_out.text  # nothing of a stage's section
    for method in ("POST", "PUT", "DELETE"):  # (the gate may refuse an empty body first)
        assert client.request(method, "/answer/input_schema").status_code in (405, 422)


def test_the_schema_routes_are_behind_the_api_key(openai: FakeOpenAI) -> None:
    keys = {"k-1": Requester(requester_id="tech-1", role="technician")}
    chain = grounded_answer_chain(model=_pinned_model(openai))
    with TestClient(create_app(chain, api_keys=keys)) as keyed:
        assert keyed.get("/answer/input_schema").status_code == 401
        ok = keyed.get("/answer/output_schema", headers={"X-API-Key": "k-1"})
        assert ok.status_code == 200


def test_invoke_returns_only_the_public_response(client: TestClient, openai: FakeOpenAI) -> None:
    openai.script(Reply(text=f"Replace the case drain filter every 500 hours. [C0] {CANARY}"))
    response = client.post("/answer/invoke", json={"input": _bundle()})
    body = response.json()
    assert response.status_code == 200
    assert set(body) == {"output", "metadata"}
    assert body["output"]["status"] == "FAILED"  # the raw answer carried the canary
    assert CANARY not in response.text
    assert "0.8765" not in response.text
    openai.script(Reply(text="Replace the case drain filter every 500 hours. [C0]"))
    ok = client.post("/answer/invoke", json={"input": _bundle()}).json()["output"]
    assert ok["status"] == "OK"
    assert ok["citations"][0]["anchor"] == "C0"


CONFIG_ATTEMPTS = [
    {"configurable": {"model": "gpt-3.5-turbo", "temperature": 1.5, "max_tokens": 4000}},
    {"run_name": "evil", "run_id": str(uuid.uuid4()), "tags": ["x"], "max_concurrency": 1},
    {"metadata": {"requester_id": "forged", "requester_role": "admin"}},
    {"callbacks": [{"lc": 1, "type": "constructor", "id": ["x"]}]},
]


@pytest.mark.parametrize("config", CONFIG_ATTEMPTS)
def test_client_config_never_reaches_the_chain(
    client: TestClient, openai: FakeOpenAI, config: dict[str, Any]
) -> None:
    # T02: the request still goes upstream with the pinned model, temperature and cap.
    before = len(openai.requests)
    response = client.post(
        "/answer/invoke", json={"input": _bundle(), "config": config, "kwargs": {"stop": ["x"]}}
    )
    assert response.status_code in (200, 422)
    sent = openai.requests[before:]
    for request in sent:
        body = request.json
        assert body["model"] == "gpt-4.1-mini"
        assert body["temperature"] == 0.0
        assert body.get("max_completion_tokens", body.get("max_output_tokens")) == 800
        assert "stop" not in body


def test_a_configurable_model_would_have_been_switched_without_the_lock(
    openai: FakeOpenAI,
) -> None:
    # The negative control: LangServe's default config_keys let a client switch a
    # configurable model. The same probe against our app (above) finds the pin intact.
    from fastapi import FastAPI  # noqa: PLC0415
    from langchain_core.runnables import ConfigurableField  # noqa: PLC0415
    from langserve import add_routes  # noqa: PLC0415

    model = _pinned_model(openai).configurable_fields(model_name=ConfigurableField(id="model"))
    app = FastAPI()
    add_routes(app, model, path="/open")
    before = len(openai.requests)
    TestClient(app).post(
        "/open/invoke",
        json={"input": "hello", "config": {"configurable": {"model": "gpt-3.5-turbo"}}},
    )
    assert openai.requests[before].json["model"] == "gpt-3.5-turbo"


@pytest.mark.parametrize(
    ("bundle", "status", "where"),
    [
        (_bundle(user_question="x" * (LIMITS.max_question_chars + 1)), 422, "user_question"),
        (
            make_bundle([make_row(i) for i in range(LIMITS.max_results + 1)]),
            422,
            "results",
        ),
        (
            make_bundle([make_row(0, chunk_text="y" * (LIMITS.max_chunk_chars + 1))]),
            422,
            "results[0].chunk_text",
        ),
    ],
)
def test_limits_answer_before_any_model_call(
    client: TestClient, openai: FakeOpenAI, bundle: dict[str, Any], status: int, where: str
) -> None:
    before = len(openai.requests)
    response = client.post("/answer/invoke", json={"input": bundle})
    assert response.status_code == status
    assert response.json()["error"]["code"] == "INPUT_LIMIT_EXCEEDED"
    assert where in response.json()["error"]["message"]
    batch = client.post("/answer/batch", json={"inputs": [_bundle(), bundle]})
    if len(bundle["results"]) + 1 > ServeLimits().max_batch_rows:
        # (a batch's own row limit is checked first, and answers 413)
        assert batch.status_code == 413
        assert batch.json()["error"]["code"] == "BATCH_TOO_LARGE"
    else:
        assert batch.status_code == status
        assert "inputs[1]" in batch.json()["error"]["message"]
    assert len(openai.requests) == before


def test_an_oversized_body_is_413_before_any_model_call(openai: FakeOpenAI) -> None:
    app = create_app(
        grounded_answer_chain(model=_pinned_model(openai)), limits=ServeLimits(max_body_bytes=2048)
    )
    before = len(openai.requests)
    response = TestClient(app).post("/answer/invoke", json={"input": _bundle(), "pad": "z" * 4096})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "BODY_TOO_LARGE"
    assert len(openai.requests) == before


def test_api_keys_guard_the_routes_and_name_the_requester(tmp_path: Any) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    keys = {"k" * 24: Requester("inspector-7", "inspector")}
    app = create_app(grounded_answer_chain(store=store), api_keys=keys)
    client = TestClient(app)
    assert client.get("/health").status_code == 200  # health needs no key
    for headers in ({}, {"X-API-Key": "wrong-key-wrong-key-wrong"}):
        refused = client.post("/answer/invoke", json={"input": _bundle()}, headers=headers)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "UNAUTHORIZED"
    forged = {"metadata": {"requester_id": "forged"}}
    answered = client.post(
        "/answer/invoke",
        json={"input": _bundle(), "config": forged},
        headers={"X-API-Key": "k" * 24},
    )
    assert answered.json()["output"]["status"] == "OK"
    store.close()
    (row,) = store.select(QueryRow)
    assert (row.requester_id, row.requester_role) == ("inspector-7", "inspector")


def test_api_keys_from_the_environment() -> None:
    from groundlock.serve import requesters_from_env  # noqa: PLC0415

    parsed = requesters_from_env("alice:engineer:" + "a" * 20 + ", bob:auditor:" + "b" * 20)
    assert parsed == {
        "a" * 20: Requester("alice", "engineer"),
        "b" * 20: Requester("bob", "auditor"),
    }
    for bad in ("alice:engineer:short", "no-role-" + "c" * 20):
        with pytest.raises(ValueError, match="requester_id:role:key"):
            requesters_from_env(bad)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    _containers,
    max_leaves=20,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payload=st.one_of(
        _JSON,
        st.builds(lambda value: {"input": value}, _JSON),
        st.builds(
            lambda bundle, field, value: {"input": {**bundle, field: value}},
            st.just(make_bundle()),
            st.sampled_from(
                ["results", "user_question", "top_k", "request_id", "retrieval_status"]
            ),
            _JSON,
        ),
    )
)
@pytest.mark.slow
def test_the_endpoint_never_answers_500(client: TestClient, payload: Any) -> None:
    # T14: any JSON (NaN and infinities included) or broken bytes: a response, never a 500.
    body = json.dumps(payload, allow_nan=True).encode()
    for route in ("/answer/invoke", "/answer/batch"):
        response = client.post(route, content=body, headers={"content-type": "application/json"})
        assert response.status_code < 500, response.text
    broken = client.post("/answer/invoke", content=body[: len(body) // 2] + b"\xff")
    assert broken.status_code < 500


def test_a_served_retrieval_chain_authorises_by_the_api_keys_role(tmp_path: Any) -> None:
    # Local imports: the retrieval fixtures belong to this one test.
    from groundlock import AccessPolicy, RetrievalFront  # noqa: PLC0415
    from tests.fakes.retrieval import QUESTION, cosine_store, doc  # noqa: PLC0415

    line = "The case drain filter is replaced every {} hours."
    corpus = [
        (doc("c-rail", line.format(300), business_unit="RAIL"), 0.95),
        (doc("c-marine", line.format(500), business_unit="MARINE"), 0.9),
    ]
    access = AccessPolicy(
        attributes=("business_unit",),
        roles={"technician": {"business_unit": "MARINE"}, "auditor": {"business_unit": "*"}},
    )
    front = RetrievalFront(
        source=cosine_store(corpus),
        index_version="idx-1",
        embedding_model="table-3",
        normalization="cosine",
        access=access,
    )
    store = DeltaAuditStore(tmp_path / "audit")
    keys = {"t" * 24: Requester("tech-4", "technician"), "a" * 24: Requester("aud-1", "auditor")}
    client = TestClient(create_app(front | grounded_answer_chain(store=store), api_keys=keys))
    # A client cannot name its own principal: configurable never reaches the chain.
    elevate = {
        "configurable": {"principal": {"principal_id": "x", "grants": {"business_unit": "*"}}}
    }
    answers = {}
    for key, request_id in (("t" * 24, "as-technician"), ("a" * 24, "as-auditor")):
        reply = client.post(
            "/answer/invoke",
            json={
                "input": {"user_question": QUESTION, "request_id": request_id},
                "config": elevate,
            },
            headers={"X-API-Key": key},
        )
        assert reply.status_code == 200
        answers[request_id] = reply.json()["output"]
    # The batch route names the requester too (LangServe re-filters batch configs).
    batched = client.post(
        "/answer/batch",
        json={
            "inputs": [
                {"user_question": QUESTION, "request_id": "batch-1"},
                {"user_question": QUESTION, "request_id": "batch-2"},
            ]
        },
        headers={"X-API-Key": "t" * 24},
    )
    assert batched.status_code == 200
    for output in batched.json()["output"]:
        assert output["status"] == "OK"
        assert [c["knowledge_id"] for c in output["citations"]] == ["K-c-marine"]
    store.close()
    assert [c["knowledge_id"] for c in answers["as-technician"]["citations"]] == ["K-c-marine"]
    assert "K-c-rail" in [c["knowledge_id"] for c in answers["as-auditor"]["citations"]]
    assert "300" not in answers["as-technician"]["answer"]
    rows = {row.request_id: row for row in store.select(QueryRow)}
    technician = rows["as-technician"]
    assert (technician.requester_role, technician.access_denied_count) == ("technician", 1)
    assert technician.retrieved_chunk_ids == ("c-marine",)
    assert technician.score_normalization == "cosine"
    assert technician.retrieval_strategy == "vector_store:InMemoryVectorStore"
    assert rows["as-auditor"].access_denied_count == 0
    for request_id in ("batch-1", "batch-2"):
        assert (rows[request_id].requester_id, rows[request_id].access_denied_count) == (
            "tech-4",
            1,
        )
