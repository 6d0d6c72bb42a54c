"""The audit trail: where rows go (:class:`AuditSink`), how tools read them, the Delta store.

The row models are the audit contract (:mod:`groundlock.contracts.audit_rows`), re-exported
here for readers of the tables.

Each name loads on first use (PEP 562), so a module that needs only :class:`AuditSink` or
:class:`AuditUnavailable` does not load Arrow (:mod:`~groundlock.stores.arrow`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groundlock._lazy import lazy_names

if TYPE_CHECKING:
    from groundlock.contracts.audit_rows import FeedbackRow, QueryRow, ValidationRow
    from groundlock.stores.archive import EvidenceArchive
    from groundlock.stores.delta import DeltaAuditStore
    from groundlock.stores.sink import (
        AuditReader,
        AuditSink,
        AuditUnavailable,
        MemoryAuditSink,
        TrailQuery,
    )

__all__ = [
    "AuditReader",
    "AuditSink",
    "AuditUnavailable",
    "DeltaAuditStore",
    "EvidenceArchive",
    "FeedbackRow",
    "MemoryAuditSink",
    "QueryRow",
    "TrailQuery",
    "ValidationRow",
]

_LAZY: dict[str, str] = {
    "AuditReader": "groundlock.stores.sink",
    "AuditSink": "groundlock.stores.sink",
    "AuditUnavailable": "groundlock.stores.sink",
    "DeltaAuditStore": "groundlock.stores.delta",
    "EvidenceArchive": "groundlock.stores.archive",
    "FeedbackRow": "groundlock.contracts.audit_rows",
    "MemoryAuditSink": "groundlock.stores.sink",
    "QueryRow": "groundlock.contracts.audit_rows",
    "TrailQuery": "groundlock.stores.sink",
    "ValidationRow": "groundlock.contracts.audit_rows",
}
"""Each public name and the module it is defined in."""

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
