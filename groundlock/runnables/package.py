"""R6 as an LCEL stage: a ``Judged`` state -> ``PublicResponse``, and the request's log line."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from typing_extensions import override

from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.response import PublicResponse
from groundlock.contracts.state import Assembled, Judged, Outcome
from groundlock.contracts.stream import AnswerDelta, ResponseEvent, Retract, StreamEvent
from groundlock.core.firewall import verdict_problem
from groundlock.core.intake import salvage_identity
from groundlock.core.packaging import (
    failed_response,
    package_response,
    public_citations,
    request_summary,
)
from groundlock.runnables._stage import ALL_OUTCOMES, StateStage
from groundlock.runnables._streaming import Opened, Released, Withdrawn

__all__ = ["PackageResponse"]

request_logger = logging.getLogger("groundlock.request")


class PackageResponse(StateStage[Judged, PublicResponse]):
    """R6: package the verdict into the public response, and log one line per request.

    The log line (logger ``groundlock.request``; INFO, or WARNING when the request FAILED)
    is a JSON object of identities, versions, hashes, statuses, counts and timings: the
    ``000`` minimum debug set, with no prompt, evidence or answer text. The same fields are
    attached to the record as ``record.groundlock`` for structured handlers.

    A verdict that arrives as data (not from R5 in this process) is validated again, and
    refused unless R5 would reach the same verdict on the same answer.
    """

    name: str | None = "R6.PackageResponse"
    consumes = Judged
    runs_on = ALL_OUTCOMES

    @override
    def _run(self, state: Judged, config: RunnableConfig) -> PublicResponse:
        response = package_response(state, self.policy)
        _log_request(state, response)
        return response

    streams: ClassVar[bool] = True

    @override
    def _stream(
        self, first: object, rest: Iterator[object], config: RunnableConfig
    ) -> Iterator[Any]:
        """The public events of a streamed request (:mod:`groundlock.contracts.stream`)."""
        events = _Events(self)
        final: object = None
        try:
            for item in _chained(first, rest):
                if events.take(item):
                    final = item
                yield from events.ready()
            yield from events.closing(self._work(final, config))
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug: still one response)
            yield from events.closing(self._failed_by_bug(final or first, exc))

    @override
    async def _astream(
        self, first: object, rest: AsyncIterator[object], config: RunnableConfig
    ) -> AsyncIterator[Any]:
        events = _Events(self)
        final: object = None
        try:
            if events.take(first):
                final = first
            for event in events.ready():
                yield event
            async for item in rest:
                if events.take(item):
                    final = item
                for event in events.ready():
                    yield event
            response = await self._awork(final, config)
        except Exception as exc:  # noqa: BLE001  (fail closed on any bug: still one response)
            response = self._failed_by_bug(final or first, exc)
        for event in events.closing(response):
            yield event

    @override
    def verify(self, state: Judged) -> Outcome | None:
        """A verdict from outside stands only if R5 reaches it again on the same answer."""
        problem = verdict_problem(state, self.policy)
        return Outcome.failed(ReasonCode.INPUT_SCHEMA_INVALID, problem) if problem else None

    @override
    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> PublicResponse:
        state = stage_input if isinstance(stage_input, Judged) else None
        if isinstance(stage_input, Assembled):  # a state, of any stage: its own identity
            request_id = stage_input.request_id
        else:
            request_id = salvage_identity(stage_input)[0]
        response = failed_response(request_id, reason, message)
        _log_request(state, response)
        return response


def _log_request(state: Judged | None, response: PublicResponse) -> None:
    level = logging.WARNING if response.status is GenerationStatus.FAILED else logging.INFO
    if not request_logger.isEnabledFor(level):
        return
    summary = request_summary(state, response)
    request_logger.log(
        level,
        "groundlock.request %s",
        json.dumps(summary, sort_keys=True, separators=(",", ":")),
        extra={"groundlock": summary},
    )


def _chained(first: object, rest: Iterator[object]) -> Iterator[object]:
    yield first
    yield from rest


@dataclass
class _Events:
    """The public events of one streamed request, from the items the audit step passes."""

    stage: PackageResponse
    subject: Assembled | None = None
    emitted: int = 0
    withdrawn: int = 0
    """Deltas before this index were withdrawn already."""
    pending: list[StreamEvent] = field(default_factory=list)

    def take(self, item: object) -> bool:
        """Turn ``item`` into events; True if it is the final state."""
        if isinstance(item, Opened):
            self.subject = item.state
        elif isinstance(item, Released) and self.subject is not None:
            piece, evidence = item.piece, self.subject.bundle.selected_evidence
            self.pending.append(
                AnswerDelta(
                    request_id=self.subject.request_id,
                    index=self.emitted,
                    text=piece.text,
                    citations=public_citations(evidence, piece.anchors, self.stage.policy),
                )
            )
            self.emitted += 1
        elif isinstance(item, Withdrawn):
            self._retract(None)
        else:
            return True
        return False

    def ready(self) -> list[StreamEvent]:
        out, self.pending = self.pending, []
        return out

    def closing(self, response: PublicResponse) -> list[StreamEvent]:
        """The retraction if the answer did not stand, then the response."""
        if response.status is not GenerationStatus.OK:
            self._retract(response.failure_reason)
        return [*self.ready(), ResponseEvent(response=response)]

    def _retract(self, reason: ReasonCode | None) -> None:
        if self.emitted > self.withdrawn:
            self.pending.append(
                Retract(
                    request_id=self.subject.request_id if self.subject else None,
                    indexes=tuple(range(self.withdrawn, self.emitted)),
                    reason=reason,
                )
            )
            self.withdrawn = self.emitted
