"""The audit record as an LCEL stage: a ``Judged`` state -> the same state, once recorded.

It sits between R5 and R6 when :func:`~groundlock.grounded_answer_chain` is given a
``store``. A verdict leaves it only after both audit rows of the request are durable; if
they cannot be made durable, the request fails closed (FAILED, ``AUDIT_WRITE_FAILED``) and
no answer text reaches R6, let alone the caller.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, field_validator
from typing_extensions import override

from groundlock._version import __version__
from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.state import Assembled, Judged, Outcome
from groundlock.core.audit import audit_rows
from groundlock.core.firewall import verdict_problem
from groundlock.core.skipped import advanced, refailed
from groundlock.runnables._stage import ALL_OUTCOMES, StateStage
from groundlock.runnables._streaming import Opened, Released, Withdrawn
from groundlock.stores.archive import EvidenceArchive, evidence_row
from groundlock.stores.sink import AuditSink, AuditUnavailable

__all__ = ["ABANDONED_MESSAGES", "AUDIT_CLAIM", "AuditClaim", "RecordValidation"]


@dataclass(slots=True)
class AuditClaim:
    """Whether a request's audit write has been handed to its thread (see ``AUDIT_CLAIM``)."""

    submitted: bool = False
    abandoned: ReasonCode | None = None
    """Why the caller cancels the request, set just before it does (the server's deadline,
    a client gone): a stream abandoned mid-answer is recorded by this stage with it."""


ABANDONED_MESSAGES = {
    ReasonCode.DEADLINE_EXCEEDED: "serving: the request ran past the server's deadline",
    ReasonCode.CLIENT_DISCONNECTED: "serving: the client went away before the answer",
}
"""The message of a request recorded as abandoned, by reason."""


AUDIT_CLAIM: contextvars.ContextVar[AuditClaim | None] = contextvars.ContextVar(
    "groundlock_audit_claim", default=None
)
"""Set by a caller that may cancel a request (the HTTP server) and must know whether its
record is on its way. The async audit stage marks the claim the moment its write is handed
to a thread, and shields that write from cancellation: a request cancelled after that point
is recorded by the stage; one cancelled before it is not, and the caller records it."""

logger = logging.getLogger("groundlock.audit")


