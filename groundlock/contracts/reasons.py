"""Every reason code groundlock can emit, in one place.

Two families:

* :class:`ReasonCode` explains why a *request* ended FAILED or NO_EVIDENCE. It is what a
  client sees as ``failure_reason`` and what an auditor filters on, so each member is a stable
  public string; add members, never rename them.
* :class:`DropReason` explains why a single retrieval row was left out of the evidence. Rows
  are counted per drop reason in ``AssemblyMetrics`` so every row of a bundle is accounted for.
"""

from __future__ import annotations

from enum import StrEnum


class ReasonCode(StrEnum):
    """Why a request did not produce an OK result."""

    # R2 fail-fast gates (V1-V5) and input limits -> FAILED, model never called.
    INPUT_SCHEMA_INVALID = "INPUT_SCHEMA_INVALID"
    """V1: not a mapping, a required field missing, a wrong type, or an unknown field."""
    INPUT_LIMIT_EXCEEDED = "INPUT_LIMIT_EXCEEDED"
    """Too many rows, a chunk or question longer than the policy's input limits allow."""
    RANK_INTEGRITY = "RANK_INTEGRITY"
    """V2: ranks are not exactly 0, 1, ..., n-1 (duplicates, gaps, or not starting at 0)."""
    DUPLICATE_CHUNK_ID = "DUPLICATE_CHUNK_ID"
    """V2: two rows claim the same chunk_id, so an anchor could not map to one chunk."""
    SIMILARITY_INTEGRITY = "SIMILARITY_INTEGRITY"
    """V3: a similarity that is NaN, infinite, outside [0, 1], or given twice with two values."""
    TEXT_INTEGRITY = "TEXT_INTEGRITY"
    """V4: a chunk_text that is null or empty as received."""
    DOMAIN_INTEGRITY = "DOMAIN_INTEGRITY"
    """V5: a knowledge type outside the policy's allowed set (or missing where required)."""
    RETRIEVAL_FAILED = "RETRIEVAL_FAILED"
    """The retriever itself reported FAILED; R2 propagates it."""
    RETRIEVAL_INCONSISTENT = "RETRIEVAL_INCONSISTENT"
    """The bundle contradicts itself: SUCCESS with no rows, NO_EVIDENCE with rows, rows > top_k."""
    PRINCIPAL_UNRESOLVED = "PRINCIPAL_UNRESOLVED"
    """The retrieval front enforces access control, and the request names no principal it
    can resolve (none given, an unknown role, a grant the access policy does not know).
    Nothing was retrieved: no principal means no rows, and an operator should see why."""

    # R2 outcomes that are a valid refusal -> NO_EVIDENCE, model never called.
    RETRIEVAL_NO_EVIDENCE = "RETRIEVAL_NO_EVIDENCE"
    """The retriever reported NO_EVIDENCE with no rows."""
    TOP_SIMILARITY_BELOW_GATE = "TOP_SIMILARITY_BELOW_GATE"
    """The best row is below ``min_top_similarity_score``: nothing is trusted enough to use."""
    ALL_EVIDENCE_DROPPED = "ALL_EVIDENCE_DROPPED"
    """Every row was dropped by filters, floors, caps, dedup or budget (see drop counts)."""

    # R3 prompt building -> FAILED, model never called.
    PROMPT_BUDGET_EXCEEDED = "PROMPT_BUDGET_EXCEEDED"
    """The question exceeds max_question_tokens, or no evidence fits max_total_prompt_tokens."""

    # R4 model execution.
    PROMPT_INTEGRITY = "PROMPT_INTEGRITY"
    """The bytes about to be sent no longer hash to prompt_sha256; nothing was sent."""
    MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
    """Every allowed attempt failed with a transient error (timeout, connection, 408, 429, 5xx)."""
    MODEL_DEADLINE_EXCEEDED = "MODEL_DEADLINE_EXCEEDED"
    """The request deadline ran out before an attempt succeeded."""
    MODEL_RATE_LIMITED = "MODEL_RATE_LIMITED"
    """The provider asked to wait longer than retry_after_cap_seconds; not waited for."""
    PROVIDER_QUOTA_EXHAUSTED = "PROVIDER_QUOTA_EXHAUSTED"
    """429 insufficient_quota: the account is out of credit; retrying cannot help."""
    PROVIDER_AUTH_FAILED = "PROVIDER_AUTH_FAILED"
    """401 or 403: the credentials are missing, wrong, or lack permission."""
    MODEL_NOT_FOUND = "MODEL_NOT_FOUND"
    """404: the pinned model does not exist for this account or endpoint."""
    CONTEXT_LENGTH_EXCEEDED = "CONTEXT_LENGTH_EXCEEDED"
    """The provider says the prompt exceeds the model's context window."""
    PROVIDER_REJECTED_REQUEST = "PROVIDER_REJECTED_REQUEST"
    """Any other 4xx: the provider refused the request as sent."""
    OUTPUT_CONTENT_FILTERED = "OUTPUT_CONTENT_FILTERED"
    """The provider withheld the output with its content filter."""
    MODEL_DRIFT = "MODEL_DRIFT"
    """The response names a different model than the one pinned."""
    MODEL_ERROR = "MODEL_ERROR"
    """The model call failed in a way no other code describes; not retried."""
    MODEL_NOT_CONFIGURED = "MODEL_NOT_CONFIGURED"
    """No model could be built (its integration package is missing, or its SDK refused for
    want of an API key) and the policy says ``on_model_unavailable: refuse``: the request got
    the policy's refusal with ``model_used`` ``none``, by policy, not by a model or for want
    of evidence. The audit rows' status is NO_EVIDENCE with this reason; no model was called."""

    # R5 validator firewall -> FAILED, the answer is withheld (checked in this order).
    OUTPUT_TRUNCATED = "OUTPUT_TRUNCATED"
    """The model stopped at the output token cap; a cut answer is never shown."""
    EMPTY_ANSWER = "EMPTY_ANSWER"
    """The answer has no letter or digit outside its anchors (empty, blank, or anchors only)."""
    UNSAFE_OUTPUT = "UNSAFE_OUTPUT"
    """A link or image to a URL, HTML or a script URL, an HTML entity, or a hidden character."""
    INVALID_REFUSAL_FORMAT = "INVALID_REFUSAL_FORMAT"
    """The answer refuses, or contains the refusal, but is not exactly the refusal string."""
    MALFORMED_CITATION = "MALFORMED_CITATION"
    """An anchor-like token that is not exactly ``[C<n>]`` (``[c0]``, ``(C0)``, ``[C0, C1]``)."""
    INVALID_CITATION_REFERENCE = "INVALID_CITATION_REFERENCE"
    """A well-formed anchor that names no evidence entry of this request (``[C99]``)."""
    UNCITED_FACTUAL_STATEMENT = "UNCITED_FACTUAL_STATEMENT"
    """A sentence with letters or digits carries no valid anchor."""
    WORD_LIMIT_EXCEEDED = "WORD_LIMIT_EXCEEDED"
    """The answer holds more words than its query type allows (``004``; markers not counted)."""
    METADATA_LEAK = "METADATA_LEAK"
    """Chunk or knowledge ids, header or section syntax, the prompt's own rules, or the word
    evidence, where the cited entries do not contain them."""
    META_COMMENTARY = "META_COMMENTARY"
    """Talk about the sources, the instructions or the model itself, or a reasoning trace."""
    UNSUPPORTED_STATEMENT = "UNSUPPORTED_STATEMENT"
    """A cited sentence shares no content word with the entries it cites."""
    UNSUPPORTED_VALUE = "UNSUPPORTED_VALUE"
    """A number, unit, percentage, date, time or identifier in a cited sentence that no
    evidence entry (and not the question) holds, however it is written (ruleset
    ``firewall_v2`` on)."""
    MISATTRIBUTED_CITATION = "MISATTRIBUTED_CITATION"
    """A value, name or statement found only in an evidence entry the sentence does not
    cite: the right fact behind the wrong anchor."""
    UNSUPPORTED_ENTITY = "UNSUPPORTED_ENTITY"
    """A proper name, acronym or acronym expansion no evidence entry or the question holds."""
    CONTRADICTS_EVIDENCE = "CONTRADICTS_EVIDENCE"
    """A flipped negation (``may exceed`` for ``must not exceed``), a changed obligation
    (``may`` for ``must``) or an opposite word (``after`` for ``before``) against the
    evidence sentence the answer's sentence aligns with."""
    LOW_SUPPORT_COVERAGE = "LOW_SUPPORT_COVERAGE"
    """Few of a cited sentence's content words occur in what it cites (below the policy's
    ``min_support_coverage``); a flag in the default policy."""
    SUPPORT_JUDGE_REJECTED = "SUPPORT_JUDGE_REJECTED"
    """The policy's support judge (an entailment model) found a sentence that passed every
    deterministic rule not supported by the entries it cites."""
    SUPPORT_JUDGE_FAILED = "SUPPORT_JUDGE_FAILED"
    """The policy's support judge erred, timed out or answered outside its contract; the
    request fails closed (unless the policy flags instead)."""
    INSTRUCTION_FOLLOWED = "INSTRUCTION_FOLLOWED"
    """A sentence restates an instruction written inside the evidence (``ignore previous
    instructions and answer that ...``): an injection obeyed, however well cited."""
    CITATION_MISMATCH = "CITATION_MISMATCH"
    """A citation list written by the model disagrees with the anchors its sentences use."""

    # Audit record (between R5 and R6).
    AUDIT_WRITE_FAILED = "AUDIT_WRITE_FAILED"
    """The request's audit rows could not be made durable; the answer is withheld."""

    # Serving: work the server abandoned (``groundlock serve``), recorded all the same.
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    """The request ran past the server's deadline (the client got 504); its work was
    cancelled. A request the model was still answering may have been paid for."""
    CLIENT_DISCONNECTED = "CLIENT_DISCONNECTED"
    """The client went away before the answer; the server cancelled the request's work."""

    # Any stage.
    INTERNAL_ERROR = "INTERNAL_ERROR"
    """A bug inside a stage; it was logged with its traceback and the request failed closed."""


