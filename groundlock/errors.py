"""Exceptions for configuration problems found while *building* a chain.

Requests never raise: a bad bundle becomes a FAILED result with a reason code. These
exceptions are for the operator's side — a tampered policy file, a tokenizer that cannot be
loaded offline — where refusing to start is the safe answer.
"""

from __future__ import annotations


class GroundlockError(Exception):
    """Base class for every error groundlock raises at build time."""


class PolicyError(GroundlockError):
    """A policy is missing, malformed, or does not match its recorded sha256."""


class TokenizerUnavailableError(GroundlockError):
    """The policy's token encoding cannot be loaded without a network download."""
