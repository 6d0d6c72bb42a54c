"""Many writers on one object-store trail: processes, hosts, SIGKILL and a multi-worker server.

The object-store counterpart of :mod:`tests.stores.test_store_processes`: real interpreters
(:mod:`tests.stores.writer_process`, and ``groundlock serve`` with two uvicorn workers)
write one trail on a real S3-protocol server (moto, over HTTP), and an auditor checks it
afterwards: every acknowledged request is one row in both tables, and the hash chain,
recomputed from the committed files in the bucket (``verify_store``), shows no commit lost,
replaced or reordered. Only the object store serialises the writers: each writer's spool
is its own host's local disk. The trail's place is the ``object_place`` fixture's
(``tests/stores/conftest.py``), one run per object store.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import httpx
import pytest

from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.delta import SpoolEntry
from groundlock.stores.spool import read_segment
from groundlock.stores.verify import verify_store
from tests.builders import make_bundle
from tests.stores.places import Place

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # (objectstore comes with each backend's param)


def _environment(place: Place, spool: Path) -> dict[str, str]:
    """A writer process's environment: the store's settings and its host's local spool.

    delta-rs reads the same option names from the environment as from storage options,
    which is how ``groundlock serve`` is configured.
    """
    return {**os.environ, **place.options, "GROUNDLOCK_SPOOL_DIR": str(spool)}


def _store(place: Place, spool: Path) -> DeltaAuditStore:
    """A store in this process spooling where a writer given ``spool`` does (so that its
    ``recover`` adopts theirs)."""
    with mock.patch.dict(os.environ, {"GROUNDLOCK_SPOOL_DIR": str(spool)}):
        return DeltaAuditStore(place.root, place.options)


def _writer(
    place: Place, spool: Path, prefix: str, count: int, flush_rows: int
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stores.writer_process", place.root, prefix, str(count),
         str(flush_rows)],
        cwd=ROOT, env=_environment(place, spool), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _conflicts(stderr: str) -> int:
    return sum(int(n) for n in re.findall(r"^conflicts-retried (\d+)$", stderr, re.MULTILINE))


def _keys(store: DeltaAuditStore, row_type: type[ValidationRow] | type[QueryRow]) -> Counter[str]:
    return Counter(row.request_id or "" for row in store.select(row_type))


def _left_in(spools: list[Path]) -> list[str]:
    return [path.name for spool in spools for path in spool.rglob("*.spool")]


def _spooled(spool: Path) -> list[str]:
    """The request ids in the spool segments under ``spool``, committed or not."""
    return [
        SpoolEntry.model_validate_json(line).validation.request_id or ""
        for path in spool.rglob("*.spool")
        for line in read_segment(path)[0]
    ]


def _audit(place: Place, tmp_path: Path, answered: list[str]) -> dict[str, int]:
    """The auditor's checks, shared by every trial; returns rows and linked commits."""
    store = _store(place, tmp_path / "auditor")
    validations, queries = _keys(store, ValidationRow), _keys(store, QueryRow)
    assert all(validations[rid] == 1 for rid in answered), "an answered request has no row"
    assert max(validations.values()) == 1, "a duplicate row"
    assert queries == validations, "the two tables disagree"
    reports = {report.table: report for report in verify_store(store)}
    for report in reports.values():
        assert report.findings == [], [finding.line() for finding in report.findings]
    for name in ("validations", "queries"):
        assert reports[name].rows == sum(validations.values()), name
    return {
        "rows": sum(validations.values()),
        "commits": reports["validations"].links + reports["queries"].links,
    }


