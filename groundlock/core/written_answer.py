"""Judge an answer written elsewhere: R2, R3 and R5 over a given text, with no model.

For text a model produced outside groundlock (another pipeline, a stored answer, a
person), the same verdict R5 gives in the chain: the bundle is assembled and the prompt
built exactly as for a request, so the evidence and anchors the answer is judged against
are the ones a model would have been shown, and the text takes the place of R4's reply.

Pure: no model, no LangChain, no I/O beyond the policy's locked files.
"""

from __future__ import annotations

from groundlock.contracts.assembly import SelectedEvidence
from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.validation import ValidationResult
from groundlock.core.evidence_assembly import assemble
from groundlock.core.firewall import validate_answer
from groundlock.core.firewall.naming import wrong_citations
from groundlock.core.prompt_build import build_prompt
from groundlock.core.skipped import failed_verdict
from groundlock.policies.loader import DEFAULT_POLICY, load_policy
from groundlock.policies.model import Policy

__all__ = ["judged_text", "validate_text"]


def validate_text(
    answer: str, bundle: object, policy: str | Policy = DEFAULT_POLICY
) -> ValidationResult:
    """R5's verdict on ``answer`` as the reply to ``bundle`` under ``policy``.

    ``bundle`` is what the chain takes (a dict from JSON or a ``RetrievalBundle``). A bundle
    that fails R2 or R3 gives a FAILED verdict with their reason. A bundle with no
    evidence admits exactly one answer, the policy's refusal: anything else fails
    ``INVALID_REFUSAL_FORMAT``, since there is nothing it could cite.

    >>> from groundlock import load_policy
    >>> row = {"chunk_id": "c1", "rank": 0, "similarity": 0.9, "knowledge_id": "K1",
    ...        "chunk_text": "Replace the seal every 500 hours."}
    >>> bundle = {"request_id": "r1", "user_question": "Seal interval?",
    ...           "retrieval_status": "SUCCESS", "index_version": "i",
    ...           "embedding_model": "e", "top_k": 1, "results": [row]}
    >>> validate_text("Replace the seal every 500 hours. [C0]", bundle).validation_status.value
    'PASSED'
    >>> validate_text("Replace the seal every 600 hours. [C0]", bundle).failure_reason.value
    'UNSUPPORTED_VALUE'
    """
    return judged_text(answer, bundle, policy)[0]


def judged_text(
    answer: str, bundle: object, policy: str | Policy = DEFAULT_POLICY
) -> tuple[ValidationResult, tuple[SelectedEvidence, ...]]:
    """:func:`validate_text`'s verdict and the evidence entries the prompt held.

    For a caller that shows what the verdict's citations name (``groundlock validate``):
    the entries come from the one assembly the verdict was judged on, not a second one.
    """
    loaded = load_policy(policy) if isinstance(policy, str) else policy
    state = build_prompt(assemble(bundle, loaded), loaded)
    entries = state.bundle.selected_evidence
    if state.status is GenerationStatus.FAILED:
        verdict = failed_verdict(state.request_id, state.outcome.reason, state.outcome.message)
        return verdict, entries
    if state.status is GenerationStatus.NO_EVIDENCE and answer != loaded.refusal_text:
        verdict = failed_verdict(
            state.request_id,
            ReasonCode.INVALID_REFUSAL_FORMAT,
            "validation: the request has no evidence; its only answer is the exact refusal",
        )
        # With nothing retrieved, every marker the answer wrote names nothing.
        invalid, malformed = wrong_citations(loaded.grammar.bound(()).scan(answer), ())
        update = {"invalid_citations": invalid, "malformed_citations": malformed}
        return verdict.model_copy(update=update), entries
    execution = LLMExecutionResult.uncalled(state.status, text=answer)
    return validate_answer(state.answered(execution), loaded), entries
