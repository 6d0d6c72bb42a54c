"""groundlock: a retrieval bundle in, a validated cited answer or a strict refusal out.

The pipeline is a LangChain LCEL chain of custom Runnables, one per contract stage. This
release ships the foundation: the stage contracts, hash-locked policies and R2 evidence
assembly (:class:`AssembleEvidence`).
"""

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
from groundlock.core import assemble
from groundlock.errors import GroundlockError, PolicyError, TokenizerUnavailableError
from groundlock.policies import Policy, available_policies, load_policy, lock_policy
from groundlock.runnables import AssembleEvidence

logging.getLogger("groundlock").addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "AnswerBundle",
    "AssembleEvidence",
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
    "assemble",
    "available_policies",
    "load_policy",
    "lock_policy",
]