class RecordValidation(StateStage[Judged, Judged]):
    """Record the verdict in the audit trail, or fail the request closed.

    The query row takes ``requester_id``, ``requester_role`` and ``retrieval_strategy`` from
    the run's config metadata (a server sets them per request; see
    :data:`groundlock.core.audit.REQUESTER_KEYS`). It runs on every outcome: a refused or
    failed request is recorded like an answered one, and so is input that was no state at
    all (as a FAILED request keeping whatever identity it carried).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "record.RecordValidation"
    consumes = Judged
    runs_on = ALL_OUTCOMES
    store: Any
    """The :class:`~groundlock.stores.AuditSink` the rows go to (a Delta store by default)."""
    archive: EvidenceArchive | None = None
    """The opt-in evidence archive; off (None) by default. Written before the trail, so a
    request whose evidence cannot be archived is recorded, and answered, as failed."""

    @field_validator("store")
    @classmethod
    def _is_a_sink(cls, value: object) -> object:
        if not isinstance(value, AuditSink):  # (pydantic reports a ValueError, not a TypeError)
            message = "store must be an AuditSink (an object with record(validation, query))"
            raise ValueError(message)  # noqa: TRY004
        return value

    @override
    def _run(self, state: Judged, config: RunnableConfig) -> Judged:
        return self._record(state, config, None)

    def _record(
        self, state: Judged, config: RunnableConfig, streamed: tuple[str, ...] | None
    ) -> Judged:
        metadata: Any = config.get("metadata") or {}
        if self.archive is not None:
            try:
                self.archive.record(evidence_row(state, version=__version__))
            except AuditUnavailable as exc:
                # The kind of fault only: nothing of the archived row reaches a log line.
                logger.error("request failed closed: %s", exc)  # noqa: TRY400
                message = "audit: the request's evidence could not be archived"
                state = refailed(state, ReasonCode.AUDIT_WRITE_FAILED, message)
        validation, query = audit_rows(
            state, metadata, version=__version__, policy=self.policy, streamed=streamed
        )
        try:
            self.store.record(validation, query)
        except AuditUnavailable as exc:
            logger.error("request failed closed: audit unavailable (%s)", exc)  # noqa: TRY400
            message = "audit: the request's record could not be made durable"
            return refailed(state, ReasonCode.AUDIT_WRITE_FAILED, message)
        return state

    @override
    async def _awork(self, stage_input: object, config: RunnableConfig) -> Judged:
        # The fsync would block the event loop: it runs on a worker thread, where concurrent
        # requests share it (the spool's group commit). Handed over at once (not when a task
        # first runs) and shielded: once the claim says submitted, a cancellation of the
        # request can no longer stop (or, still queued in the executor, drop) its record.
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        write = loop.run_in_executor(None, context.run, self._work, stage_input, config)
        claim = AUDIT_CLAIM.get()
        if claim is not None:
            claim.submitted = True
        return await asyncio.shield(write)

    streams: ClassVar[bool] = True

    @override
    def _stream(
        self, first: object, rest: Iterator[object], config: RunnableConfig
    ) -> Iterator[Any]:
        """Record a streamed request once, and keep a buffered answer until it is recorded.

        Under a progressive policy the released sentences pass on at once (the reader sees
        them before the verdict) and the row records them; under a buffered one they wait
        here, and a request whose record fails is answered FAILED with none of them.
        """
        flow = _Flow(progressive=self.policy.stream_mode == "progressive")
        final: object = None
        for item in _chained(first, rest):
            passed = flow.take(item)
            if passed is _FINAL:
                final = item
            elif passed is not None:
                yield passed
        recorded = self._streamed_work(final, config, flow.emitted)
        yield from flow.after(recorded)
        yield recorded

    @override
    async def _astream(
        self, first: object, rest: AsyncIterator[object], config: RunnableConfig
    ) -> AsyncIterator[Any]:
        flow = _Flow(progressive=self.policy.stream_mode == "progressive")
        final: object = None
        try:
            async for item in _prepended(first, rest):
                passed = flow.take(item)
                if passed is _FINAL:
                    final = item
                elif passed is not None:
                    yield passed
        except (asyncio.CancelledError, GeneratorExit) as exc:
            # The reader went away (the server cancels; a client closes the stream) before
            # the verdict: the request is recorded here, FAILED, so the store saw it once.
            if flow.opened is not None and final is None:
                await self._record_abandoned(flow, config, exc)
            raise
        recorded = await self._handed_over(final, config, flow.emitted)
        for item in flow.after(recorded):
            yield item
        yield recorded

    def _streamed_work(
        self, final: object, config: RunnableConfig, emitted: tuple[str, ...]
    ) -> Judged:
        try:
            return self._record(self._admitted(final), config, emitted)
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug, by design)
            return self._failed_by_bug(final, exc)

    async def _handed_over(
        self, final: object, config: RunnableConfig, emitted: tuple[str, ...]
    ) -> Judged:
        """``_streamed_work`` on a worker thread, shielded, as ``_awork`` hands a write over."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        write = loop.run_in_executor(None, context.run, self._streamed_work, final, config, emitted)
        claim = AUDIT_CLAIM.get()
        if claim is not None:
            claim.submitted = True
        return await asyncio.shield(write)

    async def _record_abandoned(
        self, flow: _Flow, config: RunnableConfig, exc: BaseException
    ) -> None:
        """Record a stream its reader abandoned before the verdict: FAILED, once."""
        assert flow.opened is not None  # noqa: S101
        claim = AUDIT_CLAIM.get()
        reason = (claim.abandoned if claim else None) or ReasonCode.CLIENT_DISCONNECTED
        state = flow.opened.with_outcome(Outcome.failed(reason, ABANDONED_MESSAGES[reason]))
        judged = advanced(state, Judged, self.policy)
        try:
            await self._handed_over(judged, config, flow.emitted)
        except BaseException:  # noqa: BLE001  (a second cancellation: the write is shielded)
            logger.warning("abandoned stream: its record was handed over (%s)", type(exc).__name__)

    @override
    def verify(self, state: Judged) -> Outcome | None:
        """A verdict from outside is recorded as such only if R5 reaches it again.

        Otherwise the request is recorded FAILED: the stage after this one trusts a state
        this stage hands on, so a forged verdict must stop here.
        """
        problem = verdict_problem(state, self.policy)
        return Outcome.failed(ReasonCode.INPUT_SCHEMA_INVALID, problem) if problem else None

    @override
    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> Judged:
        state = (
            stage_input
            if isinstance(stage_input, Judged)
            else self._failed_input(stage_input, message)
        )
        return refailed(state, reason, message)


_FINAL: Any = object()


def _chained(first: object, rest: Iterator[object]) -> Iterator[object]:
    yield first
    yield from rest


async def _prepended(first: object, rest: AsyncIterator[object]) -> AsyncIterator[object]:
    yield first
    async for item in rest:
        yield item


@dataclass
class _Flow:
    """What one streamed request has passed through the audit step so far."""

    progressive: bool
    opened: Assembled | None = None
    held: list[object] | None = None
    emitted: tuple[str, ...] = ()

    def take(self, item: object) -> object:
        """What to pass on now for ``item`` (None: keep it; ``_FINAL``: the state)."""
        if isinstance(item, Opened):
            self.opened = item.state
            return item
        if isinstance(item, Withdrawn):
            return item
        if isinstance(item, Released):
            if self.progressive:
                self.emitted = (*self.emitted, item.piece.text)
                return item
            self.held = [*(self.held or []), item]
            return None
        return _FINAL

    def after(self, recorded: Judged) -> list[object]:
        """The held sentences, if the request is still answered once recorded."""
        if recorded.status is GenerationStatus.FAILED:
            return []
        return list(self.held or [])
