"""R4's pure retry decisions: retry or not, wait, stop, and what the result records."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

from groundlock.contracts.reasons import ReasonCode
from groundlock.core.attempts import (
    JITTER_RANGE,
    Attempt,
    Stop,
    attempt_records,
    final_reason,
    is_retried,
    stop_reason,
    wait_seconds,
)
from groundlock.policies.model import ExecutionLimits
from groundlock.providers.failures import FailureVerdict

LIMITS = ExecutionLimits(
    max_attempts=4,
    attempt_timeout_seconds=30.0,
    request_deadline_seconds=90.0,
    retry_after_cap_seconds=20.0,
    backoff_initial_seconds=0.5,
    backoff_max_seconds=8.0,
)


def _verdict(
    *,
    transient: bool,
    reason: ReasonCode = ReasonCode.MODEL_UNAVAILABLE,
    status: int | None = 503,
    retry_after: float | None = None,
) -> FailureVerdict:
    return FailureVerdict(
        transient=transient, reason=reason, status_code=status, retry_after_seconds=retry_after
    )


@dataclass
class _Jitter:
    """A jitter source that returns a fixed fraction and remembers what it was asked for."""

    fraction: float
    asked: list[tuple[float, float]]

    def __call__(self, low: float, high: float) -> float:
        self.asked.append((low, high))
        return self.fraction


# -- is_retried ---------------------------------------------------------------------------
def test_only_transient_failures_are_retried():
    assert is_retried(_verdict(transient=True))
    assert not is_retried(_verdict(transient=False, reason=ReasonCode.PROVIDER_AUTH_FAILED))
    assert not is_retried(None)


# -- wait_seconds -------------------------------------------------------------------------
def test_retry_after_is_waited_as_given_without_jitter():
    jitter = _Jitter(0.5, [])
    assert wait_seconds(3, 1.5, LIMITS, jitter=jitter) == 1.5
    assert jitter.asked == []


@pytest.mark.parametrize("retry_after", [None, 0.0])
def test_no_retry_after_falls_back_to_backoff(retry_after):
    jitter = _Jitter(1.0, [])
    assert wait_seconds(1, retry_after, LIMITS, jitter=jitter) == 0.5
    assert jitter.asked == [JITTER_RANGE]


@pytest.mark.parametrize(
    ("attempt_number", "ceiling"),
    [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 8.0), (10, 8.0)],
)
def test_backoff_doubles_up_to_the_cap_scaled_by_the_jitter(attempt_number, ceiling):
    assert wait_seconds(attempt_number, None, LIMITS, jitter=_Jitter(1.0, [])) == ceiling
    assert wait_seconds(attempt_number, None, LIMITS, jitter=_Jitter(0.75, [])) == ceiling * 0.75


def test_default_jitter_stays_within_its_range():
    # Whatever the draws, every wait lies in the jittered band below its ceiling.
    low, high = JITTER_RANGE
    for attempt_number in range(1, 8):
        ceiling = min(8.0, 0.5 * 2 ** (attempt_number - 1))
        for _ in range(50):
            seconds = wait_seconds(attempt_number, None, LIMITS)
            assert ceiling * low <= seconds <= ceiling * high


# -- stop_reason --------------------------------------------------------------------------
def test_another_attempt_starts_while_the_budget_and_deadline_allow():
    assert stop_reason(1, elapsed_seconds=0.0, upcoming_wait_seconds=0.5, limits=LIMITS) is None
    assert stop_reason(3, elapsed_seconds=10.0, upcoming_wait_seconds=2.0, limits=LIMITS) is None


def test_the_attempt_budget_stops_retrying():
    assert stop_reason(4, 0.0, 0.5, LIMITS) is Stop.MAX_ATTEMPTS
    assert stop_reason(5, 0.0, 0.5, LIMITS) is Stop.MAX_ATTEMPTS


def test_the_budget_is_reported_before_the_deadline():
    assert stop_reason(4, 89.0, 8.0, LIMITS) is Stop.MAX_ATTEMPTS


def test_an_attempt_that_could_not_finish_by_the_deadline_is_not_started():
    # 55 s elapsed + 5 s wait + 30 s timeout = 90 s: it can finish exactly on the deadline.
    assert stop_reason(2, 55.0, 5.0, LIMITS) is None
    assert stop_reason(2, 55.0, 5.001, LIMITS) is Stop.DEADLINE
    assert stop_reason(2, 60.001, 0.0, LIMITS) is Stop.DEADLINE


# -- attempt_records ----------------------------------------------------------------------
def test_records_keep_times_outcomes_and_waits_but_no_exception_text():
    start = 100.0
    attempts = [
        Attempt(
            number=1, started=100.0, duration=0.25, error=TimeoutError("quotes the prompt"),
            verdict=_verdict(transient=True, status=None), wait=0.5,
        ),
        Attempt(
            number=2, started=100.75, duration=0.5, error=ValueError("quotes the prompt"),
            verdict=_verdict(transient=False, reason=ReasonCode.PROVIDER_AUTH_FAILED, status=401),
        ),
        Attempt(number=3, started=101.5, duration=0.125),
    ]  # fmt: skip
    first, second, third = attempt_records(attempts, start)

    assert (first.number, first.started_ms, first.duration_ms) == (1, 0.0, 250.0)
    assert (first.outcome, first.error_type, first.status_code) == (
        "transient_error", "TimeoutError", None,
    )  # fmt: skip
    assert (first.reason_code, first.wait_seconds) == (ReasonCode.MODEL_UNAVAILABLE, 0.5)

    assert (second.number, second.started_ms, second.duration_ms) == (2, 750.0, 500.0)
    assert (second.outcome, second.error_type, second.status_code) == ("error", "ValueError", 401)
    assert (second.reason_code, second.wait_seconds) == (ReasonCode.PROVIDER_AUTH_FAILED, None)

    assert (third.outcome, third.error_type, third.status_code, third.reason_code) == (
        "ok", None, None, None,
    )  # fmt: skip
    assert (third.started_ms, third.duration_ms, third.wait_seconds) == (1500.0, 125.0, None)
    assert "quotes the prompt" not in repr(attempt_records(attempts, start))


def test_records_carry_the_retry_after_the_provider_asked_for():
    attempt = Attempt(
        number=1, started=0.0, error=OSError(), verdict=_verdict(transient=True, retry_after=2.0),
        wait=2.0,
    )  # fmt: skip
    (record,) = attempt_records([attempt], 0.0)
    assert (record.retry_after_seconds, record.wait_seconds) == (2.0, 2.0)


def test_a_clock_that_steps_back_cannot_break_the_record():
    (record,) = attempt_records([Attempt(number=1, started=4.0, duration=-1.0)], 5.0)
    assert (record.started_ms, record.duration_ms) == (0.0, 0.0)


def test_no_attempts_no_records():
    assert attempt_records([], 0.0) == ()


# -- final_reason -------------------------------------------------------------------------
def test_a_failure_that_was_not_retryable_keeps_its_own_reason():
    verdict = _verdict(transient=False, reason=ReasonCode.MODEL_RATE_LIMITED, status=429)
    assert final_reason(verdict, deadline_hit=False) is ReasonCode.MODEL_RATE_LIMITED
    assert final_reason(verdict, deadline_hit=True) is ReasonCode.MODEL_RATE_LIMITED


def test_a_transient_failure_says_why_the_retries_ended():
    verdict = _verdict(transient=True)
    assert final_reason(verdict, deadline_hit=False) is ReasonCode.MODEL_UNAVAILABLE
    assert final_reason(verdict, deadline_hit=True) is ReasonCode.MODEL_DEADLINE_EXCEEDED


def test_a_failure_of_no_classified_attempt_is_a_model_error():
    assert final_reason(None, deadline_hit=False) is ReasonCode.MODEL_ERROR
    assert final_reason(None, deadline_hit=True) is ReasonCode.MODEL_ERROR


# -- layering -----------------------------------------------------------------------------
def _imports(module: str) -> set[str]:
    spec = find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_decisions_import_neither_langchain_nor_the_provider_layer():
    seen: set[str] = set()
    pending = ["groundlock.core.attempts"]
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in _imports(module):
            assert not name.startswith(("langchain", "tenacity")), f"{module} imports {name}"
            assert not name.startswith(("groundlock.providers", "groundlock.runnables")), module
            if name.startswith("groundlock."):
                pending.append(name)
    assert "groundlock.contracts.execution" in seen
