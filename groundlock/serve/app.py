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
import contextlib
import gc
import hashlib
import hmac
import json
import os
import uuid
from asyncio import FIRST_COMPLETED
from collections.abc import AsyncIterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from langchain_core.runnables import (
    Runnable,
    RunnableConfig,
    RunnableSequence,
    RunnableSerializable,
)
from langchain_core.runnables.config import ensure_config, get_config_list
from langserve import add_routes
from pydantic import ConfigDict, TypeAdapter, ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import override

from groundlock.contracts._fields import Identifier
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.response import PublicResponse
from groundlock.contracts.state import Judged
from groundlock.core.intake import raw_limit_problem
from groundlock.core.skipped import advanced, failed_state
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import InputLimits, Policy
from groundlock.runnables.record import (
    ABANDONED_MESSAGES,
    AUDIT_CLAIM,
    AuditClaim,
    RecordValidation,
)
from groundlock.serve.limits import ServeLimits
from groundlock.stores.keys import RERUN_SEPARATOR

__all__ = [
    "ANSWER_PATH",
    "Requester",
    "ServeLimits",
    "app_from_env",
    "create_app",
    "requesters_from_env",
]

ANSWER_PATH = "/answer"
_ENDPOINTS = ["invoke", "batch", "stream", "stream_events"]


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

    ``policy`` supplies the row, chunk and question limits checked before the chain runs,
    and the least request deadline (a ``limits`` deadline below it is a ValueError);
    ``api_keys`` defaults to ``GROUNDLOCK_API_KEYS`` (none: no authentication), ``limits``
    to :meth:`ServeLimits.from_env`.
    """
    serve_limits = ServeLimits.from_env() if limits is None else limits
    loaded = load_policy(policy) if isinstance(policy, str) else policy
    request_timeout = serve_limits.request_timeout(loaded)  # (ValueError: below the least)
    keys = dict(requesters_from_env() if api_keys is None else api_keys)
    # No slash redirects: a 307 to a URL built from the client's Host header, after work.
    app = FastAPI(
        title="groundlock", docs_url=None, redoc_url=None, openapi_url=None,
        redirect_slashes=False,
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
        _Identified(
            chain=chain,
            batch_concurrency=serve_limits.batch_concurrency,
            recorder=_recorder(chain),
        ),
        path=ANSWER_PATH,
        input_type=Any,
        output_type=PublicResponse,
        config_keys=[],
        enabled_endpoints=_ENDPOINTS,  # type: ignore[arg-type]
        include_callback_events=False,
        enable_feedback_endpoint=False,
        enable_public_trace_link_endpoint=False,
    )
    _without_banner(app)
    _one_error_shape(app)
    app.add_middleware(
        _Gate, keys=keys, limits=loaded.input_limits, serve=serve_limits,
        request_timeout=request_timeout,
    )  # fmt: skip
    return app


_REQUESTER: ContextVar[Requester | None] = ContextVar("groundlock_requester", default=None)
"""Who the current HTTP request's API key belongs to; set by the gate, read by the chain."""


