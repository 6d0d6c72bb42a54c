"""R4's retry decisions: which failures are retried, how long to wait, when to stop.

These are the rules of :class:`~groundlock.policies.model.ExecutionLimits`, written as
functions of plain numbers so that they can be read and tested without a model, a clock,
tenacity or LangChain. The runnable (:mod:`groundlock.runnables.execute`) owns everything
stateful — the clock, the messages and their integrity checks, tenacity — and asks these
functions at each step:

* :func:`is_retried` — may this failure be retried at all;
* :func:`wait_seconds` — how long to wait before the next attempt;
* :func:`stop_reason` — whether to start another attempt (attempt budget and deadline);
* :func:`attempt_records` and :func:`final_reason` — what the result records.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from groundlock.contracts.execution import AttemptRecord
from groundlock.contracts.reasons import ReasonCode
from groundlock.policies.model import ExecutionLimits

__all__ = [
    "JITTER_RANGE",
    "Attempt",
    "Stop",
    "Verdict",
    "attempt_records",
    "final_reason",
    "is_retried",
    "stop_reason",
    "wait_seconds",
]

JITTER_RANGE = (0.75, 1.0)
"""Fraction of the backoff ceiling actually waited, drawn uniformly from this range."""


class Verdict(Protocol):
    """What R4 concluded about one failed attempt.

    A protocol rather than :class:`groundlock.providers.failures.FailureVerdict` itself, so
    that the core does not import the provider layer (which reads LangChain's exceptions).
    """

    @property
    def transient(self) -> bool:
        """Whether the same bytes may be sent again."""

    @property
    def reason(self) -> ReasonCode:
        """What the failure means if it is the last one."""

    @property
    def status_code(self) -> int | None:
        """The HTTP status, when there was one."""

    @property
    def retry_after_seconds(self) -> float | None:
        """The wait the provider asked for, when it asked."""


class Stop(StrEnum):
    """Why no further attempt is started."""

    MAX_ATTEMPTS = "max_attempts"
    """The policy's attempt budget is spent."""
    DEADLINE = "deadline"
    """Another attempt could not finish, at its timeout, within the request deadline."""


@dataclass(slots=True)
class Attempt:
    """One attempt while it happens: clock readings (seconds) and, if it failed, why.

    Mutable because it is filled in as the attempt runs and as the retry decisions are made;
    :func:`attempt_records` turns it into the immutable :class:`AttemptRecord`.
    """

    number: int
    """1 for the first attempt."""
    started: float
    """Clock reading when the attempt started."""
    duration: float = 0.0
    error: BaseException | None = None
    """The failure, kept as an object so that the caller can tell it from later ones."""
    verdict: Verdict | None = None
    """None for an attempt that succeeded."""
    wait: float | None = None
    """The wait taken before the next attempt; None when there was no next attempt."""


def is_retried(verdict: Verdict | None) -> bool:
    """Whether a failed attempt may be followed by another.

    Only transient failures are retried, because only they can turn out differently when
    the same bytes are sent again; an attempt with no verdict (one that never failed, or a
    failure that belongs to no attempt) is never retried.
    """
    return verdict is not None and verdict.transient


def wait_seconds(
    attempt_number: int,
    retry_after_seconds: float | None,
    limits: ExecutionLimits,
    *,
    jitter: Callable[[float, float], float] = random.uniform,
) -> float:
    """How long to wait after failed attempt ``attempt_number`` (1-based) before the next.

    The provider knows best when it can take the request again, so its Retry-After is
    honoured as given (:func:`~groundlock.providers.failures.classify_failure` has already
    made a request asking for more than the policy's cap fail instead). A Retry-After of 0
    counts as none. Otherwise the wait doubles from ``backoff_initial_seconds`` with each
    attempt, up to ``backoff_max_seconds``, and is scaled by a random factor in
    :data:`JITTER_RANGE` so that clients which failed together do not all retry together.
    ``jitter(low, high)`` draws that factor; tests pass a fixed one.
    """
    if retry_after_seconds:
        return retry_after_seconds
    ceiling = min(
        limits.backoff_max_seconds, limits.backoff_initial_seconds * 2.0 ** (attempt_number - 1)
    )
    return ceiling * jitter(*JITTER_RANGE)


def stop_reason(
    attempt_number: int,
    elapsed_seconds: float,
    upcoming_wait_seconds: float,
    limits: ExecutionLimits,
) -> Stop | None:
    """Why no attempt should follow attempt ``attempt_number``, or None to go on.

    ``elapsed_seconds`` is the time since the request started and ``upcoming_wait_seconds``
    the wait before the next attempt. Another attempt starts only if it can finish, at its
    timeout, within the request deadline: one that might be cut off by the deadline could
    only waste the provider's capacity and the caller's time. The attempt budget is checked
    first, so a request that used every attempt reports that rather than the deadline.
    """
    if attempt_number >= limits.max_attempts:
        return Stop.MAX_ATTEMPTS
    upcoming = upcoming_wait_seconds + limits.attempt_timeout_seconds
    if elapsed_seconds + upcoming > limits.request_deadline_seconds:
        return Stop.DEADLINE
    return None


def attempt_records(attempts: Iterable[Attempt], start: float) -> tuple[AttemptRecord, ...]:
    """The audit records of ``attempts``, times in milliseconds after ``start``.

    Only the exception's class name is kept, never its text, which may quote the prompt.
    Times are clamped at zero so that a clock that steps back cannot fail the contract.
    """
    return tuple(
        AttemptRecord(
            number=a.number,
            started_ms=max(0.0, (a.started - start) * 1000),
            duration_ms=max(0.0, a.duration * 1000),
            outcome="ok"
            if a.verdict is None
            else ("transient_error" if a.verdict.transient else "error"),
            error_type=type(a.error).__name__ if a.error is not None else None,
            status_code=a.verdict.status_code if a.verdict else None,
            reason_code=a.verdict.reason if a.verdict else None,
            retry_after_seconds=a.verdict.retry_after_seconds if a.verdict else None,
            wait_seconds=a.wait,
        )
        for a in attempts
    )


def final_reason(verdict: Verdict | None, *, deadline_hit: bool) -> ReasonCode:
    """The reason a request failed, given the verdict on its last attempt's failure.

    A failure that was not retryable keeps its own reason. A transient one that was still
    failing when the retries ended says why they ended: the deadline (``deadline_hit``) or
    the attempt budget (MODEL_UNAVAILABLE). A failure with no verdict did not come from a
    classified attempt, so nothing more specific than MODEL_ERROR can be said of it.
    """
    if verdict is None:
        return ReasonCode.MODEL_ERROR
    if not verdict.transient:
        return verdict.reason
    return ReasonCode.MODEL_DEADLINE_EXCEEDED if deadline_hit else ReasonCode.MODEL_UNAVAILABLE
