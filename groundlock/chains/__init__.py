"""Composition: :func:`grounded_answer_chain`, optionally fed by the retrieval front (R1)."""

from groundlock.chains.grounded import CHAIN_NAME, grounded_answer_chain

__all__ = ["CHAIN_NAME", "grounded_answer_chain"]