class _Identified(RunnableSerializable[Any, PublicResponse]):
    """The served chain, told who asked in every run's metadata, and recorded if abandoned.

    The requester travels in a context variable the gate sets, not through LangServe's
    ``per_req_config_modifier``: LangServe's batch route filters each config by
    ``config_keys`` again after the modifier, and ``config_keys=[]`` then dropped the
    requester, so batched requests reached the audit trail (and a retrieval front's access
    control) anonymous. Whatever metadata a client sent was already dropped.

    **Abandoned work is recorded.** The gate cancels a request that runs past its deadline
    or whose client went away, to free its slot at once (letting it finish would let
    abandoned work pile up past the deadline that bounds it). A cancelled request that had
    not handed its audit write to a thread is recorded here, FAILED with the gate's reason
    (``DEADLINE_EXCEEDED``, ``CLIENT_DISCONNECTED``), through the chain's own audit stage,
    so its key gets exactly one record. One that had is recorded by the stage: the stage
    marks the request's :class:`AuditClaim` as it hands the write over, and shields it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    chain: Runnable[Any, PublicResponse]
    batch_concurrency: int = 2
    recorder: RecordValidation | None = None
    """The chain's audit stage (None: the chain keeps no trail)."""

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
        return await self._request(input, config, None)

    async def _request(
        self, item: object, config: RunnableConfig | None, gate: asyncio.Semaphore | None
    ) -> PublicResponse:
        """One request, recorded as abandoned if cancelled before its audit write."""
        owned, claim = _owned(item), self._claim()
        token = AUDIT_CLAIM.set(claim)  # (this task's context; the chain's tasks copy it)
        try:
            async with gate or contextlib.nullcontext():
                return await self.chain.ainvoke(owned, self._told(config))
        except asyncio.CancelledError:
            self._abandoned(owned, claim)
            raise
        finally:
            AUDIT_CLAIM.reset(token)

    @override
    async def abatch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[PublicResponse]:
        """Each input as its own request, ``batch_concurrency`` at a time.

        Not ``chain.abatch``: a sequence batches stage by stage, so no item is answered, or
        recorded, before every item's model call is done, and a batch cut by the deadline
        loses the answers it already paid for. Here an item is a whole request: it is
        recorded as soon as it is done, and a cut leaves only the unfinished ones to record
        as abandoned. (A cancelled ``abatch`` also leaves coroutines it never awaited.)
        """
        gate = asyncio.Semaphore(self.batch_concurrency)
        given = get_config_list(config, len(inputs))
        tasks = [
            asyncio.ensure_future(self._request(item, each, gate))
            for item, each in zip(inputs, given, strict=True)
        ]
        try:
            results = await asyncio.gather(*tasks, return_exceptions=return_exceptions)
        except BaseException:
            for task in tasks:
                task.cancel()
            # Each cancelled item records itself; wait for that before the 504 goes out.
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return cast("list[PublicResponse]", results)

    @override
    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The chain's validated stream (``/stream``, ``/stream_events``), recorded once.

        A stream cancelled mid-answer (the deadline, a client gone) is recorded by the
        chain's audit step with the gate's reason; one cancelled before its model ran is
        recorded here, as an abandoned ``invoke`` is.
        """
        owned, claim = _owned(input), self._claim()
        AUDIT_CLAIM.set(claim)  # (this request's task: its context ends with it)
        try:
            async for event in self.chain.astream(owned, self._told(config)):
                yield event
        except asyncio.CancelledError:
            self._abandoned(owned, claim)
            raise

    @staticmethod
    def _claim() -> AuditClaim:
        """A new audit claim, told the gate's reason if the gate cancels the request."""
        claim = AuditClaim()
        fate = _FATE.get()
        if fate is not None:
            fate.claims.append(claim)
        return claim

    def _abandoned(self, item: object, claim: AuditClaim) -> None:
        """Record a cancelled request whose audit write had not started (see the class)."""
        fate = _FATE.get()
        if self.recorder is None or fate is None or fate.reason is None or claim.submitted:
            return
        policy = self.recorder.policy
        message = ABANDONED_MESSAGES[fate.reason]
        state = advanced(failed_state(item, policy, fate.reason, message), Judged, policy)
        # Synchronous, inside the cancelled task: the row is durable before the 504 goes.
        self.recorder.invoke(state, self._told(None))


@dataclass(slots=True)
class _Fate:
    """Why the gate cancelled a request's work (set just before it cancels)."""

    reason: ReasonCode | None = None
    claims: list[AuditClaim] = field(default_factory=list)
    """The audit claims of the request's runs, told the reason before the cancel."""


_FATE: ContextVar[_Fate | None] = ContextVar("groundlock_fate", default=None)


def _recorder(chain: Runnable[Any, Any]) -> RecordValidation | None:
    """The audit stage of a served chain (a sequence holding one), or None."""
    steps = chain.steps if isinstance(chain, RunnableSequence) else [chain]
    return next((step for step in steps if isinstance(step, RecordValidation)), None)


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


