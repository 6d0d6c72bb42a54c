"""What a new user met in the first hour (issue 28, part): help that reads as prose, usage
errors that say what is missing, ranges and archives refused (or not) as a user expects,
plurals, and one line where LangChain printed a page. Through the real command."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.stores import DeltaAuditStore
from groundlock.stores.archive import EvidenceArchive
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel


@pytest.fixture(autouse=True)
def _no_locations_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GROUNDLOCK_STORE", "GROUNDLOCK_ARCHIVE", "GROUNDLOCK_EVAL_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")  # (argparse wraps to $COLUMNS - 2)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- report, records -------------------------------------------------------------------------


def test_a_report_since_a_future_day_is_empty_not_refused(
    store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    future = (datetime.now(UTC) + timedelta(days=400)).date().isoformat()
    out_file = tmp_path / "e.html"
    code, out, err = _run(capsys, "report", "--store", store_uri, "--since", future,
                          "--out", str(out_file))  # fmt: skip
    assert (code, err) == (0, "")
    assert out == f"report of 0 request(s) written to {out_file}\n"
    assert "No request was recorded in this range." in out_file.read_text(encoding="utf-8")
    # As records list reads the same range.
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--since", future)
    assert (code, out.splitlines()[-1]) == (0, "0 row(s)")
    # Both ends given, the wrong way round, is still a usage error.
    code, _, err = _run(capsys, "report", "--store", store_uri, "--since", future,
                        "--until", "2020-01-01", "--out", str(out_file))  # fmt: skip
    assert (code, err) == (2, "groundlock: error: --since must be before --until\n")


def test_records_show_refuses_an_archive_that_does_not_exist(
    store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["records", "show", "rejected", "--store", store_uri]
    code, out, err = _run(capsys, *argv, "--archive", str(tmp_path / "nosuch-archive"))
    assert (code, out) == (1, "")
    assert err == "groundlock: the evidence archive does not exist\n"
    # (as replay says it)
    code, _, err = _run(capsys, "replay", "--archive", str(tmp_path / "nosuch-archive"))
    assert (code, err) == (1, "groundlock: the evidence archive does not exist\n")


def test_a_cut_of_one_says_is(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--limit", "1")
    assert code == 0
    assert "more rows match: only the newest 1 is shown;" in out
    code, _, err = _run(capsys, "records", "list", "--store", store_uri, "--limit", "2",
                        "--json")  # fmt: skip
    assert "only the newest 2 are shown;" in err


# -- replay ----------------------------------------------------------------------------------


def test_replay_says_what_the_requests_without_a_prompt_were(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    archive = EvidenceArchive(tmp_path / "evidence")
    chain = grounded_answer_chain(store=store, archive=archive)
    for number in range(2):
        chain.invoke(make_bundle(request_id=f"ok-{number}"))
    chain.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    rejected = grounded_answer_chain(
        store=store, archive=archive, model=ScriptedChatModel(text="Fine [C7].")
    )
    rejected.invoke(make_bundle(request_id="rejected"))
    store.close()
    argv = ["replay", "--archive", str(tmp_path / "evidence"), "--store", str(tmp_path / "audit")]
    code, out, _ = _run(capsys, *argv)
    assert code == 0, out
    assert (
        "4 request(s) replayed; 3 prompt sha256 reproduced, 0 mismatched, 1 had no prompt to "
        "prove (refused at R2 or R3, before any model call); 4 verdict(s) reproduced\n"
    ) in out
    code, out, _ = _run(capsys, *argv, "--json")
    assert json.loads(out)["without_prompt"] == 1
