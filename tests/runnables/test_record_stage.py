"""The audit step against its seam: any ``AuditSink``, durable or not, failing or not."""

from __future__ import annotations

import pytest

from groundlock import (
    GenerationStatus,
    MemoryAuditSink,
    ReasonCode,
    RecordValidation,
    grounded_answer_chain,
)
from groundlock.stores import AuditSink, DeltaAuditStore
from tests.builders import make_bundle


def test_any_sink_records_both_rows_of_each_request() -> None:
    sink = MemoryAuditSink()
    chain = grounded_answer_chain(store=sink)
    ok = chain.invoke(make_bundle(request_id="kept-1"))
    bad = chain.invoke({"request_id": "kept-2"})
    assert (ok.status, bad.status) == (GenerationStatus.OK, GenerationStatus.FAILED)
    assert [r.request_id for r in sink.validations] == ["kept-1", "kept-2"]
    assert [r.request_id for r in sink.queries] == ["kept-1", "kept-2"]
    assert sink.validations[0].outcome_sha256 == sink.queries[0].outcome_sha256


def test_a_sink_that_cannot_record_fails_the_request_closed() -> None:
    sink = MemoryAuditSink()
    sink.fail = True
    response = grounded_answer_chain(store=sink).invoke(make_bundle(request_id="lost"))
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.AUDIT_WRITE_FAILED
    assert response.answer == ""
    assert sink.validations == []


def test_the_delta_store_is_a_sink_and_other_objects_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(DeltaAuditStore(tmp_path / "audit"), AuditSink)
    with pytest.raises(ValueError, match="store must be an AuditSink"):
        RecordValidation(store=object())
