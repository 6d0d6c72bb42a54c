"""The audit trail: where audit rows go (:class:`AuditSink`), and the Delta Lake store.

The row models are the audit contract (:mod:`groundlock.contracts.audit_rows`), re-exported
here for readers of the tables.

Each name loads on first use (PEP 562), so a module that needs only :class:`AuditSink` or
:class:`AuditUnavailable` does not load Arrow (:mod:`~groundlock.stores.arrow`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "AuditSink": "groundlock.stores.sink",
    "AuditUnavailable": "groundlock.stores.sink",
    "DeltaAuditStore": "groundlock.stores.delta",
    "EvidenceArchive": "groundlock.stores.archive",
    "FeedbackRow": "groundlock.contracts.audit_rows",
    "MemoryAuditSink": "groundlock.stores.sink",
    "QueryRow": "groundlock.contracts.audit_rows",
    "ValidationRow": "groundlock.contracts.audit_rows",
}
"""Each public name and the module it is defined in."""


def __getattr__(name: str) -> Any:  # noqa: ANN401  (a public name of any kind)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
