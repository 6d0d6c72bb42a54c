"""Versioned, hash-locked policies (``R2_POLICY_V1``, ...) and their loader."""

from groundlock.policies.loader import (
    DEFAULT_POLICY,
    available_policies,
    check_policy_identity,
    load_policy,
    lock_policy,
)
from groundlock.policies.model import InputLimits, Policy

__all__ = [
    "DEFAULT_POLICY",
    "InputLimits",
    "Policy",
    "available_policies",
    "check_policy_identity",
    "load_policy",
    "lock_policy",
]
