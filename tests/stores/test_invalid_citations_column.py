"""The validations table names a rejected answer's invalid citations (issue 32, spec ``002``).

The column is additive: a table written before it is upgraded in place by the next writer,
and read before that with the column null.
"""

from __future__ import annotations

from pathlib import Path

import deltalake
from arro3.core import Schema, Table
from deltalake import DeltaTable

from groundlock import ReasonCode, grounded_answer_chain
from groundlock.stores import DeltaAuditStore, ValidationRow
from groundlock.stores.arrow import to_arrow
from tests.builders import distinct_text, make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel
from tests.stores.rows import validation_row

_BUNDLE = make_bundle([make_row(i, semantic_id=f"IPC_420_{i}") for i in range(3)])


def _answer(store: DeltaAuditStore, request_id: str, text: str) -> None:
    chain = grounded_answer_chain(
        store=store, policy="SEMANTIC_ID_POLICY_V1", model=ScriptedChatModel(text=text)
    )
    chain.invoke({**_BUNDLE, "request_id": request_id})


def test_the_row_names_the_first_sixteen_invalid_citations_and_counts_them_all(
    tmp_path: Path,
) -> None:
    # Forty distinct unknown ids: the verdict names all forty, the row the first sixteen in
    # order of use, and its count says there were forty.
    unknown = " ".join(f"[IPC_9{n:02d}_0]" for n in range(40))
    store = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    try:
        _answer(store, "many", f"{distinct_text(0)} {unknown}")
        store.flush()
        (row,) = store.select(ValidationRow)
    finally:
        store.close()
    assert row.invalid_citations == tuple(f"IPC_9{n:02d}_0" for n in range(16))
    assert row.invalid_anchor_count == 40


def test_a_rejected_answers_invalid_citations_are_in_its_validation_row(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    try:
        _answer(store, "wrong", f"{distinct_text(0)} [IPC_421_0]")
        _answer(store, "right", f"{distinct_text(0)} [IPC_420_0]")
        store.flush()
        rows = {row.request_id: row for row in store.select(ValidationRow)}
    finally:
        store.close()
    assert rows["wrong"].failure_reason == ReasonCode.INVALID_CITATION_REFERENCE.value
    assert rows["wrong"].invalid_citations == ("IPC_421_0",)
    assert rows["wrong"].validated_citations == ()
    assert rows["right"].invalid_citations == ()
    assert rows["right"].validated_citations == ("C0",)  # the internal key, as before


def test_a_validations_table_from_before_the_column_is_read_then_upgraded(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    current = to_arrow(ValidationRow, [validation_row(request_id="old", run_id="old")])
    keep = [
        i for i in range(current.num_columns) if current.schema.field(i).name != "invalid_citations"
    ]
    old = Table.from_arrays(
        [current.column(i) for i in keep], schema=Schema([current.schema.field(i) for i in keep])
    )
    table = str(root / "validations")
    DeltaTable.create(table, old.schema, configuration={"delta.appendOnly": "true"})
    deltalake.write_deltalake(table, old, mode="append")
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    try:
        (before,) = store.select(ValidationRow)
        assert (before.request_id, before.invalid_citations) == ("old", None)
        _answer(store, "new", f"{distinct_text(1)} [IPC_421_0]")
        store.flush()
        rows = {row.request_id: row.invalid_citations for row in store.select(ValidationRow)}
    finally:
        store.close()
    assert rows == {"old": None, "new": ("IPC_421_0",)}
    fields = {f.name for f in DeltaTable(table).schema().fields}
    assert "invalid_citations" in fields
