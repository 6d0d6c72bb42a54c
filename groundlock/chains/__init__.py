"""Composition: :func:`grounded_answer_chain`, and the retrieval front that feeds it."""

from groundlock.chains.answer import CHAIN_NAME, GroundedAnswerChain, grounded_answer_chain
from groundlock.chains.retrieval import REQUEST_FIELDS, RetrievalFront

__all__ = [
    "CHAIN_NAME",
    "REQUEST_FIELDS",
    "GroundedAnswerChain",
    "RetrievalFront",
    "grounded_answer_chain",
]
