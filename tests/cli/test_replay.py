"""``groundlock replay`` and ``records show --archive``, on real Delta tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import write_deltalake

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.cli.replay import replay_row
from groundlock.contracts.audit_rows import EvidenceRow
from groundlock.policies.loader import load_policy
from groundlock.runnables import AssembleEvidence
from groundlock.stores import DeltaAuditStore
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.arrow import to_arrow
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

SEAL = "Replace the seal every 500 hours."
UNSUPPORTED = "Replace the seal every 600 hours. [C0]"
"""Passed by R2_POLICY_V1's firewall, refused by V2's (UNSUPPORTED_VALUE)."""


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Replay cross-checks against $GROUNDLOCK_STORE when set (``serve`` sets it in-process):
    # these tests name the store when they mean one.
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _pruned_bundle() -> dict[str, object]:
    """A bundle whose prompt PB4 prunes by one entry under R2_POLICY_V1."""
    rows = [
        make_row(i, chunk_text=f"Section {i} says the pump housing must be inspected. " * 30)
        for i in range(6)
    ]
    return make_bundle(rows, request_id="pruned", user_question="pump " * 200)


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("replay")
    store = DeltaAuditStore(root / "audit")
    archive = EvidenceArchive(root / "evidence")
    v1 = grounded_answer_chain(store=store, archive=archive, policy="R2_POLICY_V1")
    for number in range(3):
        v1.invoke(make_bundle(request_id=f"ok-{number}"))
    v1.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    pruned = v1.invoke(_pruned_bundle())
    assert pruned.status.value == "OK"
    seal = make_bundle([make_row(0, chunk_text=SEAL)], request_id="value")
    grounded_answer_chain(
        store=store, archive=archive, policy="R2_POLICY_V1",
        model=ScriptedChatModel(text=UNSUPPORTED),
    ).invoke(seal)  # fmt: skip
    grounded_answer_chain(
        store=store, archive=archive, policy="R2_POLICY_V2",
        model=ScriptedChatModel(text=UNSUPPORTED),
    ).invoke({**seal, "request_id": "rejected"})  # fmt: skip
    # Admitted by the lexical policy's 0.33 floor, below R2_POLICY_V2's 0.76.
    lexical = grounded_answer_chain(store=store, archive=archive, policy="LEXICAL_POLICY_V1")
    low = [make_row(0, chunk_text=SEAL, similarity=0.5)]
    assert (
        lexical.invoke(
            make_bundle(low, request_id="lexical", user_question="When is the seal replaced?")
        ).status.value
        == "OK"
    )
    store.close()
    return str(root / "audit"), str(root / "evidence")


def test_the_pruned_request_was_pruned(archived: tuple[str, str]) -> None:
    (row,) = EvidenceArchive(archived[1]).select("request_id = 'pruned'")
    bundle = json.loads(row.answer_bundle_json)
    assert len(bundle["selected_evidence"]) == 5
    assert bundle["metrics"]["drop_counts"]["DROP_PROMPT_BUDGET"] == 1


def test_replay_reproduces_every_archived_prompt_sha256(archived: tuple[str, str]) -> None:
    rows = EvidenceArchive(archived[1]).select()
    assert len(rows) == 8
    built = [row for row in rows if row.prompt_sha256 is not None]
    assert {row.request_id for row in built} >= {"ok-0", "ok-1", "ok-2", "pruned", "value"}
    # Every request R2 read keeps its input, so replay runs R2 again.
    assert all(row.retrieval_bundle_json is not None for row in rows)
    for row in rows:
        replayed = replay_row(row)
        assert replayed.sha256_reproduced, row.request_id
        assert replayed.again == replayed.archived, row.request_id


def test_replay_command_proves_the_sha256_and_the_verdicts(
    archived: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "replay", "--archive", archived[1])
    assert code == 0, out
    assert "8 request(s) replayed; 7 prompt sha256 reproduced, 0 mismatched" in out
    assert "8 verdict(s) reproduced" in out
    assert "MISMATCH" not in out
    assert "NOT cross-checked against the audit trail" in out
    # Pruned, refused, rejected and lexical requests: each agrees with its trail rows.
    code, out, _ = _run(capsys, "replay", "--archive", archived[1], "--store", archived[0])
    assert code == 0, out
    assert "cross-checked against the audit trail: 8 request(s), 0 disagreement(s)" in out


def test_replay_with_a_policy_reports_the_verdicts_it_would_change(
    archived: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "replay", "--archive", archived[1], "--policy", "R2_POLICY_V2")
    assert code == 0, out
    assert "policy impact of R2_POLICY_V2:" in out
    changed = [line.split() for line in out.splitlines() if line.startswith(("value", "lexical"))]
    # The firewall's change, and R2's: V2's 0.76 floor admits none of the lexical evidence.
    assert changed == [
        ["value", "OK", "FAILED/UNSUPPORTED_VALUE"],
        ["lexical", "OK", "NO_EVIDENCE/TOP_SIMILARITY_BELOW_GATE"],
    ]
    assert "2 of 8 verdict(s) would change" in out
    # And back: V1 would let the answer V2 refused through.
    rows = EvidenceArchive(archived[1]).select("request_id = 'rejected'")
    replayed = replay_row(rows[0], load_policy("R2_POLICY_V1"))
    assert (replayed.again, replayed.other) == (("FAILED", "UNSUPPORTED_VALUE"), ("OK", None))


def test_replay_finds_a_prompt_that_does_not_reproduce(
    archived: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (row,) = EvidenceArchive(archived[1]).select("request_id = 'ok-0'")
    assert not replay_row(row.model_copy(update={"prompt_sha256": "0" * 64})).sha256_reproduced


def test_replay_needs_an_archive(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_ARCHIVE", raising=False)
    code, _, err = _run(capsys, "replay")
    assert code == 2
    assert "no archive" in err


def test_show_quotes_the_rejected_sentence_and_the_rule(
    archived: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, archive = archived
    code, out, _ = _run(
        capsys, "records", "show", "rejected", "--store", store, "--archive", archive
    )
    assert code == 0
    (finding,) = json.loads(out)["rejected_sentences"]
    assert finding["rule"] == "unsupported_value"
    assert finding["reason"] == "UNSUPPORTED_VALUE"
    assert finding["sentence"] == 1
    assert finding["text"] == UNSUPPORTED


def test_show_without_an_archive_says_the_text_is_not_archived(
    archived: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_ARCHIVE", raising=False)
    code, out, _ = _run(capsys, "records", "show", "rejected", "--store", archived[0])
    assert code == 0
    (finding,) = json.loads(out)["rejected_sentences"]
    assert finding["text"] is None
    assert finding["note"] == "the sentence text is not archived"
    assert UNSUPPORTED not in out  # the trail never quotes the refused sentence
    code, out, _ = _run(capsys, "records", "show", "ok-0", "--store", archived[0])
    assert "rejected_sentences" not in json.loads(out)


def test_a_row_archived_before_the_retrieval_column_replays_from_its_evidence(
    archived: tuple[str, str], tmp_path: Path
) -> None:
    rows = EvidenceArchive(archived[1]).select()
    old = to_arrow(EvidenceRow, rows).drop_columns(["retrieval_bundle_json"])
    write_deltalake(str(tmp_path / "old"), old)
    again = EvidenceArchive(tmp_path / "old").select()
    assert [row.retrieval_bundle_json for row in again] == [None] * len(rows)
    for row in again:
        replayed = replay_row(row)
        assert replayed.sha256_reproduced, row.request_id
        assert replayed.again == replayed.archived, row.request_id
    # And the old table takes new rows with the column (schema merge on append).
    EvidenceArchive(tmp_path / "old").record(rows[0])
    newest = EvidenceArchive(tmp_path / "old").select()
    assert sum(row.retrieval_bundle_json is not None for row in newest) == 1


def test_a_policy_that_is_not_built_in_is_found_with_policy_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    handbook = Path(__file__).parents[2] / "examples" / "handbook"
    archive = EvidenceArchive(tmp_path / "evidence")
    store = DeltaAuditStore(tmp_path / "audit")
    chain = grounded_answer_chain(
        store=store, archive=archive, policy=load_policy(handbook / "HANDBOOK_POLICY_V1.json")
    )
    low = [make_row(0, chunk_text=SEAL, similarity=0.5)]
    assert (
        chain.invoke(
            make_bundle(low, request_id="hb", user_question="When is the seal replaced?")
        ).status.value
        == "OK"
    )
    store.close()
    code, out, _ = _run(capsys, "replay", "--archive", str(archive.uri))
    assert code == 1
    assert "CANNOT REPLAY hb: policy HANDBOOK_POLICY_V1 is not built in" in out
    code, out, _ = _run(
        capsys, "replay", "--archive", str(archive.uri), "--policy-dir", str(handbook)
    )
    assert code == 0, out
    assert "1 request(s) replayed; 1 prompt sha256 reproduced, 0 mismatched" in out


def test_r2_keeps_its_input_for_the_archive_and_out_of_the_state_dump() -> None:
    stage = AssembleEvidence(policy=load_policy("R2_POLICY_V2"))
    state = stage.invoke(make_bundle(request_id="kept"))
    assert state.retrieval is not None
    assert state.retrieval.request_id == "kept"
    assert "retrieval" not in state.model_dump()
    assert "results" not in state.model_dump_json()
    refused = stage.invoke({"request_id": "bad"})
    assert refused.status.value == "FAILED"
    assert refused.retrieval is None
