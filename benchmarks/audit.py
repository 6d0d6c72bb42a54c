"""The audit trail's cost on the hot path, and the rows/s its flusher commits.

    python benchmarks/audit.py [--requests N] [--rows N]

1. Added latency per request: ``R5.RecordValidation`` timed on its own (build both rows,
   append them to the fsynced spool; invoked alone, so with its own run plumbing) for N
   distinct verdicts, p50 and p99; and the whole chain with and without a store,
   interleaved, medians. Target (issue 5): under 0.5 ms p50 added. Most of it is the
   disk's fsync, printed beside it: the rest is the CPU cost of building the rows.
2. Committed rows/s: N requests' rows are spooled by 32 threads (sharing fsyncs), then the
   flusher commits them all; rows/s = validation rows committed / commit time. Target: at
   least 20,000 rows/s.

The store is a local directory under a temporary directory (the real fsync of this disk).
Figures come from one run; the machine is noisy, so compare within a run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from chain import FixedChatModel, _bundle

from groundlock import grounded_answer_chain, load_policy
from groundlock.core.audit import audit_rows
from groundlock.runnables.record import RecordValidation
from groundlock.stores import DeltaAuditStore, ValidationRow
from groundlock.stores.spool import segments_of


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


def committed_rows(root: Path, requests: int) -> None:
    store = DeltaAuditStore(root / "commit", flush_rows=10**9, flush_interval_seconds=3600)
    policy = load_policy()
    pairs = [
        audit_rows(v, {}, version="bench", policy=policy) for v in _verdicts(min(requests, 200))
    ]
    rows = [
        (
            validation.model_copy(update={"request_id": f"r{n}", "record_id": f"v{n}"}),
            query.model_copy(update={"request_id": f"r{n}", "record_id": f"q{n}"}),
        )
        for n, (validation, query) in ((n, pairs[n % len(pairs)]) for n in range(requests))
    ]
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


def main() -> None:
    """Print both measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--rows", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        added_latency(Path(directory), args.requests)
        committed_rows(Path(directory), args.rows)


if __name__ == "__main__":
    main()
