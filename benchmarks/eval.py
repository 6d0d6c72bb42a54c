"""Evaluation throughput: answers per second of ``run_eval`` with the offline model.

    python benchmarks/eval.py [--repeat N]

The handbook documents are indexed into Delta tables in a temporary folder; the gold set
``examples/handbook/gold.jsonl`` (12 items), repeated ``--repeat`` times (default 20, so
240 answers), is answered through a ``RetrievalFront`` over the ``DeltaVectorStore`` with
the offline ``ExtractiveChatModel`` under ``R2_POLICY_V4_LEXICAL``, scored, and appended to a
Delta evaluation log in one commit. Printed, for one run: answers per second of the whole
``run_eval`` (retrieval, R2 to R6, scoring and the Delta write), the same without the
write, and the median per-item latency. The cost is dominated by the Delta retrieval scan,
not the scorer.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from groundlock import RetrievalFront, grounded_answer_chain
from groundlock.lakehouse import (
    DeltaVectorStore,
    EvalItem,
    LexicalEmbeddings,
    index_documents,
    lexical_policy,
    run_eval,
)
from groundlock.lakehouse.evaluation import load_dataset

HANDBOOK = Path(__file__).parents[1] / "examples" / "handbook"


def main() -> None:
    """Index the handbook, evaluate the repeated gold set twice, print the throughput."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="copies of the gold set")
    args = parser.parse_args()
    gold = load_dataset(HANDBOOK / "gold.jsonl")
    items = [
        EvalItem.model_validate({**item.model_dump(), "id": f"{item.id}-{n}"})
        for n in range(args.repeat)
        for item in gold
    ]
    with tempfile.TemporaryDirectory() as root:
        index_documents(HANDBOOK / "docs", f"{root}/index", LexicalEmbeddings())
        store = DeltaVectorStore(f"{root}/index", LexicalEmbeddings())
        front = RetrievalFront.over_index(store, top_k=6)
        chain = grounded_answer_chain(front=front, policy=lexical_policy())
        run_eval(gold[:2], chain, run_id="warm-up")  # first-call caches (policy, tokenizer)
        started = time.perf_counter()
        rows = run_eval(items, chain, run_id="bench", table_uri=f"{root}/eval_log")
        with_write = time.perf_counter() - started
        started = time.perf_counter()
        run_eval(items, chain, run_id="bench-2")
        without_write = time.perf_counter() - started
    median = statistics.median(row.latency_ms for row in rows)
    print(f"eval throughput, {len(items)} answers (offline extractive model, Delta retrieval):")
    print(f"  with the Delta write:    {len(items) / with_write:8.1f} answers/s")
    print(f"  without the write:       {len(items) / without_write:8.1f} answers/s")
    print(f"  median item latency:     {median:8.2f} ms")


if __name__ == "__main__":
    main()
