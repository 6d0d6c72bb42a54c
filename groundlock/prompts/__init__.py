"""Frozen, hash-locked prompt templates (R3). The first template lands with the R3 stage."""
