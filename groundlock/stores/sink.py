"""Where audit rows go: the :class:`AuditSink` protocol, and an in-memory sink for tests.

The audit step of the chain (``RecordValidation``) depends on this seam, not on Delta Lake:
a sink makes both rows of one request durable together, or raises :class:`AuditUnavailable`
and the request fails closed with ``AUDIT_WRITE_FAILED``. :class:`~groundlock.DeltaAuditStore`
is the production sink; another (a database, a message queue) needs only ``record``.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from groundlock.contracts.audit_rows import QueryRow, ValidationRow

__all__ = ["AuditSink", "AuditUnavailable", "MemoryAuditSink"]


class AuditUnavailable(Exception):  # noqa: N818  (reads as the condition it reports)
    """The audit trail cannot accept a row now; the message names no path or credential."""


@runtime_checkable
class AuditSink(Protocol):
    """A durable destination for the two audit rows of each request."""

    def record(self, validation: ValidationRow, query: QueryRow) -> None:
        """Make both rows durable before returning, or raise :class:`AuditUnavailable`.

        Called once per request, from several threads at once: a sink must be thread-safe.
        """


class MemoryAuditSink:
    """Rows kept in lists: for tests, and for trying the chain without a store.

    Nothing is durable; ``fail`` makes every ``record`` raise, as a sink that has lost its
    storage would.
    """

    def __init__(self) -> None:
        self.validations: list[ValidationRow] = []
        self.queries: list[QueryRow] = []
        self.fail = False
        self._lock = threading.Lock()

    def record(self, validation: ValidationRow, query: QueryRow) -> None:
        """Keep both rows, or raise :class:`AuditUnavailable` when ``fail`` is set."""
        if self.fail:
            raise AuditUnavailable("the in-memory sink is set to fail")
        with self._lock:
            self.validations.append(validation)
            self.queries.append(query)
