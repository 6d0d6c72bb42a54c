"""R6 as an LCEL stage: a ``Judged`` state -> ``PublicResponse``, and the request's log line."""

from __future__ import annotations

import json
import logging

from langchain_core.runnables import RunnableConfig
from typing_extensions import override

from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.response import PublicResponse
from groundlock.contracts.state import Assembled, Judged, Outcome
from groundlock.core.firewall import verdict_problem
from groundlock.core.intake import salvage_identity
from groundlock.core.packaging import failed_response, package_response, request_summary
from groundlock.runnables._stage import ALL_OUTCOMES, StateStage

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
