"""A backfill on Spark: answer stored bundles into a Delta trail, then re-judge the answers.

    python examples/spark_backfill.py        # needs the spark extra and Java 17+

1. 200 stored bundles (the hydraulic-pump bundle of examples/data under 200 request ids)
   are answered by ``groundlock.spark.answer`` on a local Spark with two cores, with the
   offline model; every request is recorded in a Delta audit trail, batch by batch.
2. The same job is run again with the same run id, as a retried job would be: every
   request is read back from the trail, none is answered or recorded twice.
3. The answers, plus one altered to a wrong value, are re-judged with no model under
   R2_POLICY_V1 and R2_POLICY_V2 (``groundlock.spark.judge``), and the verdicts the newer
   firewall would change are printed.

On a cluster the same calls run in a Databricks job or ``spark-submit``: the session is the
cluster's, the trail and the bundles live in object storage (see the README, "Scaling out").
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from groundlock import DeltaAuditStore
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.spark import ChainSpec, answer, judge

BUNDLE = json.loads((Path(__file__).parent / "data" / "hydraulic_pump_bundle.json").read_text())


def main() -> None:
    """Run the backfill, its re-run and the re-judgement on a local Spark."""
    # The workers must run this interpreter (the one groundlock is installed in).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("groundlock-backfill")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        trail = str(Path(tmp) / "audit")
        stored = [
            (json.dumps({**BUNDLE, "request_id": f"pump-{i:03d}", "run_id": None}),)
            for i in range(200)
        ]
        bundles = spark.createDataFrame(stored, "bundle string").repartition(4)
        spec = ChainSpec(store=trail, max_concurrency=4)

        responses = answer(bundles, spec, run_id="backfill-2026-11").collect()
        counts: dict[str, int] = {}
        for response in responses:
            counts[response.status] = counts.get(response.status, 0) + 1
        print(f"answered: {counts}")
        again = answer(bundles, spec, run_id="backfill-2026-11")
        resumed = sum(1 for row in again.collect() if row.resumed)
        print(f"re-run: {resumed} of 200 read back from the trail")
        print(f"trail: {len(DeltaAuditStore(trail).select(ValidationRow))} validation rows")

        sample = min(responses, key=lambda row: row.request_id)
        wrong = sample.answer.replace("500", "600")
        judged_rows = [
            (stored[0][0], sample.answer),
            (json.dumps({**BUNDLE, "request_id": "pump-altered"}), wrong),
        ]
        frame = spark.createDataFrame(judged_rows, "bundle string, answer string")
        old = {r.request_id: r for r in judge(frame, "R2_POLICY_V1").collect()}
        new = {r.request_id: r for r in judge(frame, "R2_POLICY_V2").collect()}
        for request_id, verdict in sorted(new.items(), key=lambda item: str(item[0])):
            before = old[request_id]
            change = (
                "unchanged"
                if before.validation_status == verdict.validation_status
                else f"{before.validation_status} -> {verdict.validation_status}"
            )
            print(f"{request_id}: {change} {verdict.failure_reason or ''}".rstrip())
    spark.stop()


if __name__ == "__main__":
    main()
