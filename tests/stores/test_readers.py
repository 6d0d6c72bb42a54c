"""Reading a damaged trail (issue 27.8): one-line errors that name the table and the file.

``select``, ``executions`` and the archive keep returning row models only, and refuse a row
that breaks its model in one line naming it; :func:`read_rows` keeps such a row in place for
a reader to show. A data file gone from disk is named, by its name inside the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock import grounded_answer_chain
from groundlock.stores import DeltaAuditStore, ValidationRow
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.readers import InvalidRow, TrailDamaged, read_rows
from tests.builders import make_bundle
from tests.stores.rows import query_row, validation_row


@pytest.fixture
def store(tmp_path: Path) -> DeltaAuditStore:
    audit = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    for number in range(3):
        audit.record(
            validation_row(request_id=f"req-{number}"), query_row(request_id=f"req-{number}")
        )
    audit.close()
    return audit


def _negative_latency(store: DeltaAuditStore, request_id: str) -> None:
    table = store.table_uri(ValidationRow)
    DeltaTable(table).alter.set_table_properties({"delta.appendOnly": "false"})
    DeltaTable(table).update(
        new_values={"latency_ms": -1.0}, predicate=f"request_id = '{request_id}'"
    )
    DeltaTable(table).alter.set_table_properties({"delta.appendOnly": "true"})


def _remove_a_data_file(table: str) -> str:
    first = Path(DeltaTable(table).file_uris()[0])
    first.unlink()
    return first.name


def test_read_rows_keeps_a_row_that_breaks_its_model_in_place(store: DeltaAuditStore) -> None:
    _negative_latency(store, "req-1")
    rows = read_rows(store, ValidationRow, order_by="request_id")
    assert [type(row).__name__ for row in rows] == ["ValidationRow", "InvalidRow", "ValidationRow"]
    bad = rows[1]
    assert isinstance(bad, InvalidRow)
    assert bad.table == "validations"
    assert bad.get("request_id") == "req-1"
    assert bad.get("latency_ms") == -1.0
    assert bad.fields == {"latency_ms"}
    assert bad.problems == ("latency_ms: Input should be greater than or equal to 0",)


def test_a_deleted_archive_file_is_named_by_the_archive(tmp_path: Path) -> None:
    archive = EvidenceArchive(tmp_path / "evidence")
    grounded_answer_chain(store=DeltaAuditStore(tmp_path / "audit"), archive=archive).invoke(
        make_bundle(request_id="kept")
    )
    name = _remove_a_data_file(str(tmp_path / "evidence"))
    with pytest.raises(TrailDamaged) as caught:
        archive.select()
    assert (
        str(caught.value) == f"the evidence archive cannot be read: its data file {name} is missing"
    )
