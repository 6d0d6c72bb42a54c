"""``groundlock replay --store``: the archive cross-checked against the audit trail (issue 27.7).

Each test tampers with a copy of one real trail and archive (:mod:`tests.cli.tampering`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.cli.replay import replay_row
from groundlock.contracts.audit_rows import QueryRow, ValidationRow
from groundlock.stores import DeltaAuditStore
from groundlock.stores.archive import EvidenceArchive
from tests.builders import make_bundle, make_row
from tests.cli.tampering import PASSED_BY_V1, SEAL, build_trail, edit
from tests.fakes.chat import ScriptedChatModel


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trail")
    build_trail(root)
    return root


@pytest.fixture
def copy(original: Path, tmp_path: Path) -> Path:
    """A copy of the trail and archive of its own, to tamper with."""
    shutil.copytree(original, tmp_path / "copy", ignore=shutil.ignore_patterns("_spool"))
    return tmp_path / "copy"


def _run(capsys: pytest.CaptureFixture[str], copy: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["replay", "--archive", str(copy / "evidence"), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _checked(capsys: pytest.CaptureFixture[str], copy: Path) -> tuple[int, str]:
    code, out, _ = _run(capsys, copy, "--store", str(copy / "audit"))
    return code, out


def test_an_untouched_archive_agrees_with_its_trail(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _checked(capsys, copy)
    assert code == 0, out
    assert "5 request(s) replayed; 4 prompt sha256 reproduced, 0 mismatched" in out
    assert "cross-checked against the audit trail: 5 request(s), 0 disagreement(s)" in out
    assert "trail integrity: verified (the hash chain of every table holds)" in out


def test_a_trail_that_does_not_verify_is_no_clean_replay(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable, write_deltalake  # noqa: PLC0415

    from groundlock.contracts.audit_rows import QueryRow  # noqa: PLC0415
    from groundlock.stores.layout import table_rows  # noqa: PLC0415
    from tests.stores.rows import query_row  # noqa: PLC0415

    # A row committed around the store: every archived request still agrees with the
    # trail, but the trail itself no longer verifies, so the replay is not clean.
    table = DeltaTable(str(copy / "audit" / "queries"))
    rows = table_rows(table, QueryRow, [query_row(request_id="forged")])
    write_deltalake(table, rows, mode="append")
    code, out = _checked(capsys, copy)
    assert code == 1, out
    assert "0 disagreement(s)" in out
    assert "trail integrity: 1 problem(s) found" in out
    assert "UNLINKED_COMMIT: queries version" in out


def test_a_nulled_prompt_sha256_is_a_mismatch(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)
    edit(copy / "evidence", "request_id = 'ok-0'", prompt_sha256=None)
    (row,) = EvidenceArchive(copy / "evidence").select("request_id = 'ok-0'")
    rebuilt = replay_row(row).rebuilt_sha256
    # The archive's own check no longer takes "none archived" for "none built".
    code, out, _ = _run(capsys, copy)
    assert code == 1
    assert f"sha256 MISMATCH ok-0: archived None, rebuilt {rebuilt}" in out
    code, out = _checked(capsys, copy)
    assert code == 1
    assert "sha256 MISMATCH ok-0" in out


def test_evidence_edited_with_its_sha256_recomputed_disagrees_with_the_trail(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)
    (row,) = EvidenceArchive(copy / "evidence").select("request_id = 'value'")
    assert row.retrieval_bundle_json is not None
    edited = {
        "retrieval_bundle_json": row.retrieval_bundle_json.replace("500 hours", "700 hours"),
        "answer_bundle_json": row.answer_bundle_json.replace("500 hours", "700 hours"),
    }
    forged_sha = replay_row(row.model_copy(update=edited)).rebuilt_sha256
    assert forged_sha not in {None, row.prompt_sha256}
    edit(copy / "evidence", "request_id = 'value'", **edited, prompt_sha256=forged_sha)
    # Consistent with itself: the archive alone cannot tell, and says it was not checked.
    code, out, _ = _run(capsys, copy)
    assert code == 0, out
    assert "NOT cross-checked against the audit trail" in out
    code, out = _checked(capsys, copy)
    assert code == 1
    assert (
        f'TRAIL DISAGREES value run run-1 validations.prompt_sha256: archived "{forged_sha}", '
        f'trail "{row.prompt_sha256}"'
    ) in out


def test_a_replaced_model_text_that_still_passes_disagrees_with_the_trail(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(copy / "evidence", "request_id = 'value'", raw_model_text=PASSED_BY_V1.replace("6", "7"))
    code, out = _checked(capsys, copy)
    assert code == 1
    assert "verdict NOT REPRODUCED" not in out  # R5 passes the replaced text too
    disagreeing = [line.split() for line in out.splitlines() if line.startswith("TRAIL DISAGREES")]
    fields = {words[5].rstrip(":") for words in disagreeing}
    assert fields == {
        "validations.outcome_sha256",
        "validations.validated_answer_text",
        "queries.outcome_sha256",
        "queries.response_text",  # the query log's copy of the answer, shown as its sha256
    }
    (response_line,) = [line for line in out.splitlines() if "queries.response_text" in line]
    assert response_line.count('"sha256:') == 2


def test_a_forged_archive_row_is_one_the_trail_does_not_know(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = EvidenceArchive(copy / "evidence")
    (row,) = archive.select("request_id = 'ok-0'")
    forged = {
        name: value.replace('"ok-0"', '"forged"')
        for name, value in row.model_dump().items()
        if isinstance(value, str) and '"ok-0"' in value
    }
    archive.record(row.model_copy(update={**forged, "request_id": "forged"}))
    code, out = _checked(capsys, copy)
    assert code == 1
    assert "NOT IN THE TRAIL forged run run-1: archived, but the trail holds no row of it" in out
    assert "6 request(s) replayed; 5 prompt sha256 reproduced, 0 mismatched" in out


def test_an_archived_row_whose_ids_are_not_its_evidences_cannot_be_replayed(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(copy / "evidence", "request_id = 'ok-0'", request_id="someone-else")
    code, out = _checked(capsys, copy)
    assert code == 1
    assert "CANNOT REPLAY someone-else: the archived row's request or run id" in out


def test_a_validation_row_edited_from_failed_to_ok_is_named(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(copy / "audit" / "validations", "request_id = 'rejected'", status="OK",
          failure_reason=None)  # fmt: skip
    code, out = _checked(capsys, copy)
    assert code == 1
    status = 'TRAIL DISAGREES rejected run run-1 validations.status: archived "FAILED", trail "OK"'
    assert status in out
    assert (
        "TRAIL DISAGREES rejected run run-1 validations.failure_reason: "
        'archived "INVALID_CITATION_REFERENCE", trail null'
    ) in out
    assert "cross-checked against the audit trail: 5 request(s), 2 disagreement(s)" in out


def test_edited_cited_chunks_in_the_query_log_are_named(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (query,) = DeltaAuditStore(copy / "audit").select(QueryRow, "request_id = 'ok-1'")
    assert query.cited_chunk_ids
    edit(copy / "audit" / "queries", "request_id = 'ok-1'", cited_chunk_ids=["chunk-000"])
    code, out = _checked(capsys, copy)
    assert code == 1
    assert (
        "TRAIL DISAGREES ok-1 run run-1 queries.cited_chunk_ids: "
        f'archived {json.dumps(list(query.cited_chunk_ids))}, trail ["chunk-000"]'
    ) in out


def test_json_names_each_disagreement(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(copy / "audit" / "validations", "request_id = 'rejected'", status="OK")
    code, out, _ = _run(capsys, copy, "--store", str(copy / "audit"), "--json")
    assert code == 1
    result = json.loads(out)
    assert result["ok"] is False
    assert result["cross_checked"] is True
    assert result["disagreements"] == [
        {"request_id": "rejected", "run_id": "run-1", "field": "validations.status",
         "archived": "FAILED", "trail": "OK"}
    ]  # fmt: skip


def test_a_trail_row_that_breaks_its_model_is_reported_not_fatal(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(copy / "audit" / "validations", "request_id = 'ok-1'", latency_ms=-5.0)
    code, out = _checked(capsys, copy)
    assert code == 1
    assert "TRAIL DISAGREES ok-1 run run-1 validations.latency_ms" in out
    assert "greater than or equal to 0" in out
    assert "5 request(s) replayed" in out


def test_without_a_store_nothing_is_cross_checked_and_the_result_says_so(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)
    code, out, _ = _run(capsys, copy)
    assert code == 0
    assert "NOT cross-checked against the audit trail" in out
    code, out, _ = _run(capsys, copy, "--json")
    assert json.loads(out)["cross_checked"] is False
    code, _, err = _run(capsys, copy, "--require-store")
    assert code == 2
    assert "no store to cross-check against" in err
    # $GROUNDLOCK_STORE is a store given.
    monkeypatch.setenv("GROUNDLOCK_STORE", str(copy / "audit"))
    code, out, _ = _run(capsys, copy, "--require-store")
    assert code == 0, out
    assert "cross-checked against the audit trail: 5 request(s)" in out


def test_a_store_without_tables_is_an_error_not_an_empty_trail(
    copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, copy, "--store", str(tmp_path / "nowhere"))
    assert code == 1
    assert "the validations table does not exist" in err
    assert not (tmp_path / "nowhere").exists()


def test_a_re_executed_request_is_checked_against_its_own_execution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    archive = EvidenceArchive(tmp_path / "evidence")
    for text in ("Fine [C7].", PASSED_BY_V1):  # the same key, two outcomes
        grounded_answer_chain(
            store=store, archive=archive, policy="R2_POLICY_V1",
            model=ScriptedChatModel(text=text),
        ).invoke(make_bundle([make_row(0, chunk_text=SEAL)], request_id="again"))  # fmt: skip
        store.flush()
    store.close()
    runs = [row.run_id for row in store.select(ValidationRow, "request_id = 'again'")]
    assert len(runs) == 2
    assert runs[0] == "run-1"
    assert runs[1] is not None
    assert runs[1].startswith("run-1~")
    code, out, _ = _run(capsys, tmp_path, "--store", str(tmp_path / "audit"))
    assert code == 0, out
    assert "cross-checked against the audit trail: 2 request(s), 0 disagreement(s)" in out
