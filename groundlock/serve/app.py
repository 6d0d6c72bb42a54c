"""The chain as an HTTP service: LangServe routes, locked down.

``create_app(chain)`` serves ``chain`` at ``/answer`` with ``langserve.add_routes`` and
nothing else a client could use to look inside or steer it (``reliability-notes`` §1):

* **An explicit route allow list.** Only ``POST /answer/invoke`` and ``POST /answer/batch``
  (which ``RemoteRunnable`` uses), plus ``GET /health``. No ``stream_log`` or
  ``stream_events`` (they stream every stage's input and output), no playground, no
  schema, feedback or config-hash routes, and FastAPI's ``/docs`` and ``/openapi.json`` off.
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
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import ensure_config, get_config_list
from langserve import add_routes
from pydantic import ConfigDict
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import override

from groundlock.contracts.response import PublicResponse
from groundlock.core.intake import raw_limit_problem
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import InputLimits, Policy

__all__ = ["ANSWER_PATH", "Requester", "app_from_env", "create_app", "requesters_from_env"]

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
    max_body_bytes: int = 4 * 2**20,
) -> FastAPI:
    """A FastAPI app serving ``chain`` at ``/answer`` (see the module docstring).

    ``policy`` supplies the row, chunk and question limits checked before the chain runs;
    ``api_keys`` defaults to ``GROUNDLOCK_API_KEYS`` (none: no authentication).
    """
    limits = (load_policy(policy) if isinstance(policy, str) else policy).input_limits
    keys = dict(requesters_from_env() if api_keys is None else api_keys)
    app = FastAPI(
        title="groundlock", docs_url=None, redoc_url=None, openapi_url=None,
    )  # fmt: skip

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    # Any JSON as input (LangServe accepts a type here, which mypy cannot see): the chain
    # answers a bad bundle itself.
    add_routes(
        app,
        _Identified(chain=chain),
        path=ANSWER_PATH,
        input_type=Any,
        output_type=PublicResponse,
        config_keys=[],
        enabled_endpoints=_ENDPOINTS,  # type: ignore[arg-type]
        include_callback_events=False,
        enable_feedback_endpoint=False,
        enable_public_trace_link_endpoint=False,
    )
    app.add_middleware(_Gate, keys=keys, limits=limits, max_body_bytes=max_body_bytes)
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
        return self.chain.invoke(input, self._told(config))

    @override
    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> PublicResponse:
        return await self.chain.ainvoke(input, self._told(config))

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
        return await self.chain.abatch(inputs, configs, return_exceptions=return_exceptions)


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class _Gate:
    """Authentication and input limits, before LangServe parses anything (pure ASGI)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: Mapping[str, Requester],
        limits: InputLimits,
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.keys = keys
        self.limits = limits
        self.max_body_bytes = max_body_bytes

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
        if refusal is None and scope["method"] == "POST":
            refusal, body = await self._read_body(scope, receive)
            if refusal is None:
                await self.app(scope, _replay(body, receive), send)
                return
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await refusal(scope, receive, send)

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
        problem = self._limit_problem(payload, scope["path"])
        if problem:
            return _error(422, "INPUT_LIMIT_EXCEEDED", problem), b""
        return None, bytes(body)

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
    ``GROUNDLOCK_POLICY`` (default ``R2_POLICY_V1``), ``GROUNDLOCK_STORE`` (an audit store
    path or URI; default none) and ``GROUNDLOCK_API_KEYS``. Built in the worker, after any
    fork, so each worker opens its own audit writer.
    """
    from groundlock.chains.answer import grounded_answer_chain  # noqa: PLC0415

    policy = os.environ.get("GROUNDLOCK_POLICY") or DEFAULT_POLICY
    chain = grounded_answer_chain(
        model=os.environ.get("GROUNDLOCK_MODEL") or None,
        policy=policy,
        store=os.environ.get("GROUNDLOCK_STORE") or None,
    )
    return create_app(chain, policy=policy)
