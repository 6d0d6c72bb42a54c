"""Reading a recorded request back from the trail (the runner's resume), without Spark."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from groundlock import DeltaAuditStore
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.providers.extractive import ExtractiveChatModel
from groundlock.spark import ChainSpec
from groundlock.spark.answering import _answer_batches, _key, _resumed_row
from groundlock.stores.sink import AuditUnavailable
from tests.builders import make_bundle, make_row

SEAL = "Replace the seal every 500 hours."


def _bundle(**fields: object) -> dict[str, object]:
    rows = [make_row(0, chunk_text=SEAL), make_row(1, chunk_text="Grease the bearing weekly.")]
    question = "When is the seal replaced?"
    given: dict[str, object] = {"request_id": "r-1", "run_id": "job",
                                "user_question": question, **fields}  # fmt: skip
    return make_bundle(rows, **given)


def test_a_recorded_request_reads_back_as_it_was_answered(tmp_path: Path) -> None:
    worker = ChainSpec(store=str(tmp_path / "audit")).build()
    assert worker.store is not None
    bundle = _bundle()
    response = worker.chain.invoke(bundle)
    worker.store.flush(strict=True)
    key = _key(bundle)
    assert key == ("r-1", "job")
    record = worker.store.executions([key, ("r-2", "job")])
    assert list(record) == [key]  # one record; an unknown key is absent, not an error
    assert len(record[key]) == 1
    row = _resumed_row(worker, bundle, record[key])
    assert row is not None
    assert (row["status"], row["answer"], row["resumed"]) == ("OK", response.answer, True)
    assert json.loads(row["citations"]) == [c.model_dump(mode="json") for c in response.citations]


def test_a_record_that_no_longer_matches_its_evidence_is_answered_again(tmp_path: Path) -> None:
    worker = ChainSpec(store=str(tmp_path / "audit")).build()
    assert worker.store is not None
    worker.chain.invoke(_bundle())
    worker.store.flush(strict=True)
    (record,) = worker.store.executions([("r-1", "job")])[("r-1", "job")]
    # The same request's evidence now under other chunk ids (a re-indexed source): the
    # record's anchors would show other chunks than its caller got.
    assert _resumed_row(worker, _moved(), [record]) is None
    # A record whose cited anchors were altered does not hash to its outcome either.
    altered = record.model_copy(update={"validated_citations": ("C1",)})
    assert _resumed_row(worker, _bundle(), [altered]) is None
    # Of several executions, the first that is this request's is read back.
    row = _resumed_row(worker, _bundle(), [altered, record])
    assert row is not None
    assert row["answer"].startswith(SEAL)


def _moved() -> dict[str, object]:
    """The request of :func:`_bundle`, its evidence re-indexed under another chunk id."""
    return _bundle(results=[make_row(0, chunk_text=SEAL, chunk_id="chunk-new")])


def test_a_store_without_a_trail_yet_holds_no_record(tmp_path: Path) -> None:
    worker = ChainSpec(store=str(tmp_path / "audit")).build()
    assert worker.store is not None
    assert worker.store.executions([("r-1", "job")]) == {}


# -- one Spark task's work, run in this process over Arrow batches ---------------------------


def _task(spec: ChainSpec, bundles: list[dict[str, object]], job: str = "job") -> list[dict]:
    import pyarrow as pa  # noqa: PLC0415  (the spark extra)

    batch = pa.RecordBatch.from_pydict({"bundle": [json.dumps(b) for b in bundles]})
    out = list(_answer_batches(iter([batch]), spec, "bundle", job))
    return [row for part in out for row in part.to_pylist()]


class _Broken(ExtractiveChatModel):
    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("the provider is down")


def _broken() -> ExtractiveChatModel:
    return _Broken()


def test_a_repeated_key_in_a_task_is_refused_not_answered_twice(tmp_path: Path) -> None:
    spec = ChainSpec(store=str(tmp_path / "audit"))
    other = _bundle(user_question="How often is the bearing greased?")
    rows = _task(spec, [_bundle(), other])
    assert [r["status"] for r in rows] == ["OK", "FAILED"]
    assert rows[1]["failure_reason"] == "INPUT_SCHEMA_INVALID"
    assert rows[1]["failure_message"].startswith("request_id: repeated in this job")
    assert rows[1]["request_id"] == "r-1"
    assert len(DeltaAuditStore(tmp_path / "audit").select(ValidationRow)) == 1


def test_a_record_of_another_question_under_the_same_key_is_not_read_back(
    tmp_path: Path,
) -> None:
    spec = ChainSpec(store=str(tmp_path / "audit"))
    first = _task(spec, [_bundle()])
    other = _task(spec, [_bundle(user_question="How often is the bearing greased?")])
    assert first[0]["answer"].startswith(SEAL)
    # The second job's request has the same key but another prompt: answered, not resumed.
    assert other[0]["resumed"] is False
    assert SEAL not in other[0]["answer"]
    again = _task(spec, [_bundle()])
    assert (again[0]["resumed"], again[0]["answer"]) == (True, first[0]["answer"])
    assert again[0]["confidence"] == first[0]["confidence"] == "high"
    assert again[0]["model_used"] == first[0]["model_used"]


def test_a_request_that_failed_for_a_passing_reason_is_answered_again(tmp_path: Path) -> None:
    store = str(tmp_path / "audit")
    failed = _task(ChainSpec(store=store, model=_broken), [_bundle()])
    assert (failed[0]["status"], failed[0]["failure_reason"]) == ("FAILED", "MODEL_ERROR")
    answered = _task(ChainSpec(store=store), [_bundle()])
    assert (answered[0]["status"], answered[0]["resumed"]) == ("OK", False)
    # Both executions are in the trail: the failure, and the answer under a run id of its own.
    recorded = sorted(
        (row.status, row.run_id or "") for row in DeltaAuditStore(store).select(ValidationRow)
    )
    assert recorded[0][0] == "FAILED"
    assert recorded[1][0] == "OK"
    assert recorded[0][1] == "job"
    assert recorded[1][1].startswith("job~")
    # A request refused for its own input is read back, not tried again.
    bad = _bundle(results=[make_row(0, chunk_text=SEAL, similarity=0.1)])
    store2 = str(tmp_path / "audit2")
    assert _task(ChainSpec(store=store2), [bad])[0]["status"] == "NO_EVIDENCE"
    assert _task(ChainSpec(store=store2), [bad])[0]["resumed"] is True


def test_a_trail_that_refuses_rows_fails_the_task(tmp_path: Path) -> None:
    (tmp_path / "audit").write_text("a file where the trail's folder should be")
    with pytest.raises(AuditUnavailable):
        _task(ChainSpec(store=str(tmp_path / "audit")), [_bundle()])


def test_a_replaced_spec_builds_its_own_chain() -> None:
    base = ChainSpec(policy="R2_POLICY_V1")
    changed = dataclasses.replace(base, policy="R2_POLICY_V2")
    assert changed.key != base.key
    # The workers reuse the driver's (Spark pickles the spec with the task).
    assert pickle.loads(pickle.dumps(base)).key == base.key  # noqa: S301  (our own bytes)


def test_a_request_answered_after_a_passing_failure_is_read_back_and_not_paid_again(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "audit")
    assert _task(ChainSpec(store=store, model=_broken), [_bundle()])[0]["status"] == "FAILED"
    answered = _task(ChainSpec(store=store), [_bundle()])[0]
    assert (answered["status"], answered["resumed"]) == ("OK", False)
    # A third run, with a model that would fail if called: the answer is read back from
    # the second execution (under its own run id), and nothing more is recorded.
    third = _task(ChainSpec(store=store, model=_broken), [_bundle()])[0]
    assert (third["status"], third["resumed"], third["answer"]) == ("OK", True, answered["answer"])
    assert third["run_id"] == "job"  # the request's own, as answered, not the trail's derived one
    assert len(DeltaAuditStore(store).select(ValidationRow)) == 2


def test_a_request_whose_evidence_changed_is_read_back_from_the_execution_that_matches(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "audit")
    first = _task(ChainSpec(store=store), [_bundle()])[0]
    moved = _task(ChainSpec(store=store), [_moved()])[0]
    assert (moved["status"], moved["resumed"]) == ("OK", False)
    # Each evidence reads back its own execution: no model is called (it would fail).
    broken = ChainSpec(store=store, model=_broken)
    again_moved = _task(broken, [_moved()])[0]
    assert (again_moved["resumed"], again_moved["answer"]) == (True, moved["answer"])
    assert again_moved["citations"] == moved["citations"] != first["citations"]
    again_first = _task(broken, [_bundle()])[0]
    assert (again_first["resumed"], again_first["run_id"]) == (True, "job")
    assert again_first["citations"] == first["citations"]
    assert len(DeltaAuditStore(store).select(ValidationRow)) == 2


def test_executions_hold_a_key_s_record_then_its_re_executions_and_nothing_else(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "audit")
    _task(ChainSpec(store=store, model=_broken), [_bundle()])
    _task(ChainSpec(store=store), [_bundle()])
    # Other jobs whose run ids merely begin with the job's: not its re-executions.
    _task(ChainSpec(store=store), [_bundle(run_id=None)], job="job~other")
    _task(ChainSpec(store=store), [_bundle(run_id=None)], job="job2")
    _task(ChainSpec(store=store), [_bundle(run_id=None)], job="job~0123456789abcdef")
    trail = DeltaAuditStore(store)
    found = trail.executions([("r-1", "job"), ("r-1", "job~other")])
    assert sorted(found) == [("r-1", "job"), ("r-1", "job~other")]
    record, rerun = found[("r-1", "job")]
    assert (record.run_id, record.failure_reason) == ("job", "MODEL_ERROR")
    assert rerun.run_id == "job~1"  # the store's next number (stores.keys)
    assert rerun.status == "OK"
    assert [row.run_id for row in found[("r-1", "job~other")]] == ["job~other"]
    # Asked for together, a re-execution is its own key's record and still its origin's.
    assert rerun.run_id is not None
    both = trail.executions([("r-1", "job"), ("r-1", rerun.run_id)])
    assert [row.run_id for row in both[("r-1", "job")]] == ["job", rerun.run_id]
    assert [row.run_id for row in both[("r-1", rerun.run_id)]] == [rerun.run_id]


def test_another_job_named_like_a_re_execution_is_not_read_back(tmp_path: Path) -> None:
    store = str(tmp_path / "audit")
    failed = _task(ChainSpec(store=store, model=_broken), [_bundle(run_id=None)], job="nightly")
    assert failed[0]["failure_reason"] == "MODEL_ERROR"
    # A job whose run id has the shape of a re-execution's (its suffix is not its outcome).
    other = _task(ChainSpec(store=store), [_bundle(run_id=None)], job="nightly~0123456789abcdef")
    assert other[0]["status"] == "OK"
    again = _task(ChainSpec(store=store, model=_broken), [_bundle(run_id=None)], job="nightly")
    assert (again[0]["failure_reason"], again[0]["resumed"]) == ("MODEL_ERROR", False)


def test_a_request_refused_before_any_prompt_is_read_back_only_for_the_same_reason(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "audit")
    gap = _bundle(results=[make_row(1, chunk_text=SEAL)])  # ranks must start at 0
    first = _task(ChainSpec(store=store), [gap])[0]
    assert (first["status"], first["failure_reason"]) == ("FAILED", "RANK_INTEGRITY")
    assert _task(ChainSpec(store=store), [gap])[0]["resumed"] is True
    # The same key, now refused for another reason: refused again, not the record's reason.
    twice = make_row(0, chunk_text=SEAL)
    duplicated = _bundle(results=[twice, {**twice, "rank": 1}])
    other = _task(ChainSpec(store=store), [duplicated])[0]
    assert (other["failure_reason"], other["resumed"]) == ("DUPLICATE_CHUNK_ID", False)
