"""The audit trail: Delta Lake tables of validations, queries and feedback."""

from groundlock.stores.delta import AuditUnavailable, DeltaAuditStore
from groundlock.stores.rows import FeedbackRow, QueryRow, ValidationRow

__all__ = ["AuditUnavailable", "DeltaAuditStore", "FeedbackRow", "QueryRow", "ValidationRow"]
