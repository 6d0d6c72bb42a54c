"""groundlock: a retrieval bundle in, a validated cited answer or a strict refusal out.

The pipeline is a LangChain LCEL chain of custom Runnables, one per contract stage:
R2 :class:`AssembleEvidence`, R3 :class:`BuildPrompt`, R4 :class:`ExecuteModel`, R5
:class:`ValidateAnswer` and R6 :class:`PackageResponse`, composed by
:func:`grounded_answer_chain`, on frozen contracts, hash-locked policies and a hash-locked
prompt template.
"""

import logging

from groundlock._caches import clear_caches
from groundlock._version import __version__
from groundlock.chains import grounded_answer_chain
from groundlock.contracts import (
    AnswerBundle,
    Answered,
    Assembled,
    AssemblyMetrics,
    AssemblyStatus,
    AssemblyTrace,
    AttemptRecord,
    BuildStatus,
    Confidence,
    DroppedRow,
    DropReason,
    FiltersApplied,
    FinishReason,
    GenerationStatus,
    GroundingMetrics,
    HistoryTurn,
    Judged,
    LLMExecutionResult,
    Outcome,
    PinnedModel,
    PromptBuildResult,
    Prompted,
    PromptMessage,
    PromptTokenAccount,
    PublicCitation,
    PublicResponse,
    QueryType,
    ReasonCode,
    RetrievalBundle,
    RetrievalRow,
    RetrievalStatus,
    RunState,
    SelectedEvidence,
    TokenUsage,
    ValidationResult,
    ValidationStatus,
)
from groundlock.core import assemble, build_prompt, validate_answer, validate_text
from groundlock.core.access import AccessPolicy, Principal, ScoreNormalization
from groundlock.errors import GroundlockError, PolicyError, TokenizerUnavailableError
from groundlock.lakehouse import DeltaVectorStore, IndexReport, LexicalEmbeddings, index_documents
from groundlock.policies import Policy, available_policies, load_policy, lock_policy
from groundlock.prompts import PromptTemplateError, load_template
from groundlock.providers import ExtractiveChatModel, ModelPinningError, ProviderUnavailableError
from groundlock.runnables import (
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    PackageResponse,
    RecordValidation,
    RetrievalFront,
    ValidateAnswer,
)
from groundlock.stores import (
    AuditSink,
    AuditUnavailable,
    DeltaAuditStore,
    FeedbackRow,
    MemoryAuditSink,
    QueryRow,
    ValidationRow,
)

logging.getLogger("groundlock").addHandler(logging.NullHandler())


__all__ = [
    "AccessPolicy",
    "AnswerBundle",
    "Answered",
    "AssembleEvidence",
    "Assembled",
    "AssemblyMetrics",
    "AssemblyStatus",
    "AssemblyTrace",
    "AttemptRecord",
    "AuditSink",
    "AuditUnavailable",
    "BuildPrompt",
    "BuildStatus",
    "Confidence",
    "DeltaAuditStore",
    "DeltaVectorStore",
    "DropReason",
    "DroppedRow",
    "ExecuteModel",
    "ExtractiveChatModel",
    "FeedbackRow",
    "FiltersApplied",
    "FinishReason",
    "GenerationStatus",
    "GroundingMetrics",
    "GroundlockError",
    "HistoryTurn",
    "IndexReport",
    "Judged",
    "LLMExecutionResult",
    "LexicalEmbeddings",
    "MemoryAuditSink",
    "ModelPinningError",
    "Outcome",
    "PackageResponse",
    "PinnedModel",
    "Policy",
    "PolicyError",
    "Principal",
    "PromptBuildResult",
    "PromptMessage",
    "PromptTemplateError",
    "PromptTokenAccount",
    "Prompted",
    "ProviderUnavailableError",
    "PublicCitation",
    "PublicResponse",
    "QueryRow",
    "QueryType",
    "ReasonCode",
    "RecordValidation",
    "RetrievalBundle",
    "RetrievalFront",
    "RetrievalRow",
    "RetrievalStatus",
    "RunState",
    "ScoreNormalization",
    "SelectedEvidence",
    "TokenUsage",
    "TokenizerUnavailableError",
    "ValidateAnswer",
    "ValidationResult",
    "ValidationRow",
    "ValidationStatus",
    "__version__",
    "assemble",
    "available_policies",
    "build_prompt",
    "clear_caches",
    "grounded_answer_chain",
    "index_documents",
    "load_policy",
    "load_template",
    "lock_policy",
    "validate_answer",
    "validate_text",
]
