"""Pin each contract's JSON schema so that it cannot drift silently.

A deliberate contract change: rerun with ``GROUNDLOCK_UPDATE_SNAPSHOTS=1``, then review the
diff of ``tests/snapshots/`` like any other change to the public contract.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import BaseModel

from groundlock import (
    AnswerBundle,
    Judged,
    LLMExecutionResult,
    Policy,
    PromptBuildResult,
    PublicResponse,
    RetrievalBundle,
    ValidationResult,
)

SNAPSHOTS = Path(__file__).parent.parent / "snapshots"


@pytest.mark.parametrize(
    ("model", "mode"),
    [
        (RetrievalBundle, "validation"),
        (AnswerBundle, "serialization"),
        (PromptBuildResult, "serialization"),
        (LLMExecutionResult, "serialization"),
        (ValidationResult, "serialization"),
        (Judged, "serialization"),  # the run state with every section: what R6 and the trail read
        (PublicResponse, "serialization"),
        (PublicResponse, "validation"),
        (Policy, "validation"),
    ],
)
def test_json_schema_matches_snapshot(model: type[BaseModel], mode: str):
    path = SNAPSHOTS / f"{model.__name__}.{mode}.schema.json"
    schema = json.dumps(model.model_json_schema(mode=mode), indent=2, sort_keys=True) + "\n"  # type: ignore[arg-type]
    if os.environ.get("GROUNDLOCK_UPDATE_SNAPSHOTS") == "1":
        path.write_text(schema, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == schema, f"{path.name} changed; review and update"
