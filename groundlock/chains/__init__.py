"""Composition of the stages into one chain: :func:`grounded_answer_chain`."""

from groundlock.chains.answer import CHAIN_NAME, GroundedAnswerChain, grounded_answer_chain

__all__ = ["CHAIN_NAME", "GroundedAnswerChain", "grounded_answer_chain"]
