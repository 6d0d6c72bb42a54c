"""The audit store through the chain: one durable row per request, idempotent, fail-closed.

The trail's behaviour (recording, dedup, recovery, racing writers, upgrades) is tested on
every backend through the ``location`` fixture: local disk, moto's S3 and Azurite. Local
only, because only a filesystem can be broken that way: a file where ``_delta_log`` should
be, and the spool's own faults (an fsync that fails, a file where the spool directory
should be), which are the same for every backend since the spool is always local.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import deltalake
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from groundlock import GenerationStatus, ReasonCode, grounded_answer_chain
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.spool import _release_lock as release_lock
from groundlock.stores.spool import read_segment, segments_of
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel
from tests.stores.backends import Location
from tests.stores.rows import query_row, validation_row


@pytest.fixture
def store(location: Location) -> Any:
    audit = location.store(flush_interval_seconds=30)
    yield audit
    audit.close()


def _rows(store: DeltaAuditStore, row_type: Any = ValidationRow) -> list[Any]:
    store.flush()
    return store.select(row_type)


def test_every_status_path_leaves_exactly_one_row(store: DeltaAuditStore) -> None:
    chain = grounded_answer_chain(store=store)
    paths = {
        "ok": make_bundle(request_id="ok"),
        "no-evidence": make_bundle(
            request_id="no-evidence", results=[make_row(0, similarity=0.01)]
        ),
        "bad-input": {"request_id": "bad-input", "user_question": 7},
    }
    statuses = {rid: chain.invoke(bundle).status for rid, bundle in paths.items()}
    rejected = grounded_answer_chain(
        store=store, model=ScriptedChatModel(text="The pump is fine.")
    ).invoke(make_bundle(request_id="rejected"))
    assert statuses == {
        "ok": GenerationStatus.OK,
        "no-evidence": GenerationStatus.NO_EVIDENCE,
        "bad-input": GenerationStatus.FAILED,
    }
    assert rejected.failure_reason is ReasonCode.UNCITED_FACTUAL_STATEMENT
    rows = {row.request_id: row for row in _rows(store)}
    assert sorted(rows) == ["bad-input", "no-evidence", "ok", "rejected"]
    assert rows["ok"].validated_answer_text
    assert rows["ok"].validated_citations
    assert rows["ok"].policy_sha256
    assert rows["ok"].template_sha256
    assert rows["ok"].prompt_sha256
    assert rows["no-evidence"].status == "NO_EVIDENCE"
    for failed in ("bad-input", "rejected"):
        assert rows[failed].validated_answer_text is None
        assert rows[failed].status == "FAILED"
    assert rows["rejected"].failure_reason == "UNCITED_FACTUAL_STATEMENT"
    assert rows["rejected"].message  # the internal detail is kept for the auditor
    queries = {row.request_id: row for row in _rows(store, QueryRow)}
    assert queries["ok"].retrieved_chunk_ids == ("chunk-000", "chunk-001", "chunk-002")
    assert queries["ok"].cited_chunk_ids
    assert set(queries["ok"].cited_chunk_ids) <= set(queries["ok"].selected_chunk_ids)


def test_requester_identity_reaches_the_query_log(store: DeltaAuditStore) -> None:
    chain = grounded_answer_chain(store=store)
    metadata = {"requester_id": "u-17", "requester_role": "inspector", "retrieval_strategy": 9}
    chain.invoke(make_bundle(), config={"metadata": metadata})
    (row,) = _rows(store, QueryRow)
    assert (row.requester_id, row.requester_role, row.retrieval_strategy) == (
        "u-17",
        "inspector",
        None,  # not a string: not recorded
    )


async def test_async_batch_and_stream_record_like_invoke(store: DeltaAuditStore) -> None:
    chain = grounded_answer_chain(store=store)
    await chain.ainvoke(make_bundle(request_id="a1"))
    await chain.abatch([make_bundle(request_id=f"ab{i}") for i in range(5)])
    chain.batch([make_bundle(request_id=f"b{i}") for i in range(5)])
    events = list(chain.stream(make_bundle(request_id="s1")))
    assert [e.type for e in events[-1:]] == ["response"]
    assert events[-1].response.status is GenerationStatus.OK
    events = [event async for event in chain.astream(make_bundle(request_id="as1"))]
    assert events[-1].response.status is GenerationStatus.OK
    ids = sorted(row.request_id or "" for row in _rows(store))
    expected = ["a1", "as1", "s1", *(f"ab{i}" for i in range(5)), *(f"b{i}" for i in range(5))]
    assert ids == sorted(expected)


def test_the_same_request_twice_is_one_row(store: DeltaAuditStore) -> None:
    chain = grounded_answer_chain(store=store)
    chain.invoke(make_bundle())
    store.flush()
    chain.invoke(make_bundle())  # a retry after the first row was committed
    chain.invoke(make_bundle())  # and one in the same batch as the next row
    chain.invoke(make_bundle(run_id="run-2"))  # another run of the request is its own row
    rows = _rows(store)
    assert sorted((r.request_id, r.run_id) for r in rows) == [
        ("req-1", "run-1"),
        ("req-1", "run-2"),
    ]
    assert len(_rows(store, QueryRow)) == 2


def test_rows_without_a_request_id_are_all_kept(store: DeltaAuditStore) -> None:
    chain = grounded_answer_chain(store=store)
    chain.invoke("not a bundle")
    chain.invoke("not a bundle")
    rows = _rows(store)
    assert [row.request_id for row in rows] == [None, None]
    assert len({row.record_id for row in rows}) == 2


def test_a_commit_that_landed_unseen_is_not_repeated(
    store: DeltaAuditStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # T17: the commit lands, then the writer sees an error; the retry must find it.
    real = deltalake.write_deltalake
    calls = []

    def lands_then_fails(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            raise CommitFailedError("connection reset after commit")

    monkeypatch.setattr(deltalake, "write_deltalake", lands_then_fails)
    store.record(validation_row(request_id="r1"), query_row(request_id="r1"))
    store.record(validation_row(request_id="r2"), query_row(request_id="r2"))
    store.flush()
    assert sorted(r.request_id or "" for r in store.select(ValidationRow)) == ["r1", "r2"]
    assert sorted(r.request_id or "" for r in store.select(QueryRow)) == ["r1", "r2"]


def test_a_redriven_segment_adds_nothing(store: DeltaAuditStore, tmp_path: Path) -> None:
    # T17, second half: the same spool segment committed twice (a crash after the commit,
    # before the segment was deleted) leaves one row per request.
    store.record(validation_row(request_id="r1"), query_row(request_id="r1"))
    spool = store._state.spool
    assert spool is not None
    spool.rotate()
    (segment,) = [s for s in segments_of(store.spool_dir, spool.writer_id) if s.seq == 0]
    kept = tmp_path / "kept.spool"
    shutil.copy(segment.path, kept)
    store.flush()
    assert not segment.path.exists()
    orphan = store.spool_dir / f"{'f' * 32}.000000000007.spool"
    shutil.copy(kept, orphan)  # the same rows, under a writer that no longer runs
    store.recover()
    assert not orphan.exists()
    assert [r.request_id for r in store.select(ValidationRow)] == ["r1"]


def test_a_torn_last_line_is_skipped_and_counted(location: Location) -> None:
    store = location.store(flush_interval_seconds=30)
    store.record(validation_row(request_id="r1"), query_row(request_id="r1"))
    spool = store._state.spool
    assert spool is not None
    path = segments_of(store.spool_dir, spool.writer_id)[0].path
    line = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(line[: len(line) // 2])  # a write cut short by a crash
    payloads, bad = read_segment(path)
    assert (len(payloads), bad) == (1, 1)
    store.close()
    assert [r.request_id for r in store.select(ValidationRow)] == ["r1"]


def test_unflushed_rows_are_committed_by_the_next_process(location: Location) -> None:
    first = location.store(flush_interval_seconds=30)
    first.record(validation_row(request_id="r1"), query_row(request_id="r1"))
    # The process "dies": its lock is released, its segment stays.
    spool = first._state.spool
    assert spool is not None
    spool.close()
    release_lock(spool._lock_fd)  # what the kernel does for a process that dies
    spool._lock_fd = -1
    first._state.stopping = True
    second = location.store(flush_interval_seconds=30)  # the same spool, as on one host
    second.record(validation_row(request_id="r2"), query_row(request_id="r2"))
    second.close()  # its flusher started with the first record, and adopted r1 first
    assert [r.request_id for r in second.select(ValidationRow)] == ["r1", "r2"]
    assert not list(second.spool_dir.glob(f"{spool.writer_id}.*"))


def _fails_closed(store: DeltaAuditStore, caplog: pytest.LogCaptureFixture, *secret: str) -> None:
    chain = grounded_answer_chain(store=store)
    with caplog.at_level(logging.INFO):
        response = chain.invoke(make_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.AUDIT_WRITE_FAILED
    assert response.answer == ""
    assert response.citations == ()
    assert response.failure_message is None
    shown = response.model_dump_json() + caplog.text
    for text in secret:
        assert text not in shown


def test_fails_closed_when_delta_log_is_a_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "audit-root-7d1"
    (root / "validations").mkdir(parents=True)
    (root / "validations" / "_delta_log").write_text("not a directory")
    _fails_closed(DeltaAuditStore(root), caplog, "audit-root-7d1")


def test_fails_closed_on_an_incompatible_schema(
    location: Location, caplog: pytest.LogCaptureFixture
) -> None:
    from arro3.core import DataType, Field, Schema  # noqa: PLC0415

    DeltaTable.create(
        location.table("validations"),
        Schema([Field("request_id", DataType.string(), nullable=True)]),
        configuration={"delta.appendOnly": "true"},
        storage_options=location.storage_options or None,
    )
    _fails_closed(location.store(), caplog, location.name_in_logs)


def test_fails_closed_on_an_unreachable_object_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    options = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "AKIDCANARY0042",
        "AWS_SECRET_ACCESS_KEY": "secret-canary-0042",
        "AWS_REGION": "us-east-1",
        "max_retries": "0",
        "timeout": "2s",
        "connect_timeout": "1s",
    }
    store = DeltaAuditStore("s3://bucket-canary-0042/audit", options, spool_dir=tmp_path / "spool")
    _fails_closed(store, caplog, "AKIDCANARY0042", "secret-canary-0042", "bucket-canary-0042")
    assert "object store" in repr(store)


def test_fails_closed_when_the_spool_cannot_be_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "spool-file").write_text("a file where the spool directory should be")
    store = DeltaAuditStore(tmp_path / "audit", spool_dir=tmp_path / "spool-file")
    _fails_closed(store, caplog, str(tmp_path))


def test_the_store_recovers_once_the_fault_is_gone(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    (root / "validations").mkdir(parents=True)
    (root / "validations" / "_delta_log").write_text("")
    store = DeltaAuditStore(root)
    chain = grounded_answer_chain(store=store)
    assert chain.invoke(make_bundle()).failure_reason is ReasonCode.AUDIT_WRITE_FAILED
    (root / "validations" / "_delta_log").unlink()
    store._state.checked_at = 0.0
    assert chain.invoke(make_bundle()).status is GenerationStatus.OK
    store.close()
    assert len(store.select(ValidationRow)) == 1


def test_vacuum_refuses_a_retention_below_the_minimum(store: DeltaAuditStore) -> None:
    store.record(validation_row(), query_row())
    store.flush()
    with pytest.raises(ValueError, match="below the configured minimum of 168 h"):
        store.vacuum(24)
    assert store.vacuum(168, dry_run=True) == {"validations": [], "queries": [], "feedback": []}


def test_a_failed_fsync_fails_that_request_closed_and_leaves_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Local only: the spool is local on every backend, and this is the spool's fault.
    store = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    chain = grounded_answer_chain(store=store)
    assert chain.invoke(make_bundle(request_id="before")).status is GenerationStatus.OK
    real_fsync = os.fsync
    failures = []

    def fails_once(fd: int) -> None:
        if not failures:
            failures.append(fd)
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fails_once)
    failed = chain.invoke(make_bundle(request_id="lost"))
    after = chain.invoke(make_bundle(request_id="after"))
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert failed.failure_reason is ReasonCode.AUDIT_WRITE_FAILED
    assert failed.answer == ""
    assert after.status is GenerationStatus.OK
    spool = store._state.spool
    assert spool is not None
    for segment in segments_of(store.spool_dir, spool.writer_id):
        assert b'"lost"' not in segment.path.read_bytes()  # cut off the failed segment
    assert sorted(r.request_id or "" for r in _rows(store)) == ["after", "before"]
    store.close()


def test_two_writers_racing_on_one_key_leave_one_row(location: Location) -> None:
    # Two processes (two writers) get the same request; both look the key up before either
    # has appended. The shared guard txn makes the second append conflict and look again.
    first = location.store(spool_dir=location.scratch / "s1", flush_interval_seconds=30)
    second = location.store(spool_dir=location.scratch / "s2", flush_interval_seconds=30)
    first.record(validation_row(request_id="twice"), query_row(request_id="twice"))
    second.record(validation_row(request_id="twice"), query_row(request_id="twice"))
    looked_up = threading.Event()
    second_done = threading.Event()
    real_absent = DeltaAuditStore._absent

    def absent_then_wait(self: DeltaAuditStore, table: Any, keyed: Any) -> Any:
        rows = real_absent(self, table, keyed)
        if self is first and not looked_up.is_set():
            looked_up.set()
            second_done.wait(30)  # the other writer appends in between
        return rows

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DeltaAuditStore, "_absent", absent_then_wait)
        racer = threading.Thread(target=first.flush)
        racer.start()
        assert looked_up.wait(30)
        second.flush()
        second_done.set()
        racer.join(60)
    assert [r.request_id for r in first.select(ValidationRow)] == ["twice"]
    assert [r.request_id for r in first.select(QueryRow)] == ["twice"]
    first.close()
    second.close()


NEW_QUERY_COLUMNS = {"score_normalization", "access_denied_count", "response_text"}


def _queries_table_from_before_new_columns(location: Location) -> int:
    """A queries table as groundlock wrote it before NEW_QUERY_COLUMNS, holding row "old".

    Returns its column count.
    """
    from arro3.core import Schema, Table  # noqa: PLC0415

    from groundlock.stores.arrow import to_arrow  # noqa: PLC0415

    current = to_arrow(QueryRow, [query_row(request_id="old", run_id="old")])
    keep = [
        i
        for i in range(current.num_columns)
        if current.schema.field(i).name not in NEW_QUERY_COLUMNS
    ]
    old = Table.from_arrays(
        [current.column(i) for i in keep], schema=Schema([current.schema.field(i) for i in keep])
    )
    queries, options = location.table("queries"), location.storage_options or None
    DeltaTable.create(
        queries, old.schema, configuration={"delta.appendOnly": "true"}, storage_options=options
    )
    deltalake.write_deltalake(queries, old, mode="append", storage_options=options)
    return len(keep)


def test_a_table_from_before_new_columns_is_upgraded_in_place(location: Location) -> None:
    _queries_table_from_before_new_columns(location)
    store = location.store(flush_interval_seconds=30)
    try:
        response = grounded_answer_chain(store=store).invoke(make_bundle(request_id="new"))
        assert response.status is GenerationStatus.OK
        rows = {row.request_id: row for row in _rows(store, QueryRow)}
    finally:
        store.close()
    assert sorted(rows) == ["new", "old"]
    assert rows["old"].access_denied_count is None
    assert rows["old"].score_normalization is None
    assert rows["old"].response_text is None
    assert rows["new"].status == "OK"
    assert rows["new"].response_text == response.answer
    queries = DeltaTable(location.table("queries"), storage_options=location.storage_options)
    assert {f.name for f in queries.schema().fields} >= NEW_QUERY_COLUMNS


def test_a_table_from_before_new_columns_reads_before_any_writer_upgrades_it(
    location: Location,
) -> None:
    old_columns = _queries_table_from_before_new_columns(location)
    store = location.store(flush_interval_seconds=30)
    try:
        (row,) = store.select(QueryRow)
    finally:
        store.close()
    assert (row.request_id, row.score_normalization, row.access_denied_count) == ("old", None, None)
    # Reading changed nothing.
    queries = DeltaTable(location.table("queries"), storage_options=location.storage_options)
    assert len(queries.schema().fields) == old_columns


def test_the_servers_retrieval_strategy_outranks_the_bundles_claim(
    store: DeltaAuditStore,
) -> None:
    chain = grounded_answer_chain(store=store)
    claimed = make_bundle(request_id="claimed", retrieval_strategy="vector_store:Claimed")
    chain.invoke(claimed, {"metadata": {"retrieval_strategy": "server-hybrid-v3"}})
    chain.invoke({**claimed, "request_id": "unclaimed-by-server"})
    rows = {row.request_id: row.retrieval_strategy for row in _rows(store, QueryRow)}
    assert rows == {"claimed": "server-hybrid-v3", "unclaimed-by-server": "vector_store:Claimed"}
