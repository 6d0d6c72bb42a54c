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


class QueryType(StrEnum):
    """What kind of answer is asked for (``004``): it selects the output budget and word limit."""

    FACTUAL = "factual"
    SUMMARY = "summary"
    COMPARE = "compare"


class AssemblyStatus(StrEnum):
    """Outcome of R2: evidence ready for a prompt, a refusal, or an invalid request."""

    OK = "OK"
    NO_EVIDENCE = "NO_EVIDENCE"
    FAILED = "FAILED"


class BuildStatus(StrEnum):
    """Outcome of R3: prompt bytes ready, a refusal without a prompt, or a failure."""

    OK = "OK"
    NO_EVIDENCE = "NO_EVIDENCE"
    FAILED = "FAILED"


class GenerationStatus(StrEnum):
    """Outcome of R4 (and, after validation, of the answer as a whole)."""

    OK = "OK"
    NO_EVIDENCE = "NO_EVIDENCE"
    FAILED = "FAILED"


class Confidence(StrEnum):
    """How strongly retrieval supports an answer: a retrieval signal, not a correctness claim.

    From the top similarity among the admitted evidence, against the policy's thresholds
    (004's levels). An answer that passed R5 is supported by what it cites either way; a
    low confidence says the evidence itself was a weak match for the question.
    """

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class ValidationStatus(StrEnum):
    """Outcome of R5: the answer may reach a reader, or it may not."""

    PASSED = "PASSED"
    FAILED = "FAILED"


class FinishReason(StrEnum):
    """Why the model stopped, the same for Chat Completions and the Responses API.

    Chat Completions reports ``finish_reason``; the Responses API reports ``status`` with
    ``incomplete_details.reason``. Both are mapped here so that R5 reads one value.
    """

    STOP = "STOP"
    """Completed normally (``stop`` / ``completed``)."""
    LENGTH = "LENGTH"
    """Cut by the output token cap (``length`` / ``incomplete: max_output_tokens``)."""
    CONTENT_FILTER = "CONTENT_FILTER"
    """Withheld by the provider's filter (``content_filter`` / ``incomplete: content_filter``)."""
    OTHER = "OTHER"
    """Anything else the provider reported (tool calls, unknown values)."""
    UNKNOWN = "UNKNOWN"
    """The provider reported nothing."""
