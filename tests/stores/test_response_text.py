"""The query log keeps the response text (``003``'s ``serving.rag_queries``), and only it.

For each outcome the ``queries`` row's ``response_text`` is exactly the public response's
``answer``: the validated answer, the policy's refusal, or nothing for a FAILED request. A
rejected model text is in no trail row; it is only in the opt-in evidence archive. A table
from before the column is upgraded in place, and its chain still verifies.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from groundlock import GenerationStatus, grounded_answer_chain, load_policy
from groundlock.cli import main
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.arrow import to_arrow
from groundlock.stores.hashchain import Link, batch_digest, genesis, model_row_hash
from groundlock.stores.verify import verify_table
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel
from tests.stores.rows import query_row

REJECTED = "The bolts are torqued to 987 Nm by the moonlight crew [C7]."
"""A model answer the firewall rejects (C7 is not in the evidence); "moonlight" is in no
evidence, no prompt and no refusal, so finding it anywhere means the text leaked."""


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A trail and an evidence archive holding one request of each outcome, and the answers
    each caller received, by request id."""
    root = tmp_path_factory.mktemp("response-text")
    store = DeltaAuditStore(root / "audit")
    archive = str(root / "evidence")
    answered = grounded_answer_chain(store=store, archive=archive)
    rejecting = grounded_answer_chain(
        store=store, archive=archive, model=ScriptedChatModel(text=REJECTED)
    )
    responses = {
        "ok": answered.invoke(make_bundle(request_id="ok")),
        "refused": answered.invoke(
            make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)])
        ),
        "rejected": rejecting.invoke(make_bundle(request_id="rejected")),
    }
    store.close()
    assert [r.status for r in responses.values()] == [
        GenerationStatus.OK, GenerationStatus.NO_EVIDENCE, GenerationStatus.FAILED,
    ]  # fmt: skip
    return root, {request_id: r.answer for request_id, r in responses.items()}


def _query(root: Path, request_id: str) -> QueryRow:
    store = DeltaAuditStore(root / "audit")
    try:
        (row,) = store.select(QueryRow, f"request_id = '{request_id}'")
    finally:
        store.close()
    return row


def test_an_ok_response_text_is_the_validated_answer(trail: tuple[Path, dict[str, str]]):
    root, answers = trail
    row = _query(root, "ok")
    assert row.response_text == answers["ok"]
    assert row.response_text  # (an answer, not nothing)
    store = DeltaAuditStore(root / "audit")
    (validation,) = store.select(ValidationRow, "request_id = 'ok'")
    store.close()
    assert row.response_text == validation.validated_answer_text


def test_a_refusal_response_text_is_the_policys_refusal(trail: tuple[Path, dict[str, str]]):
    root, answers = trail
    row = _query(root, "refused")
    assert row.response_text == answers["refused"]
    assert load_policy().refusal_text in row.response_text


def test_a_rejected_answer_is_in_no_trail_row_only_in_the_archive(
    trail: tuple[Path, dict[str, str]],
):
    root, answers = trail
    row = _query(root, "rejected")
    assert answers["rejected"] == ""
    assert row.response_text == ""
    assert (row.status, row.failure_reason) == ("FAILED", "INVALID_CITATION_REFERENCE")
    assert "moonlight" not in row.model_dump_json()
    store = DeltaAuditStore(root / "audit")
    (validation,) = store.select(ValidationRow, "request_id = 'rejected'")
    store.close()
    assert "moonlight" not in validation.model_dump_json()
    # The model's text is kept, for replay and review, only in the opt-in archive.
    (evidence,) = EvidenceArchive(root / "evidence").read("request_id = 'rejected'")
    assert evidence.raw_model_text == REJECTED  # type: ignore[union-attr]


def test_records_show_prints_the_response_text(
    trail: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
):
    root, answers = trail
    for request_id in ("ok", "refused", "rejected"):
        assert main(["records", "show", request_id, "--store", str(root / "audit")]) == 0
        out = capsys.readouterr().out
        (query,) = json.loads(out)["queries"]
        assert query["response_text"] == answers[request_id]
        assert "moonlight" not in out


# -- a table from before the column ----------------------------------------------------------


def _queries_from_before_response_text(root: Path) -> list[QueryRow]:
    """A queries table as the older store left it: no ``response_text`` column, two commits
    of three rows, each with its format-1 chain link. Returns the rows."""
    from arro3.core import Schema, Table  # noqa: PLC0415

    path = root / "queries"
    written: list[QueryRow] = []
    prev = genesis("queries")
    for batch in range(2):
        rows = [query_row(request_id=f"old{batch}-{n}") for n in range(3)]
        current = to_arrow(QueryRow, rows)
        keep = [
            i for i in range(current.num_columns) if current.schema.field(i).name != "response_text"
        ]
        old = Table.from_arrays(
            [current.column(i) for i in keep],
            schema=Schema([current.schema.field(i) for i in keep]),
        )
        if batch == 0:
            DeltaTable.create(str(path), old.schema, configuration={"delta.appendOnly": "true"})
        seq = batch + 1
        digest = batch_digest("queries", prev, [model_row_hash(row) for row in rows])
        write_deltalake(
            str(path), old, mode="append",
            commit_properties=CommitProperties(
                custom_metadata=Link(seq, prev, digest, len(rows), "old").metadata()
            ),
        )  # fmt: skip
        prev = digest
        written.extend(rows)
    return written


def test_old_rows_without_the_column_and_new_rows_with_it_verify(tmp_path: Path):
    root = tmp_path / "audit"
    old = _queries_from_before_response_text(root)
    assert all(row.response_text is None for row in old)
    assert verify_table(root / "queries", "queries").findings == []
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    grounded_answer_chain(store=store).invoke(make_bundle(request_id="new"))
    store.close()
    columns = {field.name for field in DeltaTable(str(root / "queries")).schema().fields}
    assert "response_text" in columns  # upgraded in place by the first writer
    reader = DeltaAuditStore(root)
    rows = {row.request_id: row for row in reader.select(QueryRow)}
    reader.close()
    assert len(rows) == 7
    assert rows["old0-0"].response_text is None
    assert rows["new"].response_text
    report = verify_table(root / "queries", "queries")
    assert report.findings == []
    assert (report.links, report.live_rows) == (3, 7)


def test_an_edited_response_text_breaks_the_chain(tmp_path: Path):
    root = tmp_path / "audit"
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    grounded_answer_chain(store=store).invoke(make_bundle(request_id="new"))
    store.close()
    assert verify_table(root / "queries", "queries").findings == []
    reader = DeltaAuditStore(root)
    (row,) = reader.select(QueryRow)
    reader.close()
    forged = row.model_copy(update={"response_text": "Torque to 60 Nm. [C0]"})
    scratch = tmp_path / "scratch"
    write_deltalake(str(scratch), to_arrow(QueryRow, [forged]))
    (source,) = scratch.glob("*.parquet")
    (target,) = [Path(uri) for uri in DeltaTable(str(root / "queries")).file_uris()]
    shutil.copyfile(source, target)
    kinds = [finding.kind for finding in verify_table(root / "queries", "queries").findings]
    assert kinds == ["ROW_CHANGED"]
