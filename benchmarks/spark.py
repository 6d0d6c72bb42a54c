"""The Spark runner's throughput: bundles/s on ``local[1]`` and ``local[2]``, and in one process.

    python benchmarks/spark.py [--bundles N] [--rows R] [--partitions P] [--store]

The same bundles (``--rows`` evidence rows each, the offline extractive model) are answered
three ways in one run: ``groundlock.spark.answer`` on a local Spark with one core, then with
two, and ``chain.batch`` in this process. Each Spark figure is the median of ``--repeat``
timed actions after a warm-up action (the warm-up starts the Python workers and builds
their chains: a fixed cost a long job pays once). Target: ``local[2]`` at least 1.6x
``local[1]`` on a machine with two free cores. With ``--store``, every request is also
recorded in a Delta trail (a fresh one per run), committed batch by batch.

Needs the ``spark`` extra and Java 17+. Medians and ratios come from one run; the machine is
noisy, so compare figures within a run, not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from groundlock import grounded_answer_chain  # noqa: E402
from groundlock.spark import ChainSpec, answer  # noqa: E402

SENTENCES = [
    "Replace the case drain filter of the hydraulic pump every {n} operating hours.",
    "Torque the filter bowl to {n} Nm and lock-wire it to the housing boss.",
    "Check the reservoir sight gauge; the level must be in the green band at {n} C.",
    "Record the differential pressure on the inspection card, item {n}.",
]


def _bundles(count: int, rows: int) -> list[str]:
    bundles = []
    for i in range(count):
        results = [
            {
                "chunk_id": f"c{i}-{r}",
                "rank": r,
                "similarity": 0.95 - r * 0.01,
                "knowledge_id": f"K{r}",
                "knowledge_type_effective": "MAINTENANCE_PROCEDURE",
                "chunk_text": " ".join(
                    s.format(n=(i + r * 7 + k) % 900 + 10) for k, s in enumerate(SENTENCES)
                ),
            }
            for r in range(rows)
        ]
        bundles.append(
            json.dumps(
                {
                    "request_id": f"bench-{i}",
                    "user_question": "How often is the case drain filter replaced?",
                    "retrieval_status": "SUCCESS",
                    "index_version": "idx-bench",
                    "embedding_model": "emb-bench",
                    "top_k": rows,
                    "results": results,
                }
            )
        )
    return bundles


def _spark_rate(
    master: str, bundles: list[str], partitions: int, repeat: int, store: str | None
) -> float:
    from pyspark.sql import SparkSession  # noqa: PLC0415

    session = (
        SparkSession.builder.master(master)
        .appName(f"groundlock-bench-{master}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        frame = session.createDataFrame([(b,) for b in bundles], "bundle string")
        frame = frame.repartition(partitions).cache()
        frame.count()
        spec = ChainSpec(store=store, max_concurrency=1)
        answer(frame, spec, run_id="warm-up").count()  # workers started, chains built
        times = []
        for round_ in range(repeat):
            started = time.perf_counter()
            answered = answer(frame, spec, run_id=f"round-{round_}").count()
            times.append(time.perf_counter() - started)
            if answered != len(bundles):
                raise RuntimeError(f"{answered} responses for {len(bundles)} bundles")
        return len(bundles) / statistics.median(times)
    finally:
        session.stop()


def _local_rate(bundles: list[str], repeat: int) -> float:
    chain = grounded_answer_chain()
    inputs: list[Any] = [json.loads(b) for b in bundles]
    chain.batch(inputs[:50])
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        chain.batch(inputs, config={"max_concurrency": 1})
        times.append(time.perf_counter() - started)
    return len(bundles) / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=int, default=3000)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store", action="store_true", help="record every request in Delta")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    bundles = _bundles(args.bundles, args.rows)
    print(f"{args.bundles} bundles of {args.rows} rows, {args.partitions} partitions, "
          f"median of {args.repeat}, {os.cpu_count()} CPUs")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        rates = {}
        for master in ("local[1]", "local[2]"):
            # ("local[1]" is no folder name delta-rs can open: groundlock refuses it.)
            store = str(Path(tmp) / master.strip("]").replace("[", "-")) if args.store else None
            rates[master] = _spark_rate(master, bundles, args.partitions, args.repeat, store)
            print(f"  spark {master:<9} {rates[master]:8.1f} bundles/s")
        single = _local_rate(bundles, args.repeat)
        print(f"  one process     {single:8.1f} bundles/s (chain.batch)")
        ratio = rates["local[2]"] / rates["local[1]"]
        print(f"local[2] / local[1]: {ratio:.2f}x (target at least 1.6x)")
        print(f"local[2] / one process: {rates['local[2]'] / single:.2f}x")


if __name__ == "__main__":
    main()
