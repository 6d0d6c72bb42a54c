"""The audit trail: where audit rows go (:class:`AuditSink`), and the Delta Lake store.

The row models are the audit contract (:mod:`groundlock.contracts.audit_rows`), re-exported
here for readers of the tables.
"""

from groundlock.contracts.audit_rows import FeedbackRow, QueryRow, ValidationRow
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.delta import DeltaAuditStore
from groundlock.stores.sink import AuditSink, AuditUnavailable, MemoryAuditSink

__all__ = [
    "AuditSink",
    "AuditUnavailable",
    "DeltaAuditStore",
    "EvidenceArchive",
    "FeedbackRow",
    "MemoryAuditSink",
    "QueryRow",
    "ValidationRow",
]
