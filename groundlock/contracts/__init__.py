"""Pydantic models of every stage boundary, status enums and reason codes.

The chain's stages pass one run state (:mod:`~groundlock.contracts.state`): the request's
identity and outcome at the top, and a section per stage under the spec's names.

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
    Confidence,
    FinishReason,
    GenerationStatus,
    QueryType,
    RetrievalStatus,
    ValidationStatus,
)
from groundlock.contracts.execution import AttemptRecord, LLMExecutionResult, PinnedModel
from groundlock.contracts.prompt import PromptBuildResult, PromptMessage, PromptTokenAccount
from groundlock.contracts.reasons import CLIENT_INPUT_REASONS, DropReason, ReasonCode
from groundlock.contracts.response import PublicCitation, PublicResponse, TokenUsage
from groundlock.contracts.retrieval import (
    FiltersApplied,
    HistoryTurn,
    RetrievalBundle,
    RetrievalRow,
)
from groundlock.contracts.state import Answered, Assembled, Judged, Outcome, Prompted, RunState
from groundlock.contracts.validation import GroundingMetrics, ValidationResult

__all__ = [
    "CLIENT_INPUT_REASONS",
    "AnswerBundle",
    "Answered",
    "Assembled",
    "AssemblyMetrics",
    "AssemblyStatus",
    "AssemblyThresholds",
    "AssemblyTrace",
    "AttemptRecord",
    "BuildStatus",
    "Confidence",
    "DropReason",
    "DroppedRow",
    "FiltersApplied",
    "FinishReason",
    "GenerationStatus",
    "GroundingMetrics",
    "HistoryTurn",
    "Judged",
    "LLMExecutionResult",
    "Outcome",
    "PinnedModel",
    "PromptBuildResult",
    "PromptMessage",
    "PromptTokenAccount",
    "Prompted",
    "PublicCitation",
    "PublicResponse",
    "QueryType",
    "ReasonCode",
    "RetrievalBundle",
    "RetrievalRow",
    "RetrievalStatus",
    "RunState",
    "SelectedEvidence",
    "TokenUsage",
    "ValidationResult",
    "ValidationStatus",
]
