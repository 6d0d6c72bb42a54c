"""groundlock: a retrieval bundle in, a validated cited answer or a strict refusal out."""

import logging

from groundlock.contracts import (
    AnswerBundle,
    AssemblyMetrics,
    AssemblyStatus,
    AssemblyTrace,
    DroppedRow,
    DropReason,
    FiltersApplied,
    ReasonCode,
    RetrievalBundle,
    RetrievalRow,
    RetrievalStatus,
    SelectedEvidence,
)
from groundlock.errors import GroundlockError, PolicyError, TokenizerUnavailableError
from groundlock.policies import Policy, available_policies, load_policy, lock_policy

logging.getLogger("groundlock").addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "AnswerBundle",
    "AssemblyMetrics",
    "AssemblyStatus",
    "AssemblyTrace",
    "DropReason",
    "DroppedRow",
    "FiltersApplied",
    "GroundlockError",
    "Policy",
    "PolicyError",
    "ReasonCode",
    "RetrievalBundle",
    "RetrievalRow",
    "RetrievalStatus",
    "SelectedEvidence",
    "TokenizerUnavailableError",
    "__version__",
    "available_policies",
    "load_policy",
    "lock_policy",
]
