"""The spool's own guarantees, including the races a review found (each test failed before
its fix): a live writer is never adopted, a failed batch is never acknowledged, a flusher
step that fails does not stop the flusher, and a writer's lock is released once."""

from __future__ import annotations

import fcntl
import logging
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundlock.stores import AuditUnavailable, DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores import delta as delta_module
from groundlock.stores import spool as spool_module
from groundlock.stores.spool import SpoolError, SpoolWriter, adopted, read_segment, segments_of
from tests.stores.rows import query_row, validation_row


def _rows(request_id: str) -> tuple[Any, Any]:
    return validation_row(request_id=request_id), query_row(request_id=request_id)


def test_a_live_writer_is_never_adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A recovery runs while a writer is being created. Before the fix it could lock the new
    # writer's still unlocked lock file, unlink it, and later commit and delete the live
    # writer's open segment: acknowledged rows lost.
    running = DeltaAuditStore(tmp_path, flush_interval_seconds=3600)
    running.record(*_rows("x-1"))
    real_flock = fcntl.flock
    paused, resume = threading.Event(), threading.Event()

    def slow_flock(fd: int, operation: int) -> None:
        if threading.current_thread().name == "starting" and not resume.is_set():
            paused.set()
            resume.wait(10)
        real_flock(fd, operation)

    monkeypatch.setattr(spool_module.fcntl, "flock", slow_flock)
    starting = DeltaAuditStore(tmp_path, flush_interval_seconds=3600)
    thread = threading.Thread(target=lambda: starting.record(*_rows("w-1")), name="starting")
    thread.start()
    assert paused.wait(10)
    running.recover()
    resume.set()
    thread.join(30)
    later = DeltaAuditStore(tmp_path, flush_interval_seconds=3600)
    later.recover()
    starting.record(*_rows("w-2"))
    for store in (starting, running, later):
        store.close()
    ids = sorted(row.request_id or "" for row in running.select(ValidationRow))
    assert ids == ["w-1", "w-2", "x-1"]


def test_adopted_refuses_a_lock_held_by_a_live_writer(tmp_path: Path) -> None:
    writer = SpoolWriter(tmp_path)
    writer.append(spool_module.encode_line("line"))
    with adopted(tmp_path, writer.writer_id) as segments:
        assert segments is None
    writer.release()
    with adopted(tmp_path, writer.writer_id) as segments:
        assert segments is not None
        assert [s.seq for s in segments] == [0]


