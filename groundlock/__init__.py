"""groundlock: a retrieval bundle in, a validated cited answer or a strict refusal out.

The pipeline is a LangChain LCEL chain of custom Runnables, one per contract stage:
R2 :class:`AssembleEvidence`, R3 :class:`BuildPrompt`, R4 :class:`ExecuteModel` so far,
on frozen contracts, hash-locked policies and a hash-locked prompt template.
"""

import logging

from groundlock.contracts import (
    AnswerBundle,
    AssemblyMetrics,
    AssemblyStatus,
    AssemblyTrace,
    AttemptRecord,
    BuildStatus,
    DroppedRow,
    DropReason,
    FiltersApplied,
    FinishReason,
    GenerationStatus,
    LLMExecutionResult,
    PinnedModel,
    PromptBuildResult,
    PromptMessage,
    PromptTokenAccount,
    ReasonCode,
    RetrievalBundle,
    RetrievalRow,
    RetrievalStatus,
    SelectedEvidence,
)
from groundlock.core import assemble, build_prompt
from groundlock.errors import GroundlockError, PolicyError, TokenizerUnavailableError
from groundlock.policies import Policy, available_policies, load_policy, lock_policy
from groundlock.prompts import PromptTemplateError, load_template
from groundlock.providers import ExtractiveChatModel, ModelPinningError
from groundlock.runnables import AssembleEvidence, BuildPrompt, ExecuteModel

logging.getLogger("groundlock").addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "AnswerBundle",
    "AssembleEvidence",
    "AssemblyMetrics",
    "AssemblyStatus",
    "AssemblyTrace",
    "AttemptRecord",
    "BuildPrompt",
    "BuildStatus",
    "DropReason",
    "DroppedRow",
    "ExecuteModel",
    "ExtractiveChatModel",
    "FiltersApplied",
    "FinishReason",
    "GenerationStatus",
    "GroundlockError",
    "LLMExecutionResult",
    "ModelPinningError",
    "PinnedModel",
    "Policy",
    "PolicyError",
    "PromptBuildResult",
    "PromptMessage",
    "PromptTemplateError",
    "PromptTokenAccount",
    "ReasonCode",
    "RetrievalBundle",
    "RetrievalRow",
    "RetrievalStatus",
    "SelectedEvidence",
    "TokenizerUnavailableError",
    "__version__",
    "assemble",
    "available_policies",
    "build_prompt",
    "load_policy",
    "load_template",
    "lock_policy",
]
