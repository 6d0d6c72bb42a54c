"""A serving process in miniature: answers bundles through a chain with an audit store.

``python -m tests.stores.writer_process ROOT PREFIX COUNT [FLUSH_ROWS]`` answers COUNT
requests ``PREFIX-0`` ... one after another and prints each request_id, flushed, once
``invoke`` has returned it: those are the requests whose callers got an answer. Used by the
crash, concurrency and compaction tests, which kill or race several of these. An object
store's settings come from the environment (``AWS_*``, ``GROUNDLOCK_SPOOL_DIR``), as a
deployment passes them. On a clean exit it writes ``conflicts-retried N`` to stderr: how
many of its commits lost a race to another writer's and were tried again.
"""

from __future__ import annotations

import logging
import sys

from groundlock import GenerationStatus, grounded_answer_chain
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle

CONFLICT_PREFIX = "audit commit conflict"
"""How :mod:`groundlock.stores.delta` logs (at DEBUG) a commit it retries after a conflict."""


class ConflictCounter(logging.Handler):
    """Counts the store's retried commit conflicts."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith(CONFLICT_PREFIX):
            self.count += 1


def main() -> None:
    """Answer the requests; exit 3 if any was not OK (the caller checks the rows)."""
    root, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    flush_rows = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    conflicts = ConflictCounter()
    audit_log = logging.getLogger("groundlock.audit")
    audit_log.addHandler(conflicts)
    audit_log.setLevel(logging.DEBUG)
    store = DeltaAuditStore(root, flush_rows=flush_rows, flush_interval_seconds=0.05)
    chain = grounded_answer_chain(store=store)
    failed = 0
    for number in range(count):
        request_id = f"{prefix}-{number}"
        response = chain.invoke(make_bundle(request_id=request_id, run_id="run-1"))
        if response.status is not GenerationStatus.OK:
            failed += 1
            continue
        sys.stdout.write(request_id + "\n")
        sys.stdout.flush()
    store.close()
    sys.stderr.write(f"conflicts-retried {conflicts.count}\n")
    sys.exit(3 if failed else 0)


if __name__ == "__main__":
    main()
