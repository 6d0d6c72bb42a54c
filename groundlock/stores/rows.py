"""Moved: the row models and their Arrow half.

The models are in :mod:`groundlock.contracts.audit_rows`, the Arrow conversion in
:mod:`groundlock.stores.arrow` (kept importable while the command line moves).
"""

from groundlock.contracts.audit_rows import FeedbackRow, QueryRow, TableRow, ValidationRow
from groundlock.stores.arrow import arrow_schema, to_arrow

__all__ = ["FeedbackRow", "QueryRow", "TableRow", "ValidationRow", "arrow_schema", "to_arrow"]
