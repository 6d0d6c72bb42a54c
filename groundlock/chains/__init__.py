"""Composition of the stages into ``grounded_answer_chain`` (lands once R3-R6 exist)."""
