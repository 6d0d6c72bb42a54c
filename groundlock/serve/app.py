"""The chain as an HTTP service: LangServe routes, locked down.

``create_app(chain)`` serves ``chain`` at ``/answer`` with ``langserve.add_routes`` and
nothing else a client could use to look inside or steer it (``reliability-notes`` §1):

* **An explicit route allow list.** Only ``POST /answer/invoke`` and ``POST /answer/batch``
  (which ``RemoteRunnable`` uses), ``GET /answer/input_schema`` and
  ``GET /answer/output_schema`` (the chain's public contracts: the bundle or question it
  takes, the ``PublicResponse`` it gives), plus ``GET /health``. No ``stream``,
  ``stream_log`` or ``stream_events`` (they would stream stage data), no playground, no
  config schema, feedback or config-hash routes, and FastAPI's ``/docs`` and
  ``/openapi.json`` off.
* **No client config.** ``config_keys=[]``: a client's ``configurable`` fields, run name,
  tags, metadata, callbacks or run id never reach the chain, so nobody can switch the
  model, its temperature or its token cap per request. The server sets the metadata.
* **Permissive input.** Any JSON value is accepted as input and the chain itself answers a
  bad bundle with a FAILED ``PublicResponse`` and a reason code, instead of a pydantic 422
  that would echo the request back.
* **Limits before cost.** Bodies above ``max_body_bytes`` get 413; bundles with more rows,
  longer chunks or a longer question than the policy's input limits get 422. Both are
  answered with a JSON error before the chain runs, so before any model call.
* **Optional API keys** (``GROUNDLOCK_API_KEYS``): ``requester_id:role:key`` entries,
  comma-separated. A request without a valid ``X-API-Key`` gets 401. The key's requester
  id and role reach the audit trail's query log.
* **Bounded work** (:class:`ServeLimits`): a batch's items and rows are capped (413
  ``BATCH_TOO_LARGE``) before anything runs; a batch runs ``batch_concurrency`` items at a
  time, so one batch weighs on the worker like a few requests, not like its item count;
  a worker holds at most ``max_in_flight`` requests (503 ``OVERLOADED``) and each client
  (its API key's requester, or its address without keys) at most
  ``max_in_flight_per_client`` (429 ``TOO_MANY_REQUESTS``), both with ``Retry-After``;
  every request has a deadline (504 ``DEADLINE_EXCEEDED``). ``/health`` passes no gate.
* **The server owns the audit key.** A served request's ``run_id`` is the server's:
  ``<requester_id>:<the client's run_id or ->`` with keys, so one requester's retry is
  idempotent and no requester can shadow another's record; ``anonymous:<random>`` without
  keys, where no one can be told apart and every request is its own record.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import ensure_config, get_config_list
from langserve import add_routes
from pydantic import ConfigDict, TypeAdapter, ValidationError
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import override

from groundlock.contracts._fields import Identifier
from groundlock.contracts.response import PublicResponse
from groundlock.core.intake import raw_limit_problem
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import InputLimits, Policy
from groundlock.serve.limits import ServeLimits

__all__ = [
    "ANSWER_PATH",
    "Requester",
    "ServeLimits",
    "app_from_env",
    "create_app",
    "requesters_from_env",
]

ANSWER_PATH = "/answer"
_ENDPOINTS = ["invoke", "batch"]


@dataclass(frozen=True, slots=True)
class Requester:
    """Who an API key belongs to, as the query log records it."""

    requester_id: str
    role: str


def requesters_from_env(text: str | None = None) -> dict[str, Requester]:
    """``GROUNDLOCK_API_KEYS`` parsed: ``requester_id:role:key`` entries, comma-separated."""
    raw = os.environ.get("GROUNDLOCK_API_KEYS", "") if text is None else text
    keys: dict[str, Requester] = {}
    for entry in filter(None, (part.strip() for part in raw.split(","))):
        requester_id, role, key = [*entry.split(":", 2), "", ""][:3]
        if not (requester_id and role and len(key) >= 16):
            raise ValueError(
                "GROUNDLOCK_API_KEYS entries are requester_id:role:key, keys of 16+ characters"
            )
        keys[key] = Requester(requester_id, role)
    return keys


def create_app(
    chain: Runnable[Any, PublicResponse],
    *,
    policy: str | Policy = DEFAULT_POLICY,
    api_keys: Mapping[str, Requester] | None = None,
    limits: ServeLimits | None = None,
) -> FastAPI:
    """A FastAPI app serving ``chain`` at ``/answer`` (see the module docstring).

    ``policy`` supplies the row, chunk and question limits checked before the chain runs;
    ``api_keys`` defaults to ``GROUNDLOCK_API_KEYS`` (none: no authentication), ``limits``
    to :meth:`ServeLimits.from_env`.
    """
    serve_limits = ServeLimits.from_env() if limits is None else limits
    input_limits = (load_policy(policy) if isinstance(policy, str) else policy).input_limits
    keys = dict(requesters_from_env() if api_keys is None else api_keys)
    app = FastAPI(
        title="groundlock", docs_url=None, redoc_url=None, openapi_url=None,
    )  # fmt: skip

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    # The contracts, served by us rather than LangServe's schema routes: LangServe would
    # describe the permissive ``input_type`` below (any JSON), not what the chain takes.
    input_schema = chain.get_input_jsonschema()
    output_schema = chain.get_output_jsonschema()

    @app.get(f"{ANSWER_PATH}/input_schema")
    async def served_input_schema() -> dict[str, Any]:
        return input_schema

    @app.get(f"{ANSWER_PATH}/output_schema")
    async def served_output_schema() -> dict[str, Any]:
        return output_schema

    # Any JSON as input (LangServe accepts a type here, which mypy cannot see): the chain
    # answers a bad bundle itself.
    add_routes(
        app,
        _Identified(chain=chain, batch_concurrency=serve_limits.batch_concurrency),
        path=ANSWER_PATH,
        input_type=Any,
        output_type=PublicResponse,
        config_keys=[],
        enabled_endpoints=_ENDPOINTS,  # type: ignore[arg-type]
        include_callback_events=False,
        enable_feedback_endpoint=False,
        enable_public_trace_link_endpoint=False,
    )
    app.add_middleware(_Gate, keys=keys, limits=input_limits, serve=serve_limits)
    return app


_REQUESTER: ContextVar[Requester | None] = ContextVar("groundlock_requester", default=None)
"""Who the current HTTP request's API key belongs to; set by the gate, read by the chain."""


