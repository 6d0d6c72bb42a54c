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
from groundlock.contracts.enums import (
    AssemblyStatus,
    BuildStatus,
    FinishReason,
    GenerationStatus,
    RetrievalStatus,
)
from groundlock.contracts.execution import AttemptRecord, LLMExecutionResult, PinnedModel
from groundlock.contracts.prompt import PromptBuildResult, PromptMessage, PromptTokenAccount
from groundlock.contracts.reasons import DropReason, ReasonCode
from groundlock.contracts.retrieval import FiltersApplied, RetrievalBundle, RetrievalRow

__all__ = [
    "AnswerBundle",
    "AssemblyMetrics",
    "AssemblyStatus",
    "AssemblyThresholds",
    "AssemblyTrace",
    "AttemptRecord",
    "BuildStatus",
    "DropReason",
    "DroppedRow",
    "FiltersApplied",
    "FinishReason",
    "GenerationStatus",
    "LLMExecutionResult",
    "PinnedModel",
    "PromptBuildResult",
    "PromptMessage",
    "PromptTokenAccount",
    "ReasonCode",
    "RetrievalBundle",
    "RetrievalRow",
    "RetrievalStatus",
    "SelectedEvidence",
]
