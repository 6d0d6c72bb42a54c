"""Status enums shared by every stage boundary.

They are ``StrEnum`` so that they serialise to the exact strings the specs use (``"OK"``,
``"NO_EVIDENCE"``, ...) in JSON, logs and Delta rows without a custom encoder.
"""

from __future__ import annotations

from enum import StrEnum


class RetrievalStatus(StrEnum):
    """What the retriever reported about its own run."""

    SUCCESS = "SUCCESS"
    NO_EVIDENCE = "NO_EVIDENCE"
    FAILED = "FAILED"


class AssemblyStatus(StrEnum):
    """Outcome of R2: evidence ready for a prompt, a refusal, or an invalid request."""

    OK = "OK"
    NO_EVIDENCE = "NO_EVIDENCE"
    FAILED = "FAILED"
