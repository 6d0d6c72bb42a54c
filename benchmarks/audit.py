"""The audit trail's cost on the hot path, and the rows/s its flusher commits.

    python benchmarks/audit.py [--section 1|2|3|4 ...] [--requests N] [--rows N]
                               [--backend local|s3|azure ...] [--writers 1,4,16]
                               [--per-writer K] [--flush-rows F]
                               [--trail-rows N] [--trail-days D] [--commit-rows C]
                               [--trail-layout day|unpartitioned] [--verify-rows V]

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

4. The trail at scale (``--section 4``; not run by default): a validations table of
   ``--trail-rows`` rows (10,000,000 unless told) over ``--trail-days`` days, laid out as
   the store lays it out (by UTC day, or unpartitioned as an earlier groundlock made it,
   ``--trail-layout``), written directly in commits of ``--commit-rows`` rows (not through
   the spool: hours at 10M) and chained as the store's flusher chains them. Then, through
   the command line's own code: ``records list`` of one day and of the last day,
   ``report`` of one day, ``executions`` of 1,000 keys, one commit of 5,000 requests
   through the store, ``compact``, and the day reads again. Each read prints the data
   files it opened (DataFusion's ``files_opened``, from ``EXPLAIN ANALYZE`` of the very
   SQL the reader ran) of the files the table holds. ``records verify`` is timed over the
   newest ``--verify-rows`` rows (a report verifies the whole trail, which at 10M would
   double the run); a trail no larger is verified whole, inside each report.

Sections 1 and 2 use a local directory under a temporary directory (the real fsync of this
disk). Figures come from one run; the machine is noisy, so compare within a run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import audit_writer
from chain import FixedChatModel, _bundle
from deltalake import CommitProperties, DeltaTable, write_deltalake

from groundlock import grounded_answer_chain, load_policy
from groundlock.cli import main as cli_main
from groundlock.cli import report as report_module
from groundlock.core.audit import audit_rows
from groundlock.runnables.record import RecordValidation
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow, delta_reads, readers
from groundlock.stores.arrow import arrow_schema
from groundlock.stores.delta import SpoolEntry
from groundlock.stores.delta_tables import TABLES
from groundlock.stores.hashchain import (
    EMPTY,
    Link,
    chain_head,
    link_digest,
    link_of,
    row_hash,
    rows_digest,
)
from groundlock.stores.layout import files_scanned, table_rows
from groundlock.stores.spool import segments_of
from groundlock.stores.verify import verify_table

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


# -- 4. the trail at scale -------------------------------------------------------------------

_TRAIL_START = datetime(2026, 10, 1, tzinfo=UTC)
_KEYS = 1_000
"""Keys ``executions`` is asked for (what a batch job resumes by)."""


@contextlib.contextmanager
def _reads() -> Iterator[list[tuple[Any, str]]]:
    """Every ``(table, sql)`` the readers run meanwhile (to count the files each opens).

    Rows are read through ``readers.run_query``; key lookups through the name
    ``delta_reads`` imported it under: both are watched.
    """
    seen: list[tuple[Any, str]] = []
    real = readers.run_query

    def spy(table: Any, sql: str, label: str) -> list[tuple[Any, ...]]:  # noqa: ANN401
        seen.append((table, sql))
        return real(table, sql, label)

    readers.run_query = delta_reads.run_query = spy
    try:
        yield seen
    finally:
        readers.run_query = delta_reads.run_query = real


def _opened(seen: list[tuple[Any, str]]) -> str:
    """``files read A of B`` for each query seen: DataFusion's count, of the table's files."""
    return ", ".join(
        f"{files_scanned(table, sql):,} of {len(table.file_uris()):,}" for table, sql in seen
    )


def _cli(*argv: str) -> tuple[float, str]:
    """Run ``groundlock ARGV`` in-process: seconds taken and what it printed."""
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli_main(list(argv))
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"groundlock {' '.join(argv)} exited {code}: {out.getvalue()}")
    return elapsed, out.getvalue()


def _build_trail(
    store: DeltaAuditStore, template: ValidationRow, rows: int, days: int, commit_rows: int
) -> list[tuple[str, str]]:
    """Write ``rows`` validation rows over ``days`` days, time-ordered, chained as the store does.

    Synthetic but valid: each row is ``template`` with its own ids, time, latency, tokens,
    prompt hash and answer text (unique, as real ones are, so Parquet cannot fold them); the
    first row of every commit is validated against the row model. Each commit carries the
    link the store's flusher would give it. Returns some keys, for ``executions``.
    """
    table = DeltaTable(store.table_uri(ValidationRow))
    head = chain_head(table, "validations")
    prev, seq, running = head.digest, head.seq, head.running or EMPTY
    base = dict(template.__dict__)
    text = template.validated_answer_text or ""
    step = timedelta(days=days) / rows
    keys: list[tuple[str, str]] = []
    every = max(1, rows // _KEYS)
    for start in range(0, rows, commit_rows):
        batch = []
        for number in range(start, min(rows, start + commit_rows)):
            record, request = uuid.uuid4().hex, uuid.uuid4().hex
            values = {
                **base, "record_id": record, "request_id": request, "run_id": "bench-run",
                "timestamp_utc": _TRAIL_START + step * number,
                "latency_ms": 200.0 + number % 7_919, "total_tokens": 900 + number % 613,
                "validated_answer_text": f"{text} (ref {record[:16]})",
                "prompt_sha256": record + request,
            }  # fmt: skip
            batch.append(SimpleNamespace(**values))
            if number % every == 0:
                keys.append((request, "bench-run"))
        ValidationRow.model_validate(batch[0].__dict__)  # the rest differ only in kind
        hashes = [row_hash(row.__dict__) for row in batch]  # = model_row_hash of the model
        running, own = running.plus(hashes), rows_digest(hashes)
        digest = link_digest("validations", prev, len(batch), own, running)
        seq += 1
        link = Link(seq, prev, digest, len(batch), "bench", running, own).metadata()
        write_deltalake(
            table,
            table_rows(table, ValidationRow, batch),  # type: ignore[arg-type]  (row-shaped)
            mode="append",
            commit_properties=CommitProperties(
                custom_metadata={"groundlock.rows": str(len(batch)), **link}
            ),
        )
        prev = digest
    return keys[:_KEYS]


def _size(root: Path) -> float:
    return sum(path.stat().st_size for path in root.rglob("*.parquet")) / 1e9


def _day_reads(
    store: DeltaAuditStore, day: datetime, last: datetime, out: Path, rows: int, *, verify: bool
) -> None:
    """``records list`` of one day and from the last day on, and ``report`` of one day.

    The report verifies the whole trail, as it always does, when ``verify``; else that
    step is left out here (:func:`_verify_newest` times it on part of the trail).
    """
    since, until = day.date().isoformat(), (day + timedelta(days=1)).date().isoformat()
    with _reads() as seen:
        elapsed, printed = _cli("records", "list", "--store", store.uri, "--since", since,
                                "--until", until)  # fmt: skip
    shown = printed.strip().splitlines()[-2] if "more rows" in printed else printed.strip()
    print(f"  records list --since {since} --until {until}: {elapsed:.2f} s "
          f"({shown.splitlines()[-1]}); files read {_opened(seen)}")  # fmt: skip
    with _reads() as seen:
        elapsed, printed = _cli("records", "list", "--store", store.uri, "--since",
                                last.date().isoformat())  # fmt: skip
    print(f"  records list --since {last.date().isoformat()} (the last day): {elapsed:.2f} s; "
          f"files read {_opened(seen)}")  # fmt: skip
    verify_seconds: list[float] = []
    real = report_module.trail_integrity

    def timed(store: Any) -> str:  # noqa: ANN401
        start = time.perf_counter()
        try:
            return real(store) if verify else "trail integrity: not checked (timed apart)"
        finally:
            verify_seconds.append(time.perf_counter() - start)

    report_module.trail_integrity = timed
    try:
        with _reads() as seen:
            elapsed, printed = _cli("report", "--store", store.uri, "--since", since, "--until",
                                    until, "--out", str(out))  # fmt: skip
    finally:
        report_module.trail_integrity = real
    (verified,) = verify_seconds
    checked = (
        f" + verify of the whole trail {verified:.2f} s ({verified / rows * 1e6:.1f} s per "
        "million rows)"
        if verify
        else " (its whole-trail verify left out: timed apart)"
    )
    print(f"  report --since {since} --until {until}: {elapsed:.2f} s = reads and page "
          f"{elapsed - verified:.2f} s{checked}; files read (validations, feedback) "
          f"{_opened(seen)}")  # fmt: skip
    for line in printed.splitlines()[:2]:
        print(f"    {line}")


def _verify_newest(store: DeltaAuditStore, rows: int, wanted: int, commit_rows: int) -> None:
    """``records verify --since V`` over the newest ``wanted`` rows: its time per million."""
    table = DeltaTable(store.table_uri(ValidationRow))
    since = max(0, table.version() - wanted // commit_rows + 1)
    start = time.perf_counter()
    report = verify_table(Path(store.table_uri(ValidationRow)), "validations", since=since)
    elapsed = time.perf_counter() - start
    if report.findings:
        raise SystemExit(report.findings[0].line())
    per_million = elapsed / report.rows * 1e6
    whole = per_million * rows / 1e6
    print(f"  records verify --since {since} (the newest {report.rows:,} rows read back): "
          f"{elapsed:.0f} s = {per_million:.0f} s per million rows; the whole trail, which "
          f"every report verifies, would take about {whole:,.0f} s")  # fmt: skip


def trail_at_scale(
    root: Path, rows: int, *, days: int = 30, commit_rows: int = 20_000, by_day: bool = True,
    verify_rows: int = 1_000_000,
) -> None:  # fmt: skip
    """Section 4: reads of a day, verify and compaction on a trail of ``rows`` rows.

    A trail of more than ``verify_rows`` rows is verified only over its newest
    ``verify_rows`` (the whole of it would take an hour at 10M); the reports then leave
    their whole-trail verify out, and say so.
    """
    if not by_day:  # as an earlier groundlock created them, before the store opens them
        for row_type in TABLES:
            DeltaTable.create(
                str(root / "trail" / row_type.table), arrow_schema(row_type),
                configuration={"delta.appendOnly": "true"},
            )  # fmt: skip
    store = DeltaAuditStore(root / "trail", flush_rows=10**9, flush_interval_seconds=3600)
    problem = store.problem()  # creates the tables (by day) as the store does
    if problem:
        raise SystemExit(problem)
    policy = load_policy()
    validation, query = audit_rows(_verdicts(1)[0], {}, version="bench", policy=policy)
    start = time.perf_counter()
    keys = _build_trail(store, validation, rows, days, commit_rows)
    built = time.perf_counter() - start
    table = DeltaTable(store.table_uri(ValidationRow))
    layout = "by UTC day" if by_day else "unpartitioned (an earlier groundlock's)"
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"trail at scale: {rows:,} validation rows over {days} days, {layout}, chained, "
          f"in commits of {commit_rows:,} (load average before: {load}; 2 cores here)")  # fmt: skip
    print(f"  built in {built:.0f} s ({rows / built:,.0f} rows/s): {_size(root):.2f} GB, "
          f"{len(table.file_uris()):,} data files, {table.version()} versions")  # fmt: skip
    day = _TRAIL_START + timedelta(days=days // 2)
    last = _TRAIL_START + timedelta(days=days - 1)
    whole = rows <= verify_rows
    _day_reads(store, day, last, root / "report.html", rows, verify=whole)
    if not whole:
        _verify_newest(store, rows, verify_rows, commit_rows)
    with _reads() as seen:
        start = time.perf_counter()
        found = store.executions(keys)
        elapsed = time.perf_counter() - start
    print(f"  executions of {len(keys):,} keys: {elapsed:.2f} s, {len(found):,} found; "
          f"files read {_opened(seen)}")  # fmt: skip
    for number in range(5_000):
        request = f"new-{number}"
        store.record(
            validation.model_copy(update={"request_id": request, "record_id": f"v{number}"}),
            query.model_copy(update={"request_id": request, "record_id": f"q{number}"}),
        )
    start = time.perf_counter()
    store.flush(strict=True)  # its key lookups read the whole request_id column
    print(f"  one commit of 5,000 requests through the store (key lookups, link, append): "
          f"{time.perf_counter() - start:.2f} s")  # fmt: skip
    store.close()
    start = time.perf_counter()
    compacted = store.compact()["validations"]
    elapsed = time.perf_counter() - start
    print(f"  compact: {elapsed:.0f} s, {compacted['numFilesRemoved']:,} files into "
          f"{compacted['numFilesAdded']:,} ({compacted['partitionsOptimized']:,} partition(s), "
          f"a commit each); now {_size(root):.2f} GB on disk before a vacuum")  # fmt: skip
    print("  after compaction (a verify also reads back what each compaction commit moved):")
    _day_reads(store, day, last, root / "report.html", rows + 10_000, verify=whole)


def main() -> None:
    """Print the measurements of the sections asked for."""
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
        choices=[1, 2, 3, 4],
        help="run only this section (repeat it; default 1, 2 and 3: section 4 takes an hour)",
    )
    parser.add_argument("--trail-rows", type=int, default=10_000_000, metavar="N")
    parser.add_argument("--trail-days", type=int, default=30, metavar="D")
    parser.add_argument("--commit-rows", type=int, default=20_000, metavar="C")
    parser.add_argument("--trail-layout", choices=["day", "unpartitioned"], default="day")
    parser.add_argument(
        "--verify-rows", type=int, default=1_000_000, metavar="V",
        help="section 4 verifies the whole trail up to V rows, else only its newest V",
    )  # fmt: skip
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
    if 4 in sections:
        with tempfile.TemporaryDirectory() as directory:  # deleted afterwards: GBs at 10M
            trail_at_scale(
                Path(directory), args.trail_rows, days=args.trail_days,
                commit_rows=args.commit_rows, by_day=args.trail_layout == "day",
                verify_rows=args.verify_rows,
            )  # fmt: skip


if __name__ == "__main__":
    main()
