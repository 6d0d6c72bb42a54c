"""The pipeline stages as custom LCEL Runnables, one module per stage."""

from groundlock.runnables.assemble import AssembleEvidence

__all__ = ["AssembleEvidence"]
