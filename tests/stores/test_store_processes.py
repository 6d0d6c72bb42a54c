"""The audit store under real processes: SIGKILL, eight writers, compaction, fork, read-only.

Each test starts real interpreters running :mod:`tests.stores.writer_process` (a chain with
an audit store answering requests) and checks the Delta tables afterwards with a fresh
store, as an auditor would: reliability notes T16, T18, T19, T21 and T23.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.verify import verify_table
from tests.stores.rows import query_row, validation_row

ROOT = Path(__file__).resolve().parents[2]


def _writer(root: Path, prefix: str, count: int, flush_rows: int = 5) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stores.writer_process", str(root), prefix, str(count),
         str(flush_rows)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _keys(store: DeltaAuditStore, row_type: type[ValidationRow] | type[QueryRow]) -> Counter[str]:
    return Counter(row.request_id or "" for row in store.select(row_type))


@pytest.mark.slow
def test_sigkill_at_random_points_loses_no_answered_request(tmp_path: Path) -> None:
    # T18: 20 writers, each killed at a random point of its stream of requests.
    rng = random.Random(18)
    root = tmp_path / "audit"
    answered: list[str] = []
    for trial in range(20):
        process = _writer(root, f"t{trial}", 400, flush_rows=rng.choice([1, 3, 50]))
        assert process.stdout is not None
        stop_after = rng.randint(1, 25)
        for _ in range(stop_after):
            line = process.stdout.readline()
            if not line:
                break
            answered.append(line.strip())
        time.sleep(rng.uniform(0, 0.05))  # somewhere inside a request, a flush or a commit
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
        assert process.stderr is not None
        process.stderr.close()
    store = DeltaAuditStore(root)
    store.recover()
    validations, queries = _keys(store, ValidationRow), _keys(store, QueryRow)
    assert all(validations[rid] == 1 for rid in answered), "an answered request has no row"
    assert max(validations.values()) == 1, "a duplicate row"
    assert max(queries.values()) == 1, "a duplicate row"
    assert set(queries) == set(validations)
    assert not list(store.spool_dir.glob("*.spool")), "a spool segment was left behind"
    store.record(validation_row(request_id="after"), query_row(request_id="after"))
    store.close()
    assert _keys(store, ValidationRow)["after"] == 1
    assert len(answered) >= 20


@pytest.mark.slow
def test_eight_processes_append_at_once(tmp_path: Path) -> None:
    # T16: rows equal successful requests; (request_id, run_id) unique; conflicts retried.
    root = tmp_path / "audit"
    DeltaAuditStore(root).problem()  # create the tables once, as a deployment would
    processes = [_writer(root, f"p{n}", 25, flush_rows=5) for n in range(8)]
    outputs = [process.communicate(timeout=300) for process in processes]
    assert [process.returncode for process in processes] == [0] * 8, outputs
    answered = [line for out, _ in outputs for line in out.split()]
    assert len(answered) == 200
    store = DeltaAuditStore(root)
    validations = _keys(store, ValidationRow)
    assert sorted(validations) == sorted(answered)
    assert set(validations.values()) == {1}
    assert _keys(store, QueryRow) == validations
    assert DeltaTable(str(root / "validations")).version() >= 8
    for table in ("validations", "queries"):  # eight writers raced: still one linear chain
        report = verify_table(root / table, table)
        assert report.findings == [], report.findings
        assert report.rows == 200


@pytest.mark.slow
def test_compaction_while_appends_continue_loses_no_row(tmp_path: Path) -> None:
    # T23: optimize.compact and a vacuum dry run while writers append.
    root = tmp_path / "audit"
    store = DeltaAuditStore(root)
    store.problem()
    processes = [_writer(root, f"c{n}", 40, flush_rows=2) for n in range(2)]
    compactions = 0
    while any(process.poll() is None for process in processes):
        store.compact()
        store.vacuum(168, dry_run=True)
        compactions += 1
    outputs = [process.communicate() for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    answered = sorted(line for out, _ in outputs for line in out.split())
    before = len(DeltaTable(str(root / "validations")).file_uris())
    store.compact()
    after = len(DeltaTable(str(root / "validations")).file_uris())
    assert compactions >= 1
    assert sorted(_keys(store, ValidationRow).elements()) == answered
    assert after < before or before == 1
    for table in ("validations", "queries"):  # compactions interleaved with linked appends
        assert verify_table(root / table, table).findings == []


_FORKING_SERVER = """
import multiprocessing, os, sys
from groundlock import grounded_answer_chain
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle

store = DeltaAuditStore(sys.argv[1])
chain = grounded_answer_chain(store=store)  # built before the fork, as a preloading server
if sys.argv[2] == "used":
    store.problem()  # the parent touches delta-rs before forking: the hazard

def child(number):
    response = chain.invoke(make_bundle(request_id=f"child-{number}"))
    store.close()
    line = f"{response.status.value} {response.failure_reason} {response.answer != ''}\\n"
    os.write(1, line.encode())  # one write: the three children share stdout

if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=child, args=(n,)) for n in range(3)]
    for process in children:
        process.start()
    for process in children:
        process.join(120)
    sys.exit(max(process.exitcode or 0 for process in children))
"""


def _forking_server(root: Path, parent: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", _FORKING_SERVER, str(root), parent],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return sorted(result.stdout.splitlines())


@pytest.mark.slow
def test_a_store_made_before_fork_writes_from_each_child(tmp_path: Path) -> None:
    # The parent builds the chain and never writes: each forked child records its rows.
    assert _forking_server(tmp_path / "audit", "unused") == ["OK None True"] * 3
    assert len(DeltaAuditStore(tmp_path / "audit").select(ValidationRow)) == 3


@pytest.mark.slow
def test_children_of_a_parent_that_used_delta_fail_closed(tmp_path: Path) -> None:
    # delta-rs cannot run in a child forked after its runtime started: the child's requests
    # must fail closed, never answer unaudited, and never crash the worker.
    assert _forking_server(tmp_path / "audit", "used") == ["FAILED AUDIT_WRITE_FAILED False"] * 3


def _without_root_override() -> list[str]:
    """A command prefix under which file permissions apply, even to root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be made to apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]


@pytest.mark.slow
def test_fails_closed_on_a_read_only_table_directory(tmp_path: Path) -> None:
    # T19: the tables exist but this process may not write them. Root ignores permissions,
    # so the request runs in a child without the capabilities that let it.
    root = tmp_path / "audit-root-ro"
    DeltaAuditStore(root).problem()
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    script = (
        "from groundlock import grounded_answer_chain\n"
        "from groundlock.stores import DeltaAuditStore\n"
        "from tests.builders import make_bundle\n"
        f"store = DeltaAuditStore({str(root)!r}, spool_dir={str(tmp_path / 'spool')!r})\n"
        "print(grounded_answer_chain(store=store).invoke(make_bundle()).model_dump_json())\n"
    )
    try:
        result = subprocess.run(
            [*_without_root_override(), sys.executable, "-c", script],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        for path in [root, *root.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    assert result.returncode == 0, result.stderr
    assert '"failure_reason":"AUDIT_WRITE_FAILED"' in result.stdout
    assert '"answer":""' in result.stdout
    assert '"status":"FAILED"' in result.stdout
    assert "audit-root-ro" not in result.stdout + result.stderr
    assert DeltaAuditStore(root).select(ValidationRow) == []
