"""A serving process in miniature: answers bundles through a chain with an audit store.

``python -m tests.stores.writer_process ROOT PREFIX COUNT [FLUSH_ROWS]`` answers COUNT
requests ``PREFIX-0`` ... one after another and prints each request_id, flushed, once
``invoke`` has returned it: those are the requests whose callers got an answer. Used by the
crash, concurrency and compaction tests, which kill or race several of these.
"""

from __future__ import annotations

import sys

from groundlock import GenerationStatus, grounded_answer_chain
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle


def main() -> None:
    """Answer the requests; exit 3 if any was not OK (the caller checks the rows)."""
    root, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    flush_rows = int(sys.argv[4]) if len(sys.argv) > 4 else 5
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
    sys.exit(3 if failed else 0)


if __name__ == "__main__":
    main()
