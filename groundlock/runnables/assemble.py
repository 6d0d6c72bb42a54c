"""R2 as an LCEL stage: a ``RetrievalBundle`` (or its JSON dict) -> an ``Assembled`` state."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from typing_extensions import override

from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.contracts.state import Assembled
from groundlock.core.evidence_assembly import assemble_read
from groundlock.core.intake import read_bundle
from groundlock.core.skipped import failed_state
from groundlock.runnables._stage import PolicyStage

__all__ = ["AssembleEvidence"]


class AssembleEvidence(PolicyStage[RetrievalBundle, Assembled]):
    """R2: admit only the evidence the policy allows, in a frozen order, with anchors.

    Accepts a ``RetrievalBundle`` or a plain dict (parsed JSON). Never raises for bad input:
    the state's ``bundle`` (an ``AnswerBundle``) is OK, NO_EVIDENCE or FAILED, with a
    ``reason_code`` and a ``message`` naming the offending field, and the state's outcome
    says the same.

    >>> stage = AssembleEvidence(policy="R2_POLICY_V1")
    >>> state = stage.invoke({"request_id": "r1", "user_question": "Torque?",
    ...                       "retrieval_status": "SUCCESS", "index_version": "i1",
    ...                       "embedding_model": "e1", "top_k": 3,
    ...                       "results": [{"chunk_id": "c1", "rank": 0, "similarity": 1.5,
    ...                                    "knowledge_id": "K1",
    ...                                    "chunk_text": "Torque to 45 Nm."}]})
    >>> state.outcome.status.value, state.outcome.reason.value
    ('FAILED', 'SIMILARITY_INTEGRITY')
    >>> state.bundle.message
    'results[0].similarity: must be a finite number between 0.0 and 1.0'
    """

    name: str | None = "R2.AssembleEvidence"

    @override
    def _work(self, stage_input: object, config: RunnableConfig) -> Assembled:
        read = read_bundle(stage_input, self.policy.input_limits)
        retrieval = read if isinstance(read, RetrievalBundle) else None
        return Assembled.of(assemble_read(read, self.policy), retrieval)

    @override
    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> Assembled:
        return failed_state(stage_input, self.policy, reason, message)
