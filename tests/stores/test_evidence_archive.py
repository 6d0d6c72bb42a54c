"""The evidence archive: opt-in, a Delta table of its own, and never served or logged."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from groundlock import grounded_answer_chain
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.contracts.enums import GenerationStatus
from groundlock.stores import DeltaAuditStore, MemoryAuditSink
from groundlock.stores.archive import EvidenceArchive
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

CANARY = "CANARY-7f3a9c"
SEAL = "Replace the seal every 500 hours."


def _seal_bundle(request_id: str) -> dict[str, object]:
    return make_bundle([make_row(0, chunk_text=SEAL)], request_id=request_id)


def test_the_archive_is_off_by_default(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    grounded_answer_chain(store=store).invoke(make_bundle())
    store.close()
    tables = sorted(p.name for p in (tmp_path / "audit").iterdir() if p.name != "_spool")
    assert tables == ["feedback", "queries", "validations"]
    assert not any(p.name == "evidence" for p in tmp_path.rglob("*"))
    step = grounded_answer_chain(store=MemoryAuditSink()).steps[-2]
    assert step.archive is None  # type: ignore[attr-defined]


def test_an_archive_needs_a_store(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a store"):
        grounded_answer_chain(archive=tmp_path / "evidence")


def test_each_request_is_archived_in_its_own_table(tmp_path: Path) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    archive = EvidenceArchive(tmp_path / "elsewhere" / "evidence")
    chain = grounded_answer_chain(store=store, archive=archive)
    chain.invoke(make_bundle(request_id="a"))
    chain.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    store.close()
    rows = {row.request_id: row for row in archive.select()}
    assert set(rows) == {"a", "refused"}
    validations = {v.request_id: v for v in store.select(ValidationRow)}
    assert rows["a"].prompt_sha256 == validations["a"].prompt_sha256 is not None
    assert rows["a"].status == "OK"
    assert json.loads(rows["a"].prompt_messages_json or "")[0][0] == "system"
    assert rows["refused"].prompt_sha256 is None
    assert rows["refused"].status == "NO_EVIDENCE"
    assert "evidence" not in {p.name for p in (tmp_path / "audit").iterdir()}


def test_archived_text_never_reaches_the_response_or_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    archive = EvidenceArchive(tmp_path / "evidence")
    model = ScriptedChatModel(text=f"Replace the seal every 600 hours {CANARY}. [C0]")
    chain = grounded_answer_chain(
        store=DeltaAuditStore(tmp_path / "audit"), archive=archive, model=model
    )
    response = chain.invoke(_seal_bundle("canary"))
    assert response.status is GenerationStatus.FAILED
    assert CANARY not in response.model_dump_json()
    assert any(r.name == "groundlock.request" for r in caplog.records)  # logs were captured
    for record in caplog.records:
        assert CANARY not in record.getMessage()
    assert CANARY not in caplog.text
    (row,) = archive.select()
    assert CANARY in row.raw_model_text  # archived, exactly as received


def test_an_archive_that_cannot_be_written_fails_the_request_closed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    sink = MemoryAuditSink()
    chain = grounded_answer_chain(store=sink, archive=EvidenceArchive(blocker / "evidence"))
    response = chain.invoke(make_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.answer == ""
    assert [v.failure_reason for v in sink.validations] == ["AUDIT_WRITE_FAILED"]
