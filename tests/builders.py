"""Builders for retrieval bundles, so each test states only what it is about."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from groundlock import Policy, load_policy

SAMPLE_BUNDLE_PATH = (
    Path(__file__).parent.parent / "examples" / "data" / "hydraulic_pump_bundle.json"
)

_VOCABULARY = (
    "inspect replace torque seal pump valve filter housing bracket hose fitting bearing "
    "actuator reservoir gauge pressure temperature flow line return case drain element "
    "gasket bolt washer clamp sensor harness connector relay switch panel cover latch "
    "hinge spring piston cylinder rod accumulator check relief bypass indicator warning "
    "light monthly weekly daily hours cycles limit minimum maximum nominal operating "
    "before after during removal installation test leak crack wear corrosion damage"
).split()


def distinct_text(seed: int, words: int = 40) -> str:
    """Pseudo-random maintenance prose; different seeds share almost no 3-word shingles."""
    rng = random.Random(seed)
    body = " ".join(rng.choice(_VOCABULARY) for _ in range(words))
    return f"Procedure {seed}: {body}."


def make_row(rank: int, /, **fields: Any) -> dict[str, Any]:
    """A valid ``000``-shaped row at ``rank``; keyword arguments override or add fields."""
    row: dict[str, Any] = {
        "chunk_id": f"chunk-{rank:03d}",
        "rank": rank,
        "faiss_id": 1000 + rank,
        "similarity": 0.95 - rank * 0.001,
        "chunk_text": distinct_text(rank),
        "knowledge_type_effective": "MAINTENANCE_PROCEDURE",
        "equipment_id": "PUMP-7",
        "event_date": "2025-01-01",
    }
    row.update(fields)
    return row


def make_bundle(rows: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """A valid SUCCESS bundle around ``rows`` (three distinct rows by default)."""
    rows = rows if rows is not None else [make_row(i) for i in range(3)]
    bundle: dict[str, Any] = {
        "request_id": "req-1",
        "run_id": "run-1",
        "user_question": "How often is the case drain filter replaced?",
        "retrieval_status": "SUCCESS",
        "index_version": "idx-2026.11",
        "embedding_model": "emb-3-large",
        "top_k": max(len(rows), 1),
        "results": rows,
    }
    bundle.update(fields)
    return bundle


def sample_bundle() -> dict[str, Any]:
    """The project's maintenance-manual scenario (examples/data)."""
    data: dict[str, Any] = json.loads(SAMPLE_BUNDLE_PATH.read_text(encoding="utf-8"))
    return data


def policy_with(**overrides: Any) -> Policy:
    """The default policy with some values changed (validated like any policy)."""
    return Policy.model_validate({**load_policy().model_dump(), **overrides})