class _Identified(RunnableSerializable[Any, PublicResponse]):
    """The served chain, told who asked in every run's metadata.

    The requester travels in a context variable the gate sets, not through LangServe's
    ``per_req_config_modifier``: LangServe's batch route filters each config by
    ``config_keys`` again after the modifier, and ``config_keys=[]`` then dropped the
    requester, so batched requests reached the audit trail (and a retrieval front's access
    control) anonymous. Whatever metadata a client sent was already dropped.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    chain: Runnable[Any, PublicResponse]
    batch_concurrency: int = 2

    def _told(self, config: RunnableConfig | None) -> RunnableConfig:
        config = ensure_config(config)
        requester = _REQUESTER.get()
        metadata = {
            **config.get("metadata", {}),
            "requester_id": requester.requester_id if requester else None,
            "requester_role": requester.role if requester else None,
        }
        return {**config, "metadata": metadata}

    @override
    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> PublicResponse:
        return self.chain.invoke(_owned(input), self._told(config))

    @override
    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> PublicResponse:
        return await self.chain.ainvoke(_owned(input), self._told(config))

    @override
    async def abatch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[PublicResponse]:
        configs = [self._told(c) for c in get_config_list(config, len(inputs))]
        for each in configs:
            each["max_concurrency"] = self.batch_concurrency
        owned = [_owned(item) for item in inputs]
        return await self.chain.abatch(owned, configs, return_exceptions=return_exceptions)


_IDENTIFIER = TypeAdapter(Identifier)


def _owned(payload: object) -> object:
    """``payload`` with the server's ``run_id`` (see the module docstring).

    The audit key is ``(request_id, run_id)`` and the store keeps one record per key: a
    client-chosen pair would let one client's record stand in for another's. With keys, the
    requester scopes the client's run_id (a retry by the same requester is the same record;
    a different outcome under it is recorded as a re-run). Without keys nobody can be told
    apart, so every request gets a run_id of its own. A client run_id that is no valid
    identifier, or too long to scope, is kept as its hash.
    """
    if not isinstance(payload, dict):
        return payload
    requester = _REQUESTER.get()
    if requester is None:
        return {**payload, "run_id": f"anonymous:{uuid.uuid4().hex}"}
    client = payload.get("run_id")
    prefix = f"{requester.requester_id}:"
    if client is None:
        return {**payload, "run_id": f"{prefix}-"}
    scoped = f"{prefix}{client}" if isinstance(client, str) else None
    try:
        _IDENTIFIER.validate_python(scoped)
    except ValidationError:
        digest = hashlib.sha256(json.dumps(client, default=str).encode()).hexdigest()[:32]
        scoped = f"{prefix}#{digest}"
    return {**payload, "run_id": scoped}


def _error(status: int, code: str, message: str, *, retry_after: int | None = None) -> JSONResponse:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


class _Gate:
    """Authentication and input limits, before LangServe parses anything (pure ASGI)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: Mapping[str, Requester],
        limits: InputLimits,
        serve: ServeLimits,
    ) -> None:
        self.app = app
        self.keys = keys
        self.limits = limits
        self.serve = serve
        self.max_body_bytes = serve.max_body_bytes
        self.in_flight = 0
        self.per_client: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/health":
            await self.app(scope, receive, send)
            return
        token = _REQUESTER.set(None)
        try:
            await self._gated(scope, receive, send)
        finally:
            _REQUESTER.reset(token)

    async def _gated(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._unauthorized(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        client = self._client(scope)
        refusal = self._admit(client)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        try:
            await self._admitted(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.per_client[client] -= 1
            if not self.per_client[client]:
                del self.per_client[client]

    def _client(self, scope: Scope) -> str:
        """Whom a request is counted against: its requester, or its address without keys."""
        requester = _REQUESTER.get()
        if requester is not None:
            return f"requester:{requester.requester_id}"
        address = scope.get("client")
        return f"address:{address[0] if address else '-'}"

    def _admit(self, client: str) -> JSONResponse | None:
        """Count the request in, or the response shedding it (nothing awaited: no race)."""
        if self.in_flight >= self.serve.max_in_flight:
            text = f"this worker is running its {self.serve.max_in_flight} requests; retry"
            return _error(503, "OVERLOADED", text, retry_after=1)
        if self.per_client.get(client, 0) >= self.serve.max_in_flight_per_client:
            limit = self.serve.max_in_flight_per_client
            text = f"this client already has {limit} requests running; retry"
            return _error(429, "TOO_MANY_REQUESTS", text, retry_after=1)
        self.in_flight += 1
        self.per_client[client] = self.per_client.get(client, 0) + 1
        return None

    async def _admitted(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "POST":
            refusal, body = await self._read_body(scope, receive)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
            receive = _replay(body, receive)
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            async with asyncio.timeout(self.serve.request_timeout_seconds):
                await self.app(scope, receive, tracked)
        except TimeoutError:
            if not started:
                limit = self.serve.request_timeout_seconds
                text = f"the request took longer than {limit:g} s"
                await _error(504, "DEADLINE_EXCEEDED", text)(scope, receive, send)

    def _unauthorized(self, scope: Scope) -> JSONResponse | None:
        if not self.keys:
            return None
        offered = Headers(scope=scope).get("x-api-key", "")
        requester = next(
            (who for key, who in self.keys.items() if hmac.compare_digest(key, offered)), None
        )
        if requester is None:
            return _error(401, "UNAUTHORIZED", "a valid X-API-Key header is required")
        _REQUESTER.set(requester)
        return None

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[JSONResponse | None, bytes]:
        """The whole body, or the response refusing it (size, JSON, limits)."""
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return _too_large(self.max_body_bytes), b""
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return _error(400, "DISCONNECTED", "the client went away"), b""
            body.extend(message.get("body", b""))
            if len(body) > self.max_body_bytes:
                return _too_large(self.max_body_bytes), b""
            more = message.get("more_body", False)
        try:
            payload = json.loads(bytes(body), parse_constant=_not_json)
        except (ValueError, RecursionError):
            payload = None
        if not isinstance(payload, dict):
            # Answered here: LangServe fails with a 500 on bytes that are not UTF-8, and on a
            # NaN or Infinity it would echo in its 422.
            text = "the request body must be a JSON object (standard JSON, UTF-8)"
            return _error(422, "INVALID_JSON", text), b""
        return self._payload_problem(payload, scope["path"]), bytes(body)

    def _payload_problem(self, payload: dict[str, Any], path: str) -> JSONResponse | None:
        """A batch too large to run at all (413), or an input over the policy's limits."""
        if path.endswith("/batch"):
            problem = self._batch_problem(payload.get("inputs"))
            if problem:
                return _error(413, "BATCH_TOO_LARGE", problem)
        problem = self._limit_problem(payload, path)
        if problem:
            return _error(422, "INPUT_LIMIT_EXCEEDED", problem)
        return None

    def _batch_problem(self, inputs: object) -> str | None:
        """Why a batch is too large to run at all (checked before anything else)."""
        if not isinstance(inputs, list):
            return None
        if len(inputs) > self.serve.max_batch_items:
            return f"a batch holds at most {self.serve.max_batch_items} inputs, not {len(inputs)}"
        rows = sum(
            len(item["results"])
            for item in inputs
            if isinstance(item, dict) and isinstance(item.get("results"), list)
        )
        if rows > self.serve.max_batch_rows:
            limit = self.serve.max_batch_rows
            return f"a batch holds at most {limit} evidence rows in all, not {rows}"
        return None

    def _limit_problem(self, payload: dict[str, Any], path: str) -> str | None:
        if path.endswith("/batch"):
            inputs = payload.get("inputs")
            named = [
                (f"inputs[{i}]", bundle)
                for i, bundle in enumerate(inputs if isinstance(inputs, list) else [])
            ]
        else:
            named = [("input", payload.get("input"))]
        for where, bundle in named:
            # The same check the chain runs first; here it answers before LangServe parses.
            problem = raw_limit_problem(bundle, self.limits) if isinstance(bundle, dict) else None
            if problem:
                return f"{where}.{problem}"
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then the client's events."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()  # after the body: wait for a disconnect, as usual
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _too_large(limit: int) -> JSONResponse:
    return _error(413, "BODY_TOO_LARGE", f"the request body is larger than {limit} bytes")


def app_from_env() -> FastAPI:
    """The app ``groundlock serve`` runs in each worker, configured by environment.

    ``GROUNDLOCK_MODEL`` (a ``provider:model`` string; default the offline model),
    ``GROUNDLOCK_POLICY`` (default the library's default policy), ``GROUNDLOCK_STORE`` (an
    audit store path or URI; default none), ``GROUNDLOCK_API_KEYS`` and the
    :class:`ServeLimits` variables. Built in the worker, after any fork, so each worker opens
    its own audit writer.
    """
    from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415

    policy = os.environ.get("GROUNDLOCK_POLICY") or DEFAULT_POLICY
    chain = grounded_answer_chain(
        model=os.environ.get("GROUNDLOCK_MODEL") or None,
        policy=policy,
        store=os.environ.get("GROUNDLOCK_STORE") or None,
    )
    app = create_app(chain, policy=policy)
    # What the worker has built so far (chain, policy, encoders, LangChain and pydantic
    # schemas) lives as long as the worker: moved out of the collector's sight, so a full
    # collection no longer walks it. At 1,000 rows a request's p99 drops from about 100 ms
    # (a full collection every few requests) to about 12 ms (benchmarks/chain.py).
    gc.freeze()
    return app