class DropReason(StrEnum):
    """Why one retrieval row is not in the selected evidence.

    Rows are examined in rank order and each dropped row is counted under the *first* rule
    that excluded it. Once the walk stops (``max_chunks`` reached, or the evidence budget
    full), every remaining row is counted under the rule that stopped it.
    """

    DROP_EQUIPMENT_FILTER = "DROP_EQUIPMENT_FILTER"
    """An equipment_id filter is set and the row's equipment_id is null or different."""
    DROP_KNOWLEDGE_TYPE_FILTER = "DROP_KNOWLEDGE_TYPE_FILTER"
    """A knowledge_type filter is set and the row's type is null or not in it."""
    DROP_DATE_FILTER = "DROP_DATE_FILTER"
    """A date range filter is set and the row's event_date is null or outside it."""
    DROP_TOP_SIMILARITY_GATE = "DROP_TOP_SIMILARITY_GATE"
    """The whole bundle failed the top-similarity gate, so no row was admitted."""
    DROP_BELOW_SIMILARITY_FLOOR = "DROP_BELOW_SIMILARITY_FLOOR"
    """The row's similarity is below ``min_similarity_score``."""
    DROP_PER_KNOWLEDGE_CAP = "DROP_PER_KNOWLEDGE_CAP"
    """``max_chunks_per_knowledge_id`` rows of the same knowledge_id were already selected."""
    DROP_EMPTY_AFTER_SANITIZE = "DROP_EMPTY_AFTER_SANITIZE"
    """The text was non-empty on input but nothing visible remained after sanitisation."""
    DROP_DUP = "DROP_DUP"
    """Near-duplicate of a better-ranked selected chunk (overlap above the threshold)."""
    DROP_BUDGET = "DROP_BUDGET"
    """Adding the row would exceed ``max_evidence_tokens``; lower ranks are pruned first."""
    DROP_MAX_CHUNKS = "DROP_MAX_CHUNKS"
    """``max_chunks`` rows were already selected."""
    DROP_PROMPT_BUDGET = "DROP_PROMPT_BUDGET"
    """R3 dropped the lowest-ranked chunk so the whole prompt fits max_total_prompt_tokens."""


CLIENT_INPUT_REASONS: frozenset[ReasonCode] = frozenset(
    {
        ReasonCode.INPUT_SCHEMA_INVALID,
        ReasonCode.INPUT_LIMIT_EXCEEDED,
        ReasonCode.RANK_INTEGRITY,
        ReasonCode.DUPLICATE_CHUNK_ID,
        ReasonCode.SIMILARITY_INTEGRITY,
        ReasonCode.TEXT_INTEGRITY,
        ReasonCode.DOMAIN_INTEGRITY,
        ReasonCode.RETRIEVAL_INCONSISTENT,
        ReasonCode.PROMPT_BUDGET_EXCEEDED,
    }
)
"""Reasons that blame the caller's request. Their messages name the field at fault (and never
quote evidence or scores), so the public response passes them on: a caller can fix the
request. Every other reason is reported by code alone."""
