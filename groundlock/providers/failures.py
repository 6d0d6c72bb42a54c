"""Which model-call failures are worth retrying, how long to wait, and what they mean.

Transient, retried with the same bytes: timeouts, connection errors, HTTP 408, 429 (but not
``insufficient_quota``, which no amount of waiting fixes) and 5xx. Everything else fails at
once with its own reason code. A provider may also veto a retry (``x-should-retry: false``),
and a Retry-After longer than the policy's cap is not waited for.

Classification works from what the exception carries (status code, error code, headers),
so it covers the OpenAI SDK, langchain-openai's re-raised subclasses, langchain-core's
``ModelError`` family and any SDK that follows the same conventions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from langchain_core.exceptions import ContextOverflowError, ModelError

from groundlock.contracts.reasons import ReasonCode

__all__ = ["FailureVerdict", "classify_failure"]

_TRANSIENT_STATUS = frozenset({408, 429})
_AUTH_STATUS = frozenset({401, 403})


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureVerdict:
    """How R4 treats one failed attempt."""

    transient: bool
    reason: ReasonCode
    status_code: int | None
    retry_after_seconds: float | None


def classify_failure(exc: BaseException, retry_after_cap: float) -> FailureVerdict:
    """Decide whether ``exc`` may be retried and what it means if it may not."""
    status = _status_code(exc)
    retry_after = _retry_after_seconds(exc)
    code = _error_code(exc)
    if code == "insufficient_quota":
        return FailureVerdict(
            transient=False,
            reason=ReasonCode.PROVIDER_QUOTA_EXHAUSTED,
            status_code=status,
            retry_after_seconds=retry_after,
        )
    if isinstance(exc, ContextOverflowError) or code == "context_length_exceeded":
        return FailureVerdict(
            transient=False,
            reason=ReasonCode.CONTEXT_LENGTH_EXCEEDED,
            status_code=status,
            retry_after_seconds=retry_after,
        )
    if _header(exc, "x-should-retry") == "false":
        return FailureVerdict(
            transient=False,
            reason=ReasonCode.MODEL_UNAVAILABLE,
            status_code=status,
            retry_after_seconds=retry_after,
        )
    transient = _is_transient(exc, status)
    if transient and retry_after is not None and retry_after > retry_after_cap:
        return FailureVerdict(
            transient=False,
            reason=ReasonCode.MODEL_RATE_LIMITED,
            status_code=status,
            retry_after_seconds=retry_after,
        )
    if transient:
        return FailureVerdict(
            transient=True,
            reason=ReasonCode.MODEL_UNAVAILABLE,
            status_code=status,
            retry_after_seconds=retry_after,
        )
    return FailureVerdict(
        transient=False,
        reason=_permanent_reason(status),
        status_code=status,
        retry_after_seconds=retry_after,
    )


def _is_transient(exc: BaseException, status: int | None) -> bool:
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    if isinstance(exc, ModelError):
        return exc.is_retryable
    # No HTTP status: a timeout or a failure to reach the provider at all.
    return isinstance(exc, TimeoutError | ConnectionError) or _is_transport_error(exc)


def _is_transport_error(exc: BaseException) -> bool:
    import httpx  # noqa: PLC0415  (httpx comes with the OpenAI SDK; import only when needed)

    if isinstance(exc, httpx.TransportError):
        return True
    try:
        import openai  # noqa: PLC0415
    except ImportError:  # pragma: no cover  (langchain-openai is a dependency)
        return False
    return isinstance(exc, openai.APIConnectionError)  # includes APITimeoutError


def _permanent_reason(status: int | None) -> ReasonCode:
    if status in _AUTH_STATUS:
        return ReasonCode.PROVIDER_AUTH_FAILED
    if status == 404:
        return ReasonCode.MODEL_NOT_FOUND
    if status is not None and 400 <= status < 500:
        return ReasonCode.PROVIDER_REJECTED_REQUEST
    return ReasonCode.MODEL_ERROR


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return code
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("code"), str):
            return str(inner["code"])
    return None


def _header(exc: BaseException, name: str) -> str | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    value = headers.get(name)
    return str(value).strip().lower() if value is not None else None


def _retry_after_seconds(exc: BaseException) -> float | None:
    """Retry-After as the OpenAI SDK reads it: ``retry-after-ms``, then seconds, then a date.

    An unreadable ``retry-after-ms`` falls back to ``retry-after``; a wait of zero (or a date
    in the past) counts as no instruction at all, so the usual backoff applies.
    """
    milliseconds = _finite(_header(exc, "retry-after-ms") or "")
    if milliseconds:
        return milliseconds / 1000
    value = _header(exc, "retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return seconds or None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" parses as naive; HTTP dates are always GMT
        when = when.replace(tzinfo=UTC)
    remaining = (when - datetime.now(UTC)).total_seconds()
    return remaining if remaining > 0 else None


def _finite(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None
