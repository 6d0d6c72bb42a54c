"""Pydantic models of every stage boundary, status enums and reason codes.

Every model is frozen and closed to unknown fields (``extra="forbid"``): a contract that
silently accepted a misspelt field would silently ignore it.
"""

from groundlock.contracts.assembly import (
    AnswerBundle,
    AssemblyMetrics,
    AssemblyThresholds,
    AssemblyTrace,
    DroppedRow,
    SelectedEvidence,
)
from groundlock.contracts.enums import AssemblyStatus, RetrievalStatus
from groundlock.contracts.reasons import DropReason, ReasonCode
from groundlock.contracts.retrieval import FiltersApplied, RetrievalBundle, RetrievalRow

__all__ = [
    "AnswerBundle",
    "AssemblyMetrics",
    "AssemblyStatus",
    "AssemblyThresholds",
    "AssemblyTrace",
    "DropReason",
    "DroppedRow",
    "FiltersApplied",
    "ReasonCode",
    "RetrievalBundle",
    "RetrievalRow",
    "RetrievalStatus",
    "SelectedEvidence",
]
