"""The pipeline stages as custom LCEL Runnables, one module per stage.

Each stage takes the run state the stage before it leaves and adds its section
(:mod:`groundlock.contracts.state`); the shell they share, :mod:`~groundlock.runnables._stage`,
admits input, passes outcomes a stage does not run on through, and fails closed.
"""

from groundlock.runnables.assemble import AssembleEvidence
from groundlock.runnables.build import BuildPrompt
from groundlock.runnables.execute import ExecuteModel
from groundlock.runnables.package import PackageResponse
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
