"""R6 as an LCEL stage: ``ValidationResult`` -> ``PublicResponse``, and the request's log line."""

from __future__ import annotations

import json
import logging

from langchain_core.runnables import RunnableConfig

from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.response import PublicResponse
from groundlock.contracts.validation import ValidationResult
from groundlock.core.firewall import validate_answer
from groundlock.core.intake import salvage_nested_request_id
from groundlock.core.package import failed_response, package_response, request_summary
from groundlock.core.prompt import policy_mismatch
from groundlock.runnables._stage import PolicyStage, coerce_input

__all__ = ["PackageResponse"]

request_logger = logging.getLogger("groundlock.request")


class PackageResponse(PolicyStage[ValidationResult, PublicResponse]):
    """R6: package the verdict into the public response, and log one line per request.

    The log line (logger ``groundlock.request``; INFO, or WARNING when the request FAILED)
    is a JSON object of identities, versions, hashes, statuses, counts and timings: the
    ``000`` minimum debug set, with no prompt, evidence or answer text. The same fields are
    attached to the record as ``record.groundlock`` for structured handlers.

    A verdict that arrives as data (not from R5 in this process) is validated again, and
    refused unless R5 would reach the same verdict on the same answer.
    """

    name: str | None = "R6.PackageResponse"

    def _run(self, stage_input: object, config: RunnableConfig) -> PublicResponse:
        result = coerce_input(ValidationResult, stage_input)
        if isinstance(result, str):
            return self._fail_closed(stage_input, ReasonCode.INPUT_SCHEMA_INVALID, result)
        problem = None if result is stage_input else self._outside_problem(result)
        response = (
            failed_response(result.request_id, ReasonCode.INPUT_SCHEMA_INVALID, problem)
            if problem
            else package_response(result)
        )
        _log_request(result, response)
        return response

    def _outside_problem(self, result: ValidationResult) -> str | None:
        execution = result.execution
        if execution is None:
            return None  # a FAILED verdict with nothing to re-check (the contract ensures it)
        problem = policy_mismatch(execution.prompt.bundle, self.policy)
        if problem:
            return problem
        again = validate_answer(execution, self.policy)
        same = (
            again.validation_status,
            again.failure_reason,
            again.validated_answer_text,
            again.validated_citations,
        ) == (
            result.validation_status,
            result.failure_reason,
            result.validated_answer_text,
            result.validated_citations,
        )
        return None if same else "validation: not the verdict R5 reaches on this answer"

    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> PublicResponse:
        if isinstance(stage_input, ValidationResult):
            request_id = stage_input.request_id
            result: ValidationResult | None = stage_input
        else:
            request_id = salvage_nested_request_id(stage_input, "execution", "prompt", "bundle")
            result = None
        response = failed_response(request_id, reason, message)
        _log_request(result, response)
        return response


def _log_request(result: ValidationResult | None, response: PublicResponse) -> None:
    level = logging.WARNING if response.status is GenerationStatus.FAILED else logging.INFO
    if not request_logger.isEnabledFor(level):
        return
    summary = request_summary(result, response)
    request_logger.log(
        level,
        "groundlock.request %s",
        json.dumps(summary, sort_keys=True, separators=(",", ":")),
        extra={"groundlock": summary},
    )
