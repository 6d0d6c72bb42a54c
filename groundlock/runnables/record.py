"""The audit record as an LCEL stage: ``ValidationResult`` -> the same result, once recorded.

It sits between R5 and R6 when :func:`~groundlock.grounded_answer_chain` is given a
``store``. A verdict leaves it only after both audit rows of the request are durable; if
they cannot be made durable, the request fails closed (FAILED, ``AUDIT_WRITE_FAILED``) and
no answer text reaches R6, let alone the caller.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, field_validator
from typing_extensions import override

from groundlock._version import __version__
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.validation import ValidationResult
from groundlock.core.audit import audit_rows
from groundlock.core.firewall import failed_validation
from groundlock.core.intake import salvage_nested_request_id
from groundlock.runnables._stage import Stage, coerce_input
from groundlock.stores.sink import AuditSink, AuditUnavailable

__all__ = ["RecordValidation"]

logger = logging.getLogger("groundlock.audit")


class RecordValidation(Stage[ValidationResult, ValidationResult]):
    """Record the verdict in the audit trail, or fail the request closed.

    The query row takes ``requester_id``, ``requester_role`` and ``retrieval_strategy`` from
    the run's config metadata (a server sets them per request; see
    :data:`groundlock.core.audit.REQUESTER_KEYS`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "R5.RecordValidation"
    store: Any
    """The :class:`~groundlock.stores.AuditSink` the rows go to (a Delta store by default)."""

    @field_validator("store")
    @classmethod
    def _is_a_sink(cls, value: object) -> object:
        if not isinstance(value, AuditSink):  # (pydantic reports a ValueError, not a TypeError)
            message = "store must be an AuditSink (an object with record(validation, query))"
            raise ValueError(message)  # noqa: TRY004
        return value

    @override
    def _run(self, stage_input: object, config: RunnableConfig) -> ValidationResult:
        result = coerce_input(ValidationResult, stage_input)
        if isinstance(result, str):
            return self._fail_closed(stage_input, ReasonCode.INPUT_SCHEMA_INVALID, result)
        return self._record(result, config)

    @override
    async def _arun(self, stage_input: object, config: RunnableConfig) -> ValidationResult:
        # The fsync would block the event loop: it runs on a worker thread, where concurrent
        # requests share it (the spool's group commit).
        return await asyncio.to_thread(self._run, stage_input, config)

    def _record(self, result: ValidationResult, config: RunnableConfig) -> ValidationResult:
        metadata: Any = config.get("metadata") or {}
        validation, query = audit_rows(result, metadata, version=__version__)
        try:
            self.store.record(validation, query)
        except AuditUnavailable as exc:
            logger.error("request failed closed: audit unavailable (%s)", exc)  # noqa: TRY400
            return failed_validation(
                result.request_id,
                result.execution,
                ReasonCode.AUDIT_WRITE_FAILED,
                "audit: the request's record could not be made durable",
            )
        return result

    def _fail_closed(
        self, stage_input: object, reason: ReasonCode, message: str
    ) -> ValidationResult:
        if isinstance(stage_input, ValidationResult):
            return failed_validation(stage_input.request_id, stage_input.execution, reason, message)
        request_id = salvage_nested_request_id(stage_input, "execution", "prompt", "bundle")
        return failed_validation(request_id, None, reason, message)
