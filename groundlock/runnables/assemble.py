"""R2 as an LCEL stage: ``RetrievalBundle`` (or its JSON dict) -> ``AnswerBundle``."""

from __future__ import annotations

from pydantic import Field, field_validator

from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.core.assembly import assemble, failed_bundle
from groundlock.policies.loader import DEFAULT_POLICY, check_policy_identity, load_policy
from groundlock.policies.model import Policy
from groundlock.runnables._stage import Stage
from groundlock.text.tokens import get_token_counter

__all__ = ["AssembleEvidence"]


class AssembleEvidence(Stage[RetrievalBundle, AnswerBundle]):
    """R2: admit only the evidence the policy allows, in a frozen order, with anchors.

    Accepts a ``RetrievalBundle`` or a plain dict (parsed JSON). Never raises for bad input:
    the result is an ``AnswerBundle`` whose ``assembly_status`` is OK, NO_EVIDENCE or FAILED,
    with a ``reason_code`` and a ``message`` naming the offending field.

    >>> stage = AssembleEvidence(policy="R2_POLICY_V1")
    >>> result = stage.invoke({"request_id": "r1", "user_question": "Torque?",
    ...                        "retrieval_status": "SUCCESS", "index_version": "i1",
    ...                        "embedding_model": "e1", "top_k": 3,
    ...                        "results": [{"chunk_id": "c1", "rank": 0, "similarity": 1.5,
    ...                                     "knowledge_id": "K1",
    ...                                     "chunk_text": "Torque to 45 Nm."}]})
    >>> result.assembly_status.value, result.reason_code.value
    ('FAILED', 'SIMILARITY_INTEGRITY')
    >>> result.message
    'results[0].similarity_score: must be a finite number between 0.0 and 1.0'
    """

    name: str | None = "R2.AssembleEvidence"
    policy: Policy = Field(default_factory=lambda: load_policy(DEFAULT_POLICY))
    """Frozen selection policy (a ``Policy`` or a version name); its version and hash go
    into every trace."""

    @field_validator("policy", mode="before")
    @classmethod
    def _load_named_policy(cls, value: object) -> object:
        policy = load_policy(value) if isinstance(value, str) else value
        if isinstance(policy, Policy):  # fail at build time, not per request
            check_policy_identity(policy)
            get_token_counter(policy.token_encoding)
        return policy

    def _run(self, stage_input: object) -> AnswerBundle:
        return assemble(stage_input, self.policy)

    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> AnswerBundle:
        return failed_bundle(stage_input, self.policy, reason, message)
