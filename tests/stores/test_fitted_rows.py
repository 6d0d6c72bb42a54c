"""``TableRow.fitted``: a value a column cannot hold is cut to fit, never fails the row."""

from __future__ import annotations

import hashlib

from groundlock.stores import ValidationRow
from tests.stores.rows import validation_row


def test_values_past_their_columns_are_cut_marked_or_made_unknown() -> None:
    name = "m" * 600
    data = {
        **validation_row().model_dump(),
        "model_name": name,
        "response_id": "",
        "total_tokens": 2**63,
        "suspicious_new_ids": ("x" * 100_001, "ok"),
    }
    row = ValidationRow.fitted(data)
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    assert row.model_name == "m" * 498 + f"…#{digest}"
    assert len(row.model_name) == 512
    assert row.response_id is None
    assert row.total_tokens is None
    assert len(row.suspicious_new_ids[0]) == 100_000
    assert row.suspicious_new_ids[1] == "ok"
    # Values that fit are left exactly as they were.
    original = validation_row()
    assert ValidationRow.fitted(original.model_dump()) == original