def test_a_batch_whose_write_raises_is_never_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # X's slow write lets A and B queue into one batch, whose write raises MemoryError.
    writer = SpoolWriter(tmp_path)
    real_write_all = spool_module._write_all
    calls: list[bytes] = []

    def write_all(fd: int, data: bytes) -> None:
        calls.append(data)
        if len(calls) == 1:
            time.sleep(0.3)
        if len(calls) == 2:
            raise MemoryError
        real_write_all(fd, data)

    monkeypatch.setattr(spool_module, "_write_all", write_all)
    outcome: dict[str, str] = {}

    def append(name: str, delay: float) -> None:
        time.sleep(delay)
        try:
            writer.append(spool_module.encode_line(name), name)
            outcome[name] = "durable"
        except (SpoolError, MemoryError) as exc:
            outcome[name] = type(exc).__name__

    threads = [
        threading.Thread(target=append, args=(name, delay))
        for name, delay in (("X", 0.0), ("A", 0.1), ("B", 0.15))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    append("C", 0.0)
    assert outcome["X"] == outcome["C"] == "durable"
    assert outcome["A"] != "durable"
    assert outcome["B"] != "durable"
    writer.rotate()
    written = [read_segment(s.path)[0] for s in segments_of(tmp_path, writer.writer_id)]
    assert sorted(line for lines in written for line in lines) == ["C", "X"]


def test_a_failing_flusher_step_does_not_stop_the_flusher(tmp_path: Path) -> None:
    # A lock "file" this process cannot open (here a directory) used to kill the flusher:
    # requests were still acknowledged and nothing was committed again.
    store = DeltaAuditStore(tmp_path, flush_interval_seconds=0.05)
    (store.spool_dir / ("ab" * 16 + ".lock")).mkdir(parents=True)
    for number in range(3):
        store.record(*_rows(f"r{number}"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(store.select(ValidationRow)) < 3:
        time.sleep(0.1)
    assert store._state.flusher is not None
    assert store._state.flusher.is_alive()
    assert len(store.select(ValidationRow)) == 3
    store.close()


def test_release_twice_closes_nothing_else(tmp_path: Path) -> None:
    writer = SpoolWriter(tmp_path)
    writer.release()
    bystander = os.open(os.devnull, os.O_RDONLY)  # may reuse the lock's descriptor number
    try:
        writer.release()
        os.fstat(bystander)  # still open
    finally:
        os.close(bystander)


def test_rows_that_no_longer_validate_are_set_aside_not_dropped(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path, flush_interval_seconds=3600)
    store.record(*_rows("good"))
    orphan = store.spool_dir / f"{'e' * 32}.000000000000.spool"
    orphan.write_bytes(spool_module.encode_line('{"validation": {"from": "another version"}}'))
    store.recover()
    assert not orphan.exists()
    assert orphan.with_suffix(".bad").exists()
    store.close()
    assert [r.request_id for r in store.select(ValidationRow)] == ["good"]


_RECOVER_ELSEWHERE = """
import sys
from groundlock.stores import DeltaAuditStore
store = DeltaAuditStore(sys.argv[1], flush_interval_seconds=1000)
store.recover()
store.close()
"""


@pytest.mark.slow
def test_a_live_writer_keeps_its_open_segment_even_without_its_lock_file(
    tmp_path: Path,
) -> None:
    # An operator clears "stale" lock files; another process then runs its recovery. The
    # writer's open segment is locked on its own, so it is not taken from under it.
    live = DeltaAuditStore(tmp_path, flush_interval_seconds=1000)
    live.record(*_rows("r0"))
    for lock in live.spool_dir.glob("*.lock"):
        lock.unlink()
    live.record(*_rows("r1"))
    subprocess.run(
        [sys.executable, "-c", _RECOVER_ELSEWHERE, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2], check=True, timeout=120,
    )  # fmt: skip
    live.record(*_rows("r2"))
    live.close()
    ids = sorted(row.request_id or "" for row in live.select(ValidationRow))
    assert ids == ["r0", "r1", "r2"]


def test_a_spool_directory_belongs_to_one_store(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    staging = DeltaAuditStore(tmp_path / "staging", spool_dir=spool)
    staging.record(*_rows("staging-1"))
    production = DeltaAuditStore(tmp_path / "production", spool_dir=spool)
    with pytest.raises(AuditUnavailable, match="belongs to another store"):
        production.record(*_rows("production-1"))
    staging.close()
    assert [r.request_id for r in staging.select(ValidationRow)] == ["staging-1"]


def test_a_second_execution_with_another_outcome_is_recorded_not_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = DeltaAuditStore(tmp_path, flush_interval_seconds=1000)
    failed = validation_row(
        request_id="again", status="FAILED", validation_status="FAILED",
        generation_status="FAILED", failure_reason="UNCITED_FACTUAL_STATEMENT",
    )  # fmt: skip
    failed_query = query_row(
        request_id="again", status="FAILED", failure_reason="UNCITED_FACTUAL_STATEMENT"
    )
    store.record(failed, failed_query)
    store.flush()
    with caplog.at_level(logging.WARNING, logger="groundlock.audit"):
        store.record(validation_row(request_id="again"), query_row(request_id="again"))
        store.record(failed, failed_query)  # the first outcome again: idempotent, silent
        store.record(validation_row(request_id="again"), query_row(request_id="again"))
        store.flush()
    rerun = "run-1~1"  # (the next number: not a hash the client could compute)
    validations = {(r.run_id, r.status) for r in store.select(ValidationRow)}
    assert validations == {("run-1", "FAILED"), (rerun, "OK")}
    assert {(r.run_id, r.status) for r in store.select(QueryRow)} == validations
    assert caplog.text.count("executed again with another outcome") == 2  # (one per table)
    store.close()


def test_a_slow_failing_check_is_not_repeated_by_every_waiting_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DeltaAuditStore(tmp_path)
    checks = []

    def slow_problem() -> str:
        checks.append(1)
        time.sleep(0.3)
        return "the validations table cannot be opened (OSError)"

    monkeypatch.setattr(store, "problem", slow_problem)
    monkeypatch.setattr(delta_module, "_RETRY", 0.2)  # shorter than one check
    refused = []

    def request() -> None:
        with pytest.raises(AuditUnavailable):
            store.record(*_rows("x"))
        refused.append(1)

    threads = [threading.Thread(target=request) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(refused) == 10
    assert len(checks) <= 2


def test_the_store_heals_when_its_spool_directory_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delta_module, "_RETRY", 0.0)
    store = DeltaAuditStore(tmp_path, spool_dir=tmp_path / "spool", flush_interval_seconds=1000)
    store.record(*_rows("before"))
    store.flush()
    shutil.rmtree(tmp_path / "spool")
    with pytest.raises(AuditUnavailable):
        store.record(*_rows("lost"))
    store.record(*_rows("after"))  # a new writer in a new directory
    store.close()
    assert sorted(r.request_id or "" for r in store.select(ValidationRow)) == ["after", "before"]


def _claim(spool: str, audit: str, start: Any, results: Any) -> None:
    store = DeltaAuditStore(audit, spool_dir=spool)
    start.wait()
    results.put(store._spool_problem())


@pytest.mark.slow
def test_processes_claiming_a_new_spool_at_once_all_agree(tmp_path: Path) -> None:
    # Several workers of one store start together: none may read the ownership marker
    # while another is still writing it (it once did, about one start in eight).
    context = multiprocessing.get_context("fork")
    for trial in range(15):
        spool = tmp_path / f"spool-{trial}"
        start, results = context.Barrier(6), context.Queue()
        workers = [
            context.Process(target=_claim, args=(str(spool), str(tmp_path / "a"), start, results))
            for _ in range(6)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert [results.get(timeout=10) for _ in workers] == [None] * 6
        assert sorted(p.name for p in spool.iterdir()) == ["STORE"]  # no draft left behind
