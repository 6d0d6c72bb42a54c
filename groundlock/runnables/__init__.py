"""The pipeline stages as custom LCEL Runnables, one module per stage."""

from groundlock.runnables.assemble import AssembleEvidence
from groundlock.runnables.execute import ExecuteModel
from groundlock.runnables.package import PackageResponse
from groundlock.runnables.prompt import BuildPrompt
from groundlock.runnables.record import RecordValidation
from groundlock.runnables.retrieve import REQUEST_FIELDS, RetrievalFront
from groundlock.runnables.validate import ValidateAnswer

__all__ = [
    "REQUEST_FIELDS",
    "AssembleEvidence",
    "BuildPrompt",
    "ExecuteModel",
    "PackageResponse",
    "RecordValidation",
    "RetrievalFront",
    "ValidateAnswer",
]
