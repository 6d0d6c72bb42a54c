"""The audit trail's cost on the hot path, and the rows/s its flusher commits.

    python benchmarks/audit.py [--section 1|2|3 ...] [--requests N] [--rows N]
                               [--backend local|s3|azure ...] [--writers 1,4,16]
                               [--per-writer K] [--flush-rows F]

1. Added latency per request: ``R5.RecordValidation`` timed on its own (build both rows,
   append them to the fsynced spool; invoked alone, so with its own run plumbing) for N
   distinct verdicts, p50 and p99; and the whole chain with and without a store,
   interleaved, medians. Target (issue 5): under 0.5 ms p50 added. Most of it is the
   disk's fsync, printed beside it: the rest is the CPU cost of building the rows.
2. Committed rows/s: N requests' rows are spooled by 32 threads (sharing fsyncs), then the
   flusher commits them all; rows/s = validation rows committed / commit time. Target: at
   least 20,000 rows/s.
3. Committed rows/s with 1, 4 and 16 concurrent writer processes, per backend: each
   process (``benchmarks/audit_writer.py``: a store of its own, its own spool writer)
   spools K requests with 8 threads and commits them as it goes, every F requests, then
   closes; all start together on a fresh, empty trail. rows/s = validation rows committed /
   the time from the start signal until the last process has closed (its rows committed).
   Printed beside it: the linked commits in both tables, and the commits retried after a
   conflict with another writer (the store logs each at DEBUG). Backends: ``local`` (a
   directory), ``s3`` (moto's S3 server on loopback, ``tests/fakes/s3.py``) and ``azure``
   (Azurite, when ``tests/fakes/azurite.py`` is there and says the emulator is installed;
   it is then in the default set too). A loopback emulator measures the store's protocol
   and the writers' contention, not a cloud's latency.

Sections 1 and 2 use a local directory under a temporary directory (the real fsync of this
disk). Figures come from one run; the machine is noisy, so compare within a run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import audit_writer
from chain import FixedChatModel, _bundle

from groundlock import grounded_answer_chain, load_policy
from groundlock.core.audit import audit_rows
from groundlock.runnables.record import RecordValidation
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.delta import SpoolEntry
from groundlock.stores.hashchain import link_of
from groundlock.stores.spool import segments_of

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/fakes: the S3 (and Azure) emulators the tests use


def _verdicts(count: int) -> list[Any]:
    """Distinct R5 verdicts (distinct request ids), as RecordValidation receives them."""
    steps = grounded_answer_chain(model=FixedChatModel()).steps[:4]
    verdicts = []
    for number in range(count):
        value: Any = {**_bundle(20), "request_id": f"bench-{number}"}
        for step in steps:
            value = step.invoke(value)
        verdicts.append(value)
    return verdicts


def _p(samples: list[float], percent: int) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * percent / 100))]


def added_latency(root: Path, requests: int) -> None:
    store = DeltaAuditStore(root / "latency", flush_interval_seconds=0.5)
    stage = RecordValidation(store=store)
    verdicts = _verdicts(requests)
    stage.invoke(verdicts[0])  # opens the tables and the spool
    samples = []
    for verdict in verdicts:
        start = time.perf_counter()
        stage.invoke(verdict)
        samples.append((time.perf_counter() - start) * 1e3)
    print(f"RecordValidation alone, {requests} requests (ms)")
    print(f"  p50 {statistics.median(samples):.3f}   p99 {_p(samples, 99):.3f}")

    plain = grounded_answer_chain(model=FixedChatModel())
    audited = grounded_answer_chain(model=FixedChatModel(), store=store)
    timings: dict[str, list[float]] = {"plain": [], "audited": [], "fsync": []}
    line = b"x" * 2_500 + b"\n"
    probe = os.open(root / "fsync-probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for number in range(requests):
            bundle = {**_bundle(20), "request_id": f"chain-{number}"}
            for name, chain in (("plain", plain), ("audited", audited)):
                start = time.perf_counter()
                chain.invoke(bundle)
                timings[name].append((time.perf_counter() - start) * 1e3)
            # The disk's own fsync latency, in the same moments (it varies with the host).
            start = time.perf_counter()
            os.write(probe, line)
            os.fsync(probe)
            timings["fsync"].append((time.perf_counter() - start) * 1e3)
    finally:
        os.close(probe)
    plain_ms, audited_ms = (
        statistics.median(timings["plain"]),
        statistics.median(timings["audited"]),
    )
    fsync_ms = statistics.median(timings["fsync"])
    added = audited_ms - plain_ms
    added_p99 = _p(timings["audited"], 99) - _p(timings["plain"], 99)
    print(f"whole chain, 20 rows, {requests} requests each, interleaved (ms)")
    print(f"  without store p50 {plain_ms:.3f}   with store p50 {audited_ms:.3f}")
    print(f"  added p50 {added:.3f}   added p99 {added_p99:.3f}")
    print(
        f"  this disk's write+fsync of one line, same moments, p50 {fsync_ms:.3f}: "
        f"the rest, {added - fsync_ms:.3f}, is building and encoding the rows"
    )
    store.close()


def _row_pairs(requests: int) -> list[Any]:
    """``requests`` distinct (validation, query) row pairs, from up to 200 real verdicts."""
    policy = load_policy()
    pairs = [
        audit_rows(v, {}, version="bench", policy=policy) for v in _verdicts(min(requests, 200))
    ]
    return [
        (
            validation.model_copy(update={"request_id": f"r{n}", "record_id": f"v{n}"}),
            query.model_copy(update={"request_id": f"r{n}", "record_id": f"q{n}"}),
        )
        for n, (validation, query) in ((n, pairs[n % len(pairs)]) for n in range(requests))
    ]


def committed_rows(root: Path, requests: int) -> None:
    store = DeltaAuditStore(root / "commit", flush_rows=10**9, flush_interval_seconds=3600)
    rows = _row_pairs(requests)
    store.problem()
    threads = 32
    start = time.perf_counter()

    def spool(part: int) -> None:
        for validation, query in rows[part::threads]:
            store.record(validation, query)

    workers = [threading.Thread(target=spool, args=(part,)) for part in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    spooled = time.perf_counter() - start
    state = store._state
    start = time.perf_counter()
    store.flush()
    committed = time.perf_counter() - start
    count = len(store.select(ValidationRow))
    writer = state.spool.writer_id if state.spool else ""
    if count != requests or segments_of(store.spool_dir, writer):
        raise SystemExit(f"committed {count} of {requests} rows, or segments were left")
    print(
        f"spool: {requests} requests by {threads} threads in {spooled:.2f} s "
        f"= {requests / spooled:,.0f} requests/s (group-committed fsyncs)"
    )
    print(
        f"flusher: {count} validation rows (+ {count} query rows) committed in "
        f"{committed:.2f} s = {count / committed:,.0f} rows/s"
    )
    store.close()


# -- 3. concurrent writer processes ----------------------------------------------------------

_WRITER = Path(__file__).with_name("audit_writer.py")
"""Section 3's writer process: the store alone, so 16 of them start quickly."""


