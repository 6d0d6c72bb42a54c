"""The schema firewall in front of delta-rs (reliability notes T20).

delta-rs casts an appended batch to the table's types (``1.7`` into an integer column
lands as ``1``), so every row is refused *before* it reaches delta-rs unless it is exactly
of the table's types, and the tables keep the protocol ordinary Spark readers open.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from deltalake import DeltaTable
from pydantic import ValidationError

from groundlock.stores import DeltaAuditStore, FeedbackRow, QueryRow, ValidationRow
from groundlock.stores.arrow import arrow_schema, to_arrow
from tests.stores.rows import query_row, validation_row


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"citation_count": 1.7}, "a float for an int column"),
        ({"citation_count": "2"}, "a numeric string for an int column"),
        ({"latency_ms": "3.5"}, "a string for a float column"),
        ({"refusal_detected": 1}, "an int for a bool column"),
        ({"surprise": "x"}, "an extra field"),
        ({"timestamp_utc": datetime(2026, 11, 22, 9, 0)}, "a naive timestamp"),
        (
            {"timestamp_utc": datetime(2026, 11, 22, 9, 0, tzinfo=timezone(timedelta(hours=2)))},
            "a timestamp in another zone",
        ),
        ({"status": None}, "a null for a non-nullable column"),
        ({"validated_citations": ["C0"]}, "a list where the schema has a tuple of strings"),
        ({"validated_answer_text": None}, "a PASSED row without its answer"),
        ({"total_tokens": 2**63}, "a count Arrow's int64 cannot hold"),
    ],
)
def test_validation_row_refuses_lossy_input(change: dict[str, Any], why: str) -> None:
    fields = validation_row().model_dump()
    fields.update(change)
    with pytest.raises(ValidationError):
        ValidationRow.model_validate(fields)


def test_a_missing_column_is_refused() -> None:
    fields = query_row().model_dump()
    del fields["top_k"]
    with pytest.raises(ValidationError):
        QueryRow.model_validate(fields)


def test_failed_rows_carry_no_answer_text() -> None:
    fields = validation_row(validation_status="FAILED", status="FAILED").model_dump()
    with pytest.raises(ValidationError, match="exactly when validation PASSED"):
        ValidationRow.model_validate({**fields, "validated_answer_text": "an answer"})
    ValidationRow.model_validate({**fields, "validated_answer_text": None})


def test_feedback_rating_is_one_to_five() -> None:
    now = datetime.now(UTC)
    for rating in (0, 6, 4.0, True):
        with pytest.raises(ValidationError):
            FeedbackRow(
                record_id="f1", timestamp_utc=now, request_id="r", rating=rating, comment=None
            )


def test_arrow_schema_follows_the_row_model() -> None:
    schema = arrow_schema(ValidationRow)
    assert [schema.field(i).name for i in range(len(schema))] == list(ValidationRow.model_fields)
    stamp = schema.field("timestamp_utc").type
    assert stamp.is_timestamp(stamp)
    assert stamp.tz == "UTC"
    assert schema.field("request_id").nullable
    assert not schema.field("status").nullable
    assert schema.field("validated_citations").type.is_list(
        schema.field("validated_citations").type
    )


def test_rows_round_trip_through_arrow_unchanged() -> None:
    rows = [validation_row(request_id=f"r{i}", citation_count=i) for i in range(3)]
    table = to_arrow(ValidationRow, rows)
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    back = [
        ValidationRow.model_validate({n: columns[n][i] for n in columns}, strict=False)
        for i in range(3)
    ]
    assert back == rows


def test_tables_are_append_only_and_readable_by_plain_spark(tmp_path: Any) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    assert store.problem() is None
    for name in ("validations", "queries", "feedback"):
        table = DeltaTable(str(tmp_path / "audit" / name))
        protocol = table.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
        assert table.metadata().configuration["delta.appendOnly"] == "true"
    store.add_feedback("req-1", 4, "clear")
    table = DeltaTable(str(tmp_path / "audit" / "feedback"))
    with pytest.raises(Exception, match="append-only"):
        table.delete("rating = 4")
    assert DeltaTable(str(tmp_path / "audit" / "feedback")).protocol().min_writer_version == 2
