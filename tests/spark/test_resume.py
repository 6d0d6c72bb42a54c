"""Reading a recorded request back from the trail (the runner's resume), without Spark."""

from __future__ import annotations

import json
from pathlib import Path

from groundlock.spark import ChainSpec
from groundlock.spark.runner import _key, _resumed_row
from tests.builders import make_bundle, make_row

SEAL = "Replace the seal every 500 hours."


def _bundle(**fields: object) -> dict[str, object]:
    rows = [make_row(0, chunk_text=SEAL), make_row(1, chunk_text="Grease the bearing weekly.")]
    return make_bundle(rows, request_id="r-1", run_id="job", user_question="When is the seal "
                       "replaced?", **fields)  # fmt: skip


def test_a_recorded_request_reads_back_as_it_was_answered(tmp_path: Path) -> None:
    worker = ChainSpec(store=str(tmp_path / "audit")).build()
    assert worker.store is not None
    bundle = _bundle()
    response = worker.chain.invoke(bundle)
    worker.store.flush(strict=True)
    key = _key(bundle)
    assert key == ("r-1", "job")
    record = worker.store.recorded([key, ("r-2", "job")])
    assert list(record) == [key]  # one record; an unknown key is absent, not an error
    row = _resumed_row(worker, bundle, record[key])
    assert row is not None
    assert (row["status"], row["answer"], row["resumed"]) == ("OK", response.answer, True)
    assert json.loads(row["citations"]) == [c.model_dump(mode="json") for c in response.citations]


def test_a_record_that_no_longer_matches_its_evidence_is_answered_again(tmp_path: Path) -> None:
    worker = ChainSpec(store=str(tmp_path / "audit")).build()
    assert worker.store is not None
    worker.chain.invoke(_bundle())
    worker.store.flush(strict=True)
    record = worker.store.recorded([("r-1", "job")])[("r-1", "job")]
    # The same request's evidence now under other chunk ids (a re-indexed source): the
    # record's anchors would show other chunks than its caller got.
    moved = _bundle(results=[make_row(0, chunk_text=SEAL, chunk_id="chunk-new")])
    assert _resumed_row(worker, moved, record) is None
    # A record whose cited anchors were altered does not hash to its outcome either.
    altered = record.model_copy(update={"validated_citations": ("C1",)})
    assert _resumed_row(worker, _bundle(), altered) is None


def test_a_store_without_a_trail_yet_holds_no_record(tmp_path: Path) -> None:
    worker = ChainSpec(store=str(tmp_path / "audit")).build()
    assert worker.store is not None
    assert worker.store.recorded([("r-1", "job")]) == {}