Location = Callable[[str], tuple[str, dict[str, str]]]
"""A backend's fresh trail location for one run's name: its URI and storage options."""


@contextlib.contextmanager
def _backend(name: str, directory: Path) -> Iterator[Location]:
    """The backend's server, if it has one, for the length of its runs."""
    if name == "local":
        yield lambda run: (str(directory / "local" / run), {})
    elif name == "s3":
        from tests.fakes.s3 import moto_s3  # noqa: PLC0415

        with moto_s3() as server:
            bucket = server.new_bucket()
            yield lambda run: (f"s3://{bucket}/{run}", server.storage_options())
    elif name == "azure":
        # Azurite, through the tests' own emulator fixture (tests/fakes/azurite.py).
        from tests.fakes.azurite import azurite  # noqa: PLC0415

        workspace = directory / "azurite"
        workspace.mkdir(parents=True, exist_ok=True)
        with azurite(workspace) as server:
            container = server.new_container()
            yield lambda run: (f"az://{container}/{run}", server.storage_options())
    else:
        raise SystemExit(f"no backend {name!r}: local, s3 or azure")


def _azurite_available() -> bool:
    """Whether the Azurite emulator is here: its fixture module, and the emulator installed."""
    try:
        from tests.fakes.azurite import azurite_missing  # noqa: PLC0415
    except ImportError:
        return False
    return azurite_missing() is None


def _linked_commits(uri: str, options: dict[str, str]) -> int:
    from deltalake import DeltaTable  # noqa: PLC0415

    return sum(
        link_of(commit) is not None
        for row_type in (ValidationRow, QueryRow)
        for commit in DeltaTable(f"{uri}/{row_type.table}", storage_options=options).history()
    )


def _line(stream: IO[str] | None) -> str:
    """The next line a writer printed ('' at its end)."""
    return stream.readline() if stream is not None else ""


