"""Failure classification: what is retried, what each permanent failure means."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import openai
import pytest
from langchain_core.exceptions import ModelRateLimitError

from groundlock import ReasonCode
from groundlock.providers.failures import classify_failure

REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def _status_error(status: int, code: str | None = None, headers: dict[str, str] | None = None):
    response = httpx.Response(status, headers=headers or {}, request=REQUEST)
    body = {"error": {"message": "m", "code": code}}
    classes = {
        400: openai.BadRequestError,
        429: openai.RateLimitError,
        500: openai.InternalServerError,
    }
    cls = classes.get(status, openai.APIStatusError)
    return cls("m", response=response, body=body)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529])
def test_408_429_and_5xx_are_transient(status: int):
    verdict = classify_failure(_status_error(status), retry_after_cap=10)
    assert verdict.transient
    assert verdict.reason is ReasonCode.MODEL_UNAVAILABLE
    assert verdict.status_code == status


@pytest.mark.parametrize(
    "exc",
    [
        openai.APITimeoutError(request=REQUEST),
        openai.APIConnectionError(request=REQUEST),
        httpx.ConnectTimeout("slow", request=REQUEST),
        TimeoutError(),
        ConnectionResetError(),
        ModelRateLimitError("limited"),
    ],
    ids=["sdk-timeout", "sdk-connection", "httpx-timeout", "timeout", "reset", "core-rate-limit"],
)
def test_timeouts_and_connection_failures_are_transient(exc: Exception):
    assert classify_failure(exc, retry_after_cap=10).transient


@pytest.mark.parametrize(
    ("status", "code", "reason"),
    [
        (400, None, ReasonCode.PROVIDER_REJECTED_REQUEST),
        (401, None, ReasonCode.PROVIDER_AUTH_FAILED),
        (403, None, ReasonCode.PROVIDER_AUTH_FAILED),
        (404, None, ReasonCode.MODEL_NOT_FOUND),
        (409, None, ReasonCode.PROVIDER_REJECTED_REQUEST),
        (422, None, ReasonCode.PROVIDER_REJECTED_REQUEST),
        (429, "insufficient_quota", ReasonCode.PROVIDER_QUOTA_EXHAUSTED),
        (400, "context_length_exceeded", ReasonCode.CONTEXT_LENGTH_EXCEEDED),
    ],
)
def test_other_failures_are_permanent_with_their_own_reason(status, code, reason):
    verdict = classify_failure(_status_error(status, code), retry_after_cap=10)
    assert not verdict.transient
    assert verdict.reason is reason


def test_unknown_exception_is_a_permanent_model_error():
    verdict = classify_failure(ValueError("unexpected"), retry_after_cap=10)
    assert (verdict.transient, verdict.reason) == (False, ReasonCode.MODEL_ERROR)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ],
)
def test_retry_after_is_read_like_the_sdk_reads_it(headers: dict[str, str], seconds: float):
    verdict = classify_failure(_status_error(429, headers=headers), retry_after_cap=10)
    assert verdict.retry_after_seconds == seconds
    assert verdict.transient


def test_retry_after_as_an_http_date():
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    verdict = classify_failure(
        _status_error(503, headers={"retry-after": when}), retry_after_cap=60
    )
    assert verdict.retry_after_seconds is not None
    assert 25 <= verdict.retry_after_seconds <= 30


def test_retry_after_beyond_the_cap_is_not_waited_for():
    verdict = classify_failure(
        _status_error(429, headers={"retry-after": "300"}), retry_after_cap=20
    )
    assert (verdict.transient, verdict.reason) == (False, ReasonCode.MODEL_RATE_LIMITED)


def test_server_may_veto_a_retry():
    error = _status_error(503, headers={"x-should-retry": "false"})
    assert not classify_failure(error, retry_after_cap=10).transient