def test_writers_on_three_hosts_record_every_answer_once_in_one_chain(
    object_place: Place, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Six processes, two per host (a host's processes share its spool directory), start
    # on an empty location at once: they race to create the tables, then to append.
    hosts = [tmp_path / f"host{n}" for n in range(3)]
    writers = [_writer(object_place, hosts[n % 3], f"w{n}", 8, flush_rows=4) for n in range(6)]
    outputs = [writer.communicate(timeout=300) for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * 6, [err for _, err in outputs]
    answered = [line for out, _ in outputs for line in out.split()]
    assert len(answered) == 48
    assert _left_in(hosts) == [], "a spool segment was left uncommitted"
    counts = _audit(object_place, tmp_path, answered)
    assert counts["rows"] == 48
    assert counts["commits"] >= 2 * 6  # each writer committed to both tables at least once
    for name, value in {
        **counts,
        "conflicts_retried": _conflicts("".join(e for _, e in outputs)),
    }.items():
        request.node.user_properties.append((name, value))  # (for a --junitxml report)


def test_sigkill_of_writers_on_an_object_store_loses_no_answered_request(
    object_place: Place, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # One writer runs throughout; five more on the same host are killed one after another at
    # a random point (inside a request, a spool fsync, an upload or a commit), each soon
    # after it started, often before it committed what its predecessors left. A last writer
    # then runs to its end: at its start it adopts and commits whatever the killed ones
    # spooled, so nothing is left for anyone else to recover.
    rng = random.Random(31)
    spool = tmp_path / "host"
    steady = _writer(object_place, spool, "steady", 20, flush_rows=3)
    answered: list[str] = []
    kills = 0
    for trial in range(5):
        process = _writer(object_place, spool, f"k{trial}", 400, flush_rows=rng.choice([1, 3, 50]))
        assert process.stdout is not None
        for _ in range(rng.randint(1, 10)):
            line = process.stdout.readline()
            if not line:
                break
            answered.append(line.strip())
        time.sleep(rng.uniform(0, 0.3))
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1
        printed, _ = process.communicate()  # answered before the kill, read after it
        answered += printed.split()
    out, err = steady.communicate(timeout=300)
    assert steady.returncode == 0, err
    answered += out.split()
    left = {path.name.split(".")[0] for path in spool.rglob("*.spool")}
    successor = _writer(object_place, spool, "after", 3, flush_rows=3)
    out, _ = successor.communicate(timeout=300)
    assert successor.returncode == 0
    answered += out.split()
    assert _left_in([spool]) == [], "the next process did not commit what the killed ones left"
    counts = _audit(object_place, tmp_path, answered)
    assert len(answered) >= 5 + 20 + 3
    for name, value in {
        **counts, "answered": len(answered), "kills": kills, "conflicts_retried": _conflicts(err),
        "killed_writers_with_rows_left_for_the_last": len(left),
    }.items():  # fmt: skip
        request.node.user_properties.append((name, value))  # (for a --junitxml report)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _workers(server: subprocess.Popen[str]) -> list[int]:
    """uvicorn's live worker processes: the server's spawned children (not its resource
    tracker, nor a killed worker not yet reaped)."""
    workers = []
    for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split():
        with contextlib.suppress(OSError):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes() and state != "Z":
                workers.append(int(pid))
    return workers


@contextlib.contextmanager
def _served(place: Place, spool: Path, workers: int) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "groundlock", "serve", "--port", str(port), "--workers",
         str(workers), "--store", place.root],
        cwd=ROOT, env=_environment(place, spool), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while len(_workers(server)) < workers or not _healthy(url):
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail(f"the server did not start: {server.communicate()[1][-2000:]}")
            time.sleep(0.2)
        yield url, server
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)  # the workers shut down and flush on exit
        _, errors = server.communicate(timeout=120)
    assert "PanicException" not in errors


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_a_server_with_two_workers_one_killed_loses_no_answered_request(
    object_place: Place, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # groundlock serve --workers 2 on the trail, four clients at once; one worker is killed
    # in the middle, uvicorn starts another, the clients go on, and the server is stopped
    # with SIGTERM. A request whose worker died before it answered is not acknowledged (the
    # client saw an error), and may or may not have a row; every acknowledged one has
    # exactly one.
    spool = tmp_path / "host"
    answered: list[str] = []
    errors = 0
    lock = threading.Lock()

    def ask(number: int, client: httpx.Client, url: str) -> None:
        nonlocal errors
        request_id = f"s{number}"
        try:
            response = client.post(
                f"{url}/answer/invoke", json={"input": make_bundle(request_id=request_id)},
                timeout=60,
            )  # fmt: skip
            ok = response.status_code == 200 and response.json()["output"]["status"] == "OK"
        except httpx.TransportError:
            ok = False
        with lock:
            if ok:
                answered.append(request_id)
            else:
                errors += 1

    with _served(object_place, spool, workers=2) as (url, server), httpx.Client() as client:
        first = _workers(server)
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: ask(n, client, url), range(20)))
            during = pool.map(lambda n: ask(n, client, url), range(20, 60))
            while len(answered) + errors < 25:  # killed while requests are in flight
                time.sleep(0.01)
            victim = random.Random(21).choice(first)
            os.kill(victim, signal.SIGKILL)
            list(during)
            deadline = time.monotonic() + 60
            while victim in _workers(server) or len(_workers(server)) < 2:
                assert time.monotonic() < deadline, "uvicorn did not replace the killed worker"
                time.sleep(0.2)
            list(pool.map(lambda n: ask(n, client, url), range(60, 90)))
    assert len(answered) >= 80, errors
    # The workers that stopped gracefully committed their spools as they shut down: what is
    # left, if anything, is the killed worker's (its replacement adopts it at its first
    # request, if it got one), never a request answered after the kill.
    left = {path.name.split(".")[0] for path in spool.rglob("*.spool")}
    assert len(left) <= 1, left
    assert not set(_spooled(spool)) & {f"s{n}" for n in range(60, 90)}
    auditor = _store(object_place, spool)
    auditor.recover()  # the next process on this host would do the same
    auditor.close()
    assert _left_in([spool]) == []
    counts = _audit(object_place, tmp_path, answered)
    for name, value in {
        **counts,
        "answered": len(answered),
        "not_answered": errors,
        "writers_with_rows_left_for_the_auditor": len(left),
    }.items():
        request.node.user_properties.append((name, value))  # (for a --junitxml report)