def writer_processes(
    location: Location, backend: str, writers: int, *, per_writer: int, flush_rows: int,
    spool_root: Path, templates: Path,
) -> None:  # fmt: skip
    uri, options = location(f"w{writers}")
    spool = spool_root / f"{backend}-w{writers}"
    DeltaAuditStore(uri, options, spool_dir=spool).problem()  # the tables, made once
    environment = {**os.environ, **options}
    children = [
        subprocess.Popen(  # noqa: S603  (our own interpreter and script)
            [sys.executable, str(_WRITER), uri, str(spool), f"p{n}-", str(per_writer),
             str(flush_rows), str(templates)],
            env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for n in range(writers)
    ]  # fmt: skip
    for child in children:
        if _line(child.stdout).strip() != "ready":
            raise SystemExit(f"a writer did not start (exit {child.wait()})")
    start = time.perf_counter()
    for child in children:
        if child.stdin is not None:
            child.stdin.write("go\n")
            child.stdin.flush()
    reports = [json.loads(_line(child.stdout) or "null") for child in children]
    elapsed = time.perf_counter() - start
    for child in children:
        child.communicate()
    if None in reports:
        raise SystemExit(f"{backend}, {writers} writers: a writer failed")
    auditor = DeltaAuditStore(uri, options, spool_dir=spool)
    committed = len(auditor.select(ValidationRow))
    left = sum(report["left"] for report in reports)
    conflicts = sum(report["conflicts"] for report in reports)
    spooled = max(report["spooled"] for report in reports)
    commits = _linked_commits(uri, options)
    note = ""
    if left:  # the run's rows/s counts only what was committed while it ran
        auditor.recover()
        note = f"   ({left} segment(s) left, committed by recover() afterwards)"
    if len(auditor.select(ValidationRow)) != writers * per_writer:
        raise SystemExit(f"{backend}, {writers} writers: rows lost or duplicated")
    auditor.close()
    print(
        f"  {backend:<6} {writers:>3} writers  {committed:>7,} rows in {elapsed:6.2f} s "
        f"(all spooled by {spooled:5.2f} s) = {committed / elapsed:>7,.0f} rows/s  "
        f"{commits:>4} commits  {conflicts:>4} conflicts retried{note}"
    )


def concurrent_writers(
    directory: Path, backends: list[str], counts: list[int], per_writer: int, flush_rows: int
) -> None:
    print(
        f"committed rows/s with concurrent writer processes ({per_writer} requests each, "
        f"{audit_writer.THREADS} threads, a commit every {flush_rows} requests or second)"
    )
    print("  (the time runs until the last writer has committed all its rows and closed)")
    templates = directory / "row-templates.jsonl"
    templates.write_text(
        "".join(
            SpoolEntry(validation=v, query=q).model_dump_json() + "\n" for v, q in _row_pairs(20)
        ),
        encoding="utf-8",
    )
    for backend in backends:
        with _backend(backend, directory) as location:
            for writers in counts:
                writer_processes(
                    location, backend, writers, per_writer=per_writer, flush_rows=flush_rows,
                    spool_root=directory / "spools", templates=templates,
                )  # fmt: skip


def main() -> None:
    """Print the three measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument(
        "--backend",
        action="append",
        choices=["local", "s3", "azure"],
        help="section 3's backends (repeat it; default local and s3, and azure where "
        "Azurite is installed)",
    )
    parser.add_argument(
        "--writers",
        default="1,4,16",
        help="section 3's writer process counts, comma-separated (default 1,4,16)",
    )
    parser.add_argument("--per-writer", type=int, default=2_000, metavar="K")
    parser.add_argument("--flush-rows", type=int, default=500, metavar="F")
    parser.add_argument(
        "--section",
        action="append",
        type=int,
        choices=[1, 2, 3],
        help="run only this section (repeat it; default all three)",
    )
    args = parser.parse_args()
    sections = set(args.section or [1, 2, 3])
    backends = args.backend or ["local", "s3", *(["azure"] if _azurite_available() else [])]
    counts = [int(count) for count in args.writers.split(",")]
    with tempfile.TemporaryDirectory() as directory:
        if 1 in sections:
            added_latency(Path(directory), args.requests)
        if 2 in sections:
            committed_rows(Path(directory), args.rows)
        if 3 in sections:
            concurrent_writers(Path(directory), backends, counts, args.per_writer, args.flush_rows)


if __name__ == "__main__":
    main()
