"""``groundlock.spark`` on a local Spark: answers, the trail under a killed task, re-judging."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from groundlock import DeltaAuditStore
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.lakehouse import index_documents
from groundlock.spark import ChainSpec, answer, judge
from tests.builders import make_bundle, make_row
from tests.spark.conftest import BATCH_ROWS
from tests.spark.models import Factory, read_trace

# py4j leaves sockets to the garbage collector; that is Spark's, not a leak of ours.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

SEAL = "Replace the seal every 500 hours."
QUESTION = "When is the seal replaced?"


def _bundles(count: int, prefix: str = "r") -> list[tuple[str]]:
    return [
        (
            json.dumps(
                make_bundle(
                    [make_row(0, chunk_text=SEAL)],
                    request_id=f"{prefix}-{i:04d}",
                    run_id=None,
                    user_question=QUESTION,
                )
            ),
        )
        for i in range(count)
    ]


def _validations(store: Path) -> list[ValidationRow]:
    return DeltaAuditStore(store).select(ValidationRow)


def test_answers_a_few_hundred_bundles_and_records_each_once_though_a_task_is_killed(
    spark: Any, tmp_path: Path
) -> None:
    frame = spark.createDataFrame(_bundles(300), "bundle string").repartition(3)
    marker = tmp_path / "killed"
    spec = ChainSpec(
        store=str(tmp_path / "audit"),
        model=Factory(tmp_path / "trace", kill_after=2 * BATCH_ROWS + 5, marker=str(marker)),
        max_concurrency=1,  # the kill lands after exactly 45 calls
    )
    rows = answer(frame, spec, run_id="backfill-1").collect()
    # A worker died mid-task (at its 46th call), when two of its batches (40 requests) were
    # committed and five more answered but not committed (their rows in its spool). Spark
    # ran the task again in a new worker, which read the 40 back from the trail, and the
    # five too if it had adopted the dead worker's spool by then, and answered the rest.
    assert marker.exists()
    assert int(marker.read_text().split()[1]) == 2 * BATCH_ROWS + 6
    calls = read_trace(tmp_path / "trace")
    assert 300 <= len(calls) <= 300 + 5
    # Every request answered, once, in the output ...
    assert len(rows) == 300
    assert Counter(r.status for r in rows) == {"OK": 300}
    assert len({r.request_id for r in rows}) == 300
    assert {r.run_id for r in rows} == {"backfill-1"}
    assert all(SEAL in r.answer for r in rows)
    resumed = [r for r in rows if r.resumed]
    assert 2 * BATCH_ROWS <= len(resumed) <= 2 * BATCH_ROWS + 5
    assert len(resumed) + len(calls) == 300 + 2 * BATCH_ROWS + 5  # each paid for once
    # ... read back exactly as answered, citations included ...
    fresh = next(r for r in rows if not r.resumed)
    assert {(r.answer, r.citations) for r in resumed} == {(fresh.answer, fresh.citations)}
    assert json.loads(fresh.citations)[0]["knowledge_id"] == "chunk-000"
    # ... and exactly one validations row per request in the trail.
    recorded = _validations(tmp_path / "audit")
    keys = Counter((row.request_id, row.run_id) for row in recorded)
    assert len(recorded) == 300
    assert set(keys.values()) == {1}
    assert {run_id for _, run_id in keys} == {"backfill-1"}


def test_a_rerun_of_the_job_reads_everything_back_and_records_nothing(
    spark: Any, tmp_path: Path
) -> None:
    frame = spark.createDataFrame(_bundles(60), "bundle string").repartition(2)
    spec = ChainSpec(store=str(tmp_path / "audit"), model=Factory(tmp_path / "trace"))
    first = {r.request_id: r for r in answer(frame, spec, run_id="nightly").collect()}
    again = {r.request_id: r for r in answer(frame, spec, run_id="nightly").collect()}
    assert len(read_trace(tmp_path / "trace")) == 60  # no model call the second time
    assert all(r.resumed for r in again.values())
    fields = ("status", "failure_reason", "answer", "citations", "model_used")
    for request_id, row in first.items():
        assert tuple(getattr(again[request_id], f) for f in fields) == tuple(
            getattr(row, f) for f in fields
        )
    assert len(_validations(tmp_path / "audit")) == 60
    # Another run id is another job: answered and recorded again.
    answer(frame, spec, run_id="nightly-2").collect()
    assert len(_validations(tmp_path / "audit")) == 120


def test_a_row_that_is_not_json_is_refused_before_the_chain(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame([*_bundles(3), ("{not json",), (None,)], "bundle string")
    spec = ChainSpec(store=str(tmp_path / "audit"), model=Factory(tmp_path / "trace"))
    rows = answer(frame, spec).collect()
    refused = [r for r in rows if r.status == "FAILED"]
    assert len(rows) == 5
    assert [(r.failure_reason, r.request_id) for r in refused] == [
        ("INPUT_SCHEMA_INVALID", None)
    ] * 2
    assert len(read_trace(tmp_path / "trace")) == 3  # no model call for them
    assert len(_validations(tmp_path / "audit")) == 3  # the store never saw them


def test_model_calls_are_bounded_and_paced_per_worker(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame(_bundles(40), "bundle string").repartition(2)
    trace = tmp_path / "trace"
    spec = ChainSpec(model=Factory(trace, sleep_seconds=0.3), max_concurrency=3)
    assert len(answer(frame, spec).collect()) == 40
    calls = read_trace(trace)
    assert len(calls) == 40
    peak = max(in_flight for *_, in_flight in calls)
    assert 1 < peak <= 3  # concurrent, never more than max_concurrency per process
    paced = tmp_path / "paced"
    spec = ChainSpec(model=Factory(paced), requests_per_second=10.0)
    assert len(answer(frame, spec).collect()) == 40
    starts: dict[int, list[float]] = defaultdict(list)
    for pid, start, _, _ in read_trace(paced):
        starts[pid].append(start)
    for times in starts.values():
        times.sort()
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= 0.09  # 10 per second and process, with no burst


def test_judge_re_judges_stored_answers_under_another_policy(spark: Any) -> None:
    stored = []
    for i, text in enumerate([SEAL + " [C0]", "Replace the seal every 600 hours. [C0]",
                              "Replace the seal often.", SEAL]):  # fmt: skip
        bundle = make_bundle([make_row(0, chunk_text=SEAL)], request_id=f"s-{i}",
                             user_question=QUESTION)  # fmt: skip
        stored.append((json.dumps(bundle), text))
    stored.append(("not json", "x"))
    frame = spark.createDataFrame(stored, "bundle string, answer string")
    old = {r.request_id: r for r in judge(frame, "R2_POLICY_V1").collect()}
    new = {r.request_id: r for r in judge(frame, "R2_POLICY_V2").collect()}

    def verdict(rows: dict[str | None, Any], key: str | None) -> tuple[str, str | None]:
        return rows[key].validation_status, rows[key].failure_reason

    assert verdict(old, "s-0") == verdict(new, "s-0") == ("PASSED", None)
    # The wrong interval passes firewall_v1 and is caught by firewall_v2.
    assert verdict(old, "s-1") == ("PASSED", None)
    assert verdict(new, "s-1") == ("FAILED", "UNSUPPORTED_VALUE")
    assert new["s-1"].firewall_ruleset == "firewall_v2"
    assert [f["rule"] for f in json.loads(new["s-1"].findings)] == ["unsupported_value"]
    assert verdict(new, "s-3") == ("FAILED", "UNCITED_FACTUAL_STATEMENT")
    assert verdict(new, None) == ("FAILED", "INPUT_SCHEMA_INVALID")


def test_questions_are_answered_from_a_delta_index(spark: Any, tmp_path: Path) -> None:
    docs = Path(__file__).parents[2] / "examples" / "handbook" / "docs"
    index_documents(docs, tmp_path / "index")
    frame = spark.createDataFrame(
        [
            ("q1", "What torque do the slew bearing bolts of the crane need?"),
            ("q2", "What colour is the harbour master's cat?"),
        ],
        "request_id string, question string",
    )
    spec = ChainSpec(index=str(tmp_path / "index"), store=str(tmp_path / "audit"))
    rows = {r.request_id: r for r in answer(frame, spec, column="question",
                                            kind="question").collect()}  # fmt: skip
    assert rows["q1"].status == "OK"
    assert "1,250 Nm" in rows["q1"].answer
    assert json.loads(rows["q1"].citations)[0]["knowledge_id"] == "MM-STS2-SLEW-02"
    assert rows["q2"].status == "NO_EVIDENCE"
    assert len(_validations(tmp_path / "audit")) == 2
    # Run again under the same run id: retrieved again, checked against the records, and
    # read back (nothing answered or recorded twice).
    again = {r.request_id: r for r in answer(frame, spec, column="question", kind="question",
                                             run_id=rows["q1"].run_id).collect()}  # fmt: skip
    assert all(r.resumed for r in again.values())
    assert (again["q1"].answer, again["q1"].citations) == (rows["q1"].answer, rows["q1"].citations)
    assert again["q2"].status == "NO_EVIDENCE"
    assert len(_validations(tmp_path / "audit")) == 2


def test_bad_arguments_fail_on_the_driver(spark: Any) -> None:
    frame = spark.createDataFrame([("x",)], "bundle string")
    with pytest.raises(ValueError, match="no column 'missing'"):
        answer(frame, column="missing")
    with pytest.raises(ValueError, match="needs an index"):
        answer(frame, kind="question")
    with pytest.raises(ValueError, match="max_concurrency"):
        ChainSpec(max_concurrency=0)
    with pytest.raises(ValueError, match="requests_per_second"):
        ChainSpec(requests_per_second=0)
    stored = spark.createDataFrame([("{}", "x")], "bundle string, answer string")
    with pytest.raises(ValueError, match="support judge"):
        judge(stored, "R2_POLICY_V2_JUDGED")
