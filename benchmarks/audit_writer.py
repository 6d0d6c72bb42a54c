"""One writer process of ``benchmarks/audit.py``'s concurrent-writers section.

    python benchmarks/audit_writer.py URI SPOOL PREFIX K FLUSH_ROWS TEMPLATES

Imports the store and nothing of the chain (LangChain would cost each of 16 processes
seconds before it could start): the row pairs come ready-made from TEMPLATES (one
``SpoolEntry`` JSON a line, which the parent built from real verdicts), K distinct ones by
request id. The storage options come from the environment, as a deployment passes them.
It opens the trail, prints ``ready``, waits for a line on stdin, spools the K requests with
several threads while its flusher commits every FLUSH_ROWS, closes the store (the last
commit), and prints one JSON line: the seconds it spooled for, the commits it retried after
a conflict (the store logs each at DEBUG), and the segments it could not commit (0 unless
its commits kept losing to other writers' past the store's retries).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from pathlib import Path

from groundlock.stores import DeltaAuditStore
from groundlock.stores.delta import SpoolEntry
from groundlock.stores.spool import segments_of

THREADS = 8
"""Threads spooling in each writer: they share fsyncs (group commit), as a server's do."""


class _Conflicts(logging.Handler):
    """Counts the commits the store retried after a conflict."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("audit commit conflict"):
            self.count += 1


def _entries(templates: Path, prefix: str, count: int) -> list[SpoolEntry]:
    lines = templates.read_text(encoding="utf-8").splitlines()
    made = [SpoolEntry.model_validate_json(line) for line in lines]
    entries = []
    for number in range(count):
        template = made[number % len(made)]
        request_id = f"{prefix}{number}"
        entries.append(
            SpoolEntry(
                validation=template.validation.model_copy(
                    update={"request_id": request_id, "record_id": f"{request_id}-v"}
                ),
                query=template.query.model_copy(
                    update={"request_id": request_id, "record_id": f"{request_id}-q"}
                ),
            )
        )
    return entries


def main() -> None:
    """Run one writer (see the module docstring)."""
    uri, spool, prefix, count, flush_rows, templates = sys.argv[1:7]
    conflicts = _Conflicts()
    audit_log = logging.getLogger("groundlock.audit")
    audit_log.addHandler(conflicts)
    audit_log.setLevel(logging.DEBUG)
    entries = _entries(Path(templates), prefix, int(count))
    store = DeltaAuditStore(uri, spool_dir=spool, flush_rows=int(flush_rows))
    problem = store.problem()
    if problem:
        raise SystemExit(f"writer {prefix}: {problem}")
    print("ready", flush=True)
    sys.stdin.readline()  # the start signal
    start = time.perf_counter()

    def spool_part(part: int) -> None:
        for entry in entries[part::THREADS]:
            store.record(entry.validation, entry.query)

    workers = [threading.Thread(target=spool_part, args=(part,)) for part in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    spooled = time.perf_counter() - start
    writer = store._state.spool.writer_id if store._state.spool else ""
    store.close()
    left = len(segments_of(Path(spool), writer))
    report = {"conflicts": conflicts.count, "left": left, "spooled": spooled}
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