def _error(
    status: int, code: str, message: str, *, retry_after: int | None = None, close: bool = False
) -> JSONResponse:
    """The one error shape of every route: ``{"error": {"code": ..., "message": ...}}``."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    if close:
        headers["Connection"] = "close"
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
        request_timeout: float,
    ) -> None:
        self.app = app
        self.request_timeout = request_timeout
        self.keys = keys
        self._keys = [(key.encode(), who) for key, who in keys.items()]
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
        body = b""
        if refusal is None:
            # The body first, under the read timeout and before any slot is taken: a client
            # that sends headers and never finishes its body costs a connection for the read
            # timeout, and never an in-flight slot.
            refusal, body = await self._read_body(scope, receive)
        if refusal is None and scope["method"] == "POST":
            refusal = self._payload_refusal(body, scope["path"])
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        client = self._client(scope)
        refusal = self._admit(client)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        try:
            await self._admitted(scope, body, receive, send)
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

    async def _admitted(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """Run the request under its deadline; a client that goes away cancels it.

        Either way the work is cancelled, and the served chain records it as abandoned
        (:meth:`_Identified.ainvoke`), so its slot is free at once and the trail still holds
        one record per request the store saw.
        """
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        gone = asyncio.Event()
        fate = _Fate()
        token = _FATE.set(fate)  # (the work's task copies the context: it sees this fate)
        try:
            work = asyncio.ensure_future(self.app(scope, _replay(body, gone), tracked))
        finally:
            _FATE.reset(token)
        watch = asyncio.ensure_future(_watch_disconnect(receive, gone))
        try:
            done, _ = await asyncio.wait(
                {work, watch}, timeout=self.request_timeout, return_when=FIRST_COMPLETED
            )
        finally:
            watch.cancel()
        if work in done:
            work.result()
            return
        fate.reason = (
            ReasonCode.CLIENT_DISCONNECTED if gone.is_set() else ReasonCode.DEADLINE_EXCEEDED
        )
        for claim in fate.claims:
            claim.abandoned = fate.reason
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        if not (started or gone.is_set()):
            text = f"the request took longer than {self.request_timeout:g} s"
            await _error(504, "DEADLINE_EXCEEDED", text)(scope, receive, send)

    def _unauthorized(self, scope: Scope) -> JSONResponse | None:
        if not self.keys:
            return None
        # As bytes: compare_digest refuses a str with a character outside ASCII (a 500).
        offered = Headers(scope=scope).get("x-api-key", "").encode("latin-1")
        requester = next(
            (who for key, who in self._keys if hmac.compare_digest(key, offered)), None
        )
        if requester is None:
            return _error(401, "UNAUTHORIZED", "a valid X-API-Key header is required")
        _REQUESTER.set(requester)
        return None

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[JSONResponse | None, bytes]:
        """The whole body, or the response refusing it (its time or its size)."""
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return _too_large(self.max_body_bytes), b""
        body = bytearray()
        try:
            async with asyncio.timeout(self.serve.read_timeout_seconds):
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return _error(400, "DISCONNECTED", "the client went away"), b""
                    body.extend(message.get("body", b""))
                    if len(body) > self.max_body_bytes:
                        return _too_large(self.max_body_bytes), b""
                    more = message.get("more_body", False)
        except TimeoutError:
            limit = self.serve.read_timeout_seconds
            text = f"the request body did not arrive within {limit:g} s"
            return _error(408, "REQUEST_TIMEOUT", text, close=True), b""
        return None, bytes(body)

    def _payload_refusal(self, body: bytes, path: str) -> JSONResponse | None:
        """The response refusing a POST body (JSON, shape, size, limits), or None."""
        try:
            payload = json.loads(body, parse_constant=_not_json)
        except (ValueError, RecursionError):
            payload = None
        if not isinstance(payload, dict) or _too_deep(payload):
            # Answered here: LangServe fails with a 500 on bytes that are not UTF-8, and on a
            # NaN or Infinity it would echo in its 422; and it parses the body again, deeper
            # in the stack, where JSON nested just under this parser's limit overflowed.
            text = (
                "the request body must be a JSON object (standard JSON, UTF-8, "
                f"nested at most {_MAX_DEPTH} deep)"
            )
            return _error(422, "INVALID_JSON", text)
        route = _ROUTES.get(path)
        if route is None:
            return None  # no route of ours: FastAPI answers 404 or 405
        inputs = payload.get("inputs")
        if route == "batch" and isinstance(inputs, list):
            problem = self._batch_problem(inputs)  # first: a huge list is not walked
            if problem:
                return _error(413, "BATCH_TOO_LARGE", problem)
        problem = _shape_problem(payload, route)
        if problem:
            return _error(422, "INVALID_REQUEST", problem)
        problem = self._limit_problem(payload, path)
        if problem:
            return _error(422, "INPUT_LIMIT_EXCEEDED", problem)
        return None

    def _batch_problem(self, inputs: list[Any]) -> str | None:
        """Why a batch is too large to run at all (checked before its shape)."""
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


def _replay(body: bytes, gone: asyncio.Event) -> Receive:
    """The app's ``receive``: the body already read, then a disconnect once the client goes.

    The gate's watcher owns the client's ``receive`` from here on (two readers of one
    channel would steal each other's messages); it sets ``gone``.
    """
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            await gone.wait()
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    """Set ``gone`` when the client disconnects (the body is in: nothing else arrives)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


_ROUTES = {
    f"{ANSWER_PATH}/invoke": "invoke",
    f"{ANSWER_PATH}/batch": "batch",
    f"{ANSWER_PATH}/stream": "stream",
    f"{ANSWER_PATH}/stream_events": "stream_events",
}
_EVENT_FILTERS = {
    f"{verb}_{what}" for verb in ("include", "exclude") for what in ("names", "types", "tags")
}
_BODY_KEYS = {"invoke": ("input", {"input", "config", "kwargs"}),
              "stream": ("input", {"input", "config", "kwargs"}),
              "stream_events": ("input", {"input", "config", "kwargs", *_EVENT_FILTERS}),
              "batch": ("inputs", {"inputs", "config", "kwargs"})}  # fmt: skip


def _shape_problem(payload: dict[str, Any], route: str) -> str | None:
    """What is wrong with the shape of a route's body, naming the field (never its value).

    LangServe runs whatever it is given: a string of ``inputs`` once per character, an
    object once per key; a null or a number failed inside it with a 500. So the shape is
    checked here, before any work: ``input`` one JSON object, ``inputs`` an array of them,
    ``config`` an object (a batch: or an array of one per input), ``kwargs`` an object, no
    other key; and a client ``run_id`` without the re-execution separator, which is the
    store's to write (:mod:`groundlock.stores.keys`).
    """
    field, allowed = _BODY_KEYS[route]
    if not payload.keys() <= allowed:  # (its name is the client's text: not quoted)
        return f"the body has a field other than {', '.join(sorted(allowed))}"
    if field not in payload:
        return f"the body needs {field!r}"
    items = payload[field] if route == "batch" else [payload[field]]
    if not isinstance(items, list):
        return f"{field!r} must be a JSON array of objects, not {_kind(items)}"
    for name in sorted(_EVENT_FILTERS & payload.keys()):
        value = payload[name]
        if value is not None and not (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            return f"{name!r} must be a JSON array of strings"
    return _items_problem(items, field if route != "batch" else None) or _options_problem(
        payload, len(items) if route == "batch" else None
    )


def _items_problem(items: list[Any], single: str | None) -> str | None:
    """The first input that is no object, or that carries a run id the store reserves."""
    for index, item in enumerate(items):
        where = single or f"inputs[{index}]"
        if not isinstance(item, dict):
            return f"{where} must be a JSON object, not {_kind(item)}"
        run_id = item.get("run_id")
        if isinstance(run_id, str) and RERUN_SEPARATOR in run_id:
            return f"{where}.run_id may not contain {RERUN_SEPARATOR!r} (kept for re-executions)"
    return None


def _options_problem(payload: dict[str, Any], batch_size: int | None) -> str | None:
    """A ``config`` or ``kwargs`` of the wrong shape (``batch_size``: None for invoke)."""
    config = payload.get("config", {})
    if batch_size is not None and isinstance(config, list):
        if len(config) != batch_size or not all(isinstance(c, dict) for c in config):
            return "'config' must be an object, or an array of one object per input"
    elif not isinstance(config, dict):
        return "'config' must be a JSON object"
    if not isinstance(payload.get("kwargs", {}), dict):
        return "'kwargs' must be a JSON object"
    return None


_MAX_DEPTH = 64
"""Deepest JSON nesting a body may have; a bundle needs about five levels."""


def _too_deep(payload: object) -> bool:
    """Whether ``payload`` nests containers deeper than ``_MAX_DEPTH`` (iteratively)."""
    level: list[dict[str, Any] | list[Any]] = [payload] if isinstance(payload, dict | list) else []
    for _ in range(_MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def _kind(value: object) -> str:
    """A JSON value's kind, for a message that must not quote the value."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), "a value")  # fmt: skip


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _too_large(limit: int) -> JSONResponse:
    return _error(413, "BODY_TOO_LARGE", f"the request body is larger than {limit} bytes")


def _one_error_shape(app: FastAPI) -> None:
    """Every error FastAPI or LangServe answers itself in the gate's shape, quoting nothing.

    FastAPI's own 404, 405 and 422 bodies are ``{"detail": ...}``, and its 422 echoes the
    request's values back; the gate answers what it can first, and these catch the rest.
    """

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code, message = _HTTP_ERRORS.get(status, (f"HTTP_{status}", "the request was refused"))
        return _error(status, code, message)

    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        return _error(422, "INVALID_REQUEST", "the request body does not fit the route")

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)


_HTTP_ERRORS = {
    404: ("NOT_FOUND", "no such route; the chain is served at /answer/invoke and /answer/batch"),
    405: ("METHOD_NOT_ALLOWED", "this route does not take that method"),
    422: ("INVALID_REQUEST", "the request body does not fit the route"),
}


def _without_banner(app: FastAPI) -> None:
    """Drop LangServe's start-up banner.

    It names ``docs_url`` (None here: ``See all available routes at None/``) and a
    playground that is not served; ``groundlock serve`` logs the address it listens on.
    """
    app.router.on_startup[:] = [
        handler
        for handler in app.router.on_startup
        if getattr(handler, "__module__", "") != "langserve.server"
    ]


def app_from_env() -> FastAPI:
    """The app ``groundlock serve`` runs in each worker, configured by environment.

    ``GROUNDLOCK_MODEL`` (a ``provider:model`` string; default the offline model),
    ``GROUNDLOCK_POLICY`` (default the library's default policy), ``GROUNDLOCK_STORE`` (an
    audit store path or URI; default none), ``GROUNDLOCK_API_KEYS`` and the
    :class:`ServeLimits` variables. Built in the worker, after any fork, so each worker opens
    its own audit writer, and closes it (its spool committed) when the worker shuts down.
    """
    from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415
    from groundlock.stores.delta import DeltaAuditStore  # noqa: PLC0415

    policy = os.environ.get("GROUNDLOCK_POLICY") or DEFAULT_POLICY
    location = os.environ.get("GROUNDLOCK_STORE") or None
    store = DeltaAuditStore(location) if location else None
    chain = grounded_answer_chain(
        model=os.environ.get("GROUNDLOCK_MODEL") or None, policy=policy, store=store
    )
    app = create_app(chain, policy=policy)
    if store is not None:
        # uvicorn ends a worker it stopped gracefully by raising the stopping signal again
        # under its default action, so no atexit handler runs in the worker: without this,
        # the rows it acknowledged since its last commit would wait in its spool for the
        # next process on this host (and be lost with the host, as a container's disk is).
        app.router.on_shutdown.append(store.close)
    # What the worker has built so far (chain, policy, encoders, LangChain and pydantic
    # schemas) lives as long as the worker: moved out of the collector's sight, so a full
    # collection no longer walks it. At 1,000 rows a request's p99 drops from about 100 ms
    # (a full collection every few requests) to about 12 ms (benchmarks/chain.py).
    gc.freeze()
    return app
