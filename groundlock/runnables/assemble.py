"""R2 as an LCEL stage: ``RetrievalBundle`` (or its JSON dict) -> ``AnswerBundle``."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.core.assembly import assemble, failed_bundle
from groundlock.runnables._stage import PolicyStage

__all__ = ["AssembleEvidence"]


class AssembleEvidence(PolicyStage[RetrievalBundle, AnswerBundle]):
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
    'results[0].similarity: must be a finite number between 0.0 and 1.0'
    """

    name: str | None = "R2.AssembleEvidence"

    def _run(self, stage_input: object, config: RunnableConfig) -> AnswerBundle:
        return assemble(stage_input, self.policy)

    def _fail_closed(self, stage_input: object, reason: ReasonCode, message: str) -> AnswerBundle:
        return failed_bundle(stage_input, self.policy, reason, message)
