"""groundlock: a retrieval bundle in, a validated cited answer or a strict refusal out.

The pipeline is a LangChain LCEL chain of custom Runnables, one per contract stage:
R2 :class:`AssembleEvidence`, R3 :class:`BuildPrompt`, R4 :class:`ExecuteModel`, R5
:class:`ValidateAnswer` and R6 :class:`PackageResponse`, composed by
:func:`grounded_answer_chain`, on frozen contracts, hash-locked policies and a hash-locked
prompt template.

Every public name loads on first use (PEP 562): ``import groundlock`` and ``groundlock
--help`` stay cheap; LangChain, the provider SDKs, delta-rs and the web stack load when a
name that needs them is first read.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from groundlock._lazy import lazy_names
from groundlock._version import __version__

if TYPE_CHECKING:
    from groundlock._caches import clear_caches
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
    from groundlock.lakehouse import (
        DeltaVectorStore,
        IndexReport,
        LexicalEmbeddings,
        index_documents,
    )
    from groundlock.policies import Policy, available_policies, load_policy, lock_policy
    from groundlock.prompts import PromptTemplateError, load_template
    from groundlock.providers import (
        ExtractiveChatModel,
        ModelPinningError,
        ProviderUnavailableError,
    )
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

_LAZY: dict[str, str] = {
    "clear_caches": "groundlock._caches",
    "grounded_answer_chain": "groundlock.chains",
    "AnswerBundle": "groundlock.contracts",
    "Answered": "groundlock.contracts",
    "Assembled": "groundlock.contracts",
    "AssemblyMetrics": "groundlock.contracts",
    "AssemblyStatus": "groundlock.contracts",
    "AssemblyTrace": "groundlock.contracts",
    "AttemptRecord": "groundlock.contracts",
    "BuildStatus": "groundlock.contracts",
    "Confidence": "groundlock.contracts",
    "DropReason": "groundlock.contracts",
    "DroppedRow": "groundlock.contracts",
    "FiltersApplied": "groundlock.contracts",
    "FinishReason": "groundlock.contracts",
    "GenerationStatus": "groundlock.contracts",
    "GroundingMetrics": "groundlock.contracts",
    "HistoryTurn": "groundlock.contracts",
    "Judged": "groundlock.contracts",
    "LLMExecutionResult": "groundlock.contracts",
    "Outcome": "groundlock.contracts",
    "PinnedModel": "groundlock.contracts",
    "PromptBuildResult": "groundlock.contracts",
    "PromptMessage": "groundlock.contracts",
    "PromptTokenAccount": "groundlock.contracts",
    "Prompted": "groundlock.contracts",
    "PublicCitation": "groundlock.contracts",
    "PublicResponse": "groundlock.contracts",
    "QueryType": "groundlock.contracts",
    "ReasonCode": "groundlock.contracts",
    "RetrievalBundle": "groundlock.contracts",
    "RetrievalRow": "groundlock.contracts",
    "RetrievalStatus": "groundlock.contracts",
    "RunState": "groundlock.contracts",
    "SelectedEvidence": "groundlock.contracts",
    "TokenUsage": "groundlock.contracts",
    "ValidationResult": "groundlock.contracts",
    "ValidationStatus": "groundlock.contracts",
    "assemble": "groundlock.core",
    "build_prompt": "groundlock.core",
    "validate_answer": "groundlock.core",
    "validate_text": "groundlock.core",
    "AccessPolicy": "groundlock.core.access",
    "Principal": "groundlock.core.access",
    "ScoreNormalization": "groundlock.core.access",
    "GroundlockError": "groundlock.errors",
    "PolicyError": "groundlock.errors",
    "TokenizerUnavailableError": "groundlock.errors",
    "DeltaVectorStore": "groundlock.lakehouse",
    "IndexReport": "groundlock.lakehouse",
    "LexicalEmbeddings": "groundlock.lakehouse",
    "index_documents": "groundlock.lakehouse",
    "Policy": "groundlock.policies",
    "available_policies": "groundlock.policies",
    "load_policy": "groundlock.policies",
    "lock_policy": "groundlock.policies",
    "PromptTemplateError": "groundlock.prompts",
    "load_template": "groundlock.prompts",
    "ExtractiveChatModel": "groundlock.providers",
    "ModelPinningError": "groundlock.providers",
    "ProviderUnavailableError": "groundlock.providers",
    "AssembleEvidence": "groundlock.runnables",
    "BuildPrompt": "groundlock.runnables",
    "ExecuteModel": "groundlock.runnables",
    "PackageResponse": "groundlock.runnables",
    "RecordValidation": "groundlock.runnables",
    "RetrievalFront": "groundlock.runnables",
    "ValidateAnswer": "groundlock.runnables",
    "AuditSink": "groundlock.stores",
    "AuditUnavailable": "groundlock.stores",
    "DeltaAuditStore": "groundlock.stores",
    "FeedbackRow": "groundlock.stores",
    "MemoryAuditSink": "groundlock.stores",
    "QueryRow": "groundlock.stores",
    "ValidationRow": "groundlock.stores",
}
"""Each public name and the module it is defined in (re-exported from)."""


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

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
