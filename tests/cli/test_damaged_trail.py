"""The audit commands on a damaged trail (issue 27.8): bad rows shown, missing files named.

A row that breaks its model (a negative or NaN latency, a timestamp past 9999) is read,
shown and flagged, never fatal; a data file gone from disk stops a read with one line that
names the table and the file, and exit 1, never ``failed (Exception)``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock.cli import main
from groundlock.contracts.audit_rows import FeedbackRow
from groundlock.stores import DeltaAuditStore
from tests.cli.tampering import build_trail, edit, remove_a_data_file

FAR_FUTURE_MICROSECONDS = 2**62
"""About the year 148,000: an int64 timestamp Python's datetime cannot hold."""


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damaged")
    build_trail(root)
    DeltaAuditStore(root / "audit").add_feedback("ok-0", 4)
    return root


@pytest.fixture
def copy(original: Path, tmp_path: Path) -> Path:
    shutil.copytree(original, tmp_path / "copy", ignore=shutil.ignore_patterns("_spool"))
    return tmp_path / "copy"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _bad_latencies(copy: Path) -> None:
    validations = copy / "audit" / "validations"
    edit(validations, "request_id = 'ok-0'", latency_ms=-5.0)
    edit(validations, "request_id = 'ok-1'", latency_ms=float("nan"))


def test_list_shows_and_flags_a_negative_and_a_nan_latency(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_latencies(copy)
    code, out, err = _run(capsys, "records", "list", "--store", str(copy / "audit"))
    assert code == 0, err
    lines = {line.split()[2]: line for line in out.splitlines()[1:6]}
    assert lines["ok-0"].endswith("-5.0!")
    assert lines["ok-1"].endswith("nan!")
    assert not lines["value"].endswith("!")
    assert "! the validations table holds a row that breaks its model" in out
    assert "request ok-0, run run-1): latency_ms: Input should be greater than or equal to 0" in out
    assert "request ok-1, run run-1): latency_ms: Input should be a finite number" in out
    assert "5 row(s), 2 breaking the row model (marked !)" in out


def test_list_json_gives_a_bad_row_as_read_with_its_problems(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_latencies(copy)
    code, out, _ = _run(capsys, "records", "list", "--store", str(copy / "audit"), "--json")
    assert code == 0
    rows = {row["request_id"]: row for row in map(json.loads, out.splitlines())}  # strict JSON
    assert rows["ok-0"]["latency_ms"] == -5.0
    assert rows["ok-1"]["latency_ms"] == "NaN"
    assert rows["ok-1"]["problems"] == ["latency_ms: Input should be a finite number"]
    assert "problems" not in rows["value"]


def test_show_prints_a_bad_row_with_its_problems(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_latencies(copy)
    code, out, _ = _run(capsys, "records", "show", "ok-0", "--store", str(copy / "audit"))
    assert code == 0
    (validation,) = json.loads(out)["validations"]
    assert validation["latency_ms"] == -5.0
    assert validation["problems"] == ["latency_ms: Input should be greater than or equal to 0"]
    assert len(json.loads(out)["feedback"]) == 1


def test_feedback_finds_a_request_whose_row_is_bad(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_latencies(copy)
    code, out, _ = _run(capsys, "feedback", "ok-1", "--rating", "2", "--store", str(copy / "audit"))
    assert code == 0
    assert "recorded for ok-1" in out


def test_report_lists_the_rows_it_could_not_read(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_latencies(copy)
    page = copy / "report.html"
    code, out, err = _run(capsys, "report", "--store", str(copy / "audit"), "--out", str(page))
    assert code == 0, err
    assert f"report of 3 request(s) written to {page}" in out
    assert "2 row(s) could not be read (they break the row model)" in out
    html = page.read_text(encoding="utf-8")
    section = html.split("<h2 id='rows-not-read'>", 1)[1].split("<h2", 1)[0]
    assert "<td class='key'>ok-0</td>" in section
    assert "latency_ms: Input should be greater than or equal to 0" in section
    assert "<td class='key'>ok-1</td>" in section
    assert "latency_ms: Input should be a finite number" in section


def test_a_timestamp_python_cannot_hold_is_flagged_not_fatal(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    validations = copy / "audit" / "validations"
    DeltaTable(str(validations)).alter.set_table_properties({"delta.appendOnly": "false"})
    far = f"arrow_cast({FAR_FUTURE_MICROSECONDS}, 'Timestamp(Microsecond, Some(\"UTC\"))')"
    DeltaTable(str(validations)).update(
        updates={"timestamp_utc": far}, predicate="request_id = 'value'"
    )
    DeltaTable(str(validations)).alter.set_table_properties({"delta.appendOnly": "true"})
    code, out, err = _run(capsys, "records", "list", "--store", str(copy / "audit"))
    assert code == 0, err
    assert f"{FAR_FUTURE_MICROSECONDS} microseconds since 1970!" in out
    assert "request value, run run-1): timestamp_utc: outside the years 1 to 9999" in out


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    assert "failed (Exception)" not in err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ("records", "list"),
        ("records", "show", "ok-0"),
        ("report", "--out", "{root}/report.html"),
        ("replay", "--archive", "{root}/evidence"),
    ],
    ids=["list", "show", "report", "replay"],
)
def test_a_deleted_data_file_is_named_with_its_table_in_one_line(
    copy: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    name = remove_a_data_file(copy / "audit" / "validations")
    command = [part.format(root=copy) for part in argv]
    code, _, err = _run(capsys, *command, "--store", str(copy / "audit"))
    assert code == 1
    line = _one_line(err)
    assert "the validations table cannot" in line
    assert f"its data file {name} is missing" in line
    assert str(copy) not in line  # a file name, never a path or URI


def test_a_deleted_archive_file_is_named_in_one_line(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = remove_a_data_file(copy / "evidence")
    code, _, err = _run(capsys, "replay", "--archive", str(copy / "evidence"))
    assert code == 1
    line = _one_line(err)
    assert f"the evidence archive cannot be read: its data file {name} is missing" in line
    assert str(copy) not in line


def test_a_truncated_data_file_is_named_unreadable(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = copy / "audit" / "queries"
    first = Path(DeltaTable(str(table)).file_uris()[0])
    first.write_bytes(first.read_bytes()[:100])
    code, _, err = _run(capsys, "records", "show", "ok-0", "--store", str(copy / "audit"))
    assert code == 1
    assert f"the queries table cannot be read: its data file {first.name} is unreadable" in (
        _one_line(err)
    )


def test_feedback_rows_that_break_their_model_are_listed_by_the_report(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(copy / "audit" / FeedbackRow.table, "request_id = 'ok-0'", rating=9)
    page = copy / "report.html"
    code, out, _ = _run(capsys, "report", "--store", str(copy / "audit"), "--out", str(page))
    assert code == 0
    assert "1 row(s) could not be read" in out
    section = page.read_text(encoding="utf-8").split("<h2 id='rows-not-read'>", 1)[1]
    assert "<td class='id'>feedback</td>" in section
    assert "rating: Input should be less than or equal to 5" in section


def test_replay_reports_an_archived_row_that_breaks_its_model_and_replays_the_rest(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)
    edit(copy / "evidence", "request_id = 'ok-1'", policy_version="")
    code, out, _ = _run(capsys, "replay", "--archive", str(copy / "evidence"))
    assert code == 1
    assert "CANNOT REPLAY ok-1: the evidence table holds a row that breaks its model" in out
    assert "policy_version: String should have at least 1 character" in out
    assert "4 request(s) replayed; 3 prompt sha256 reproduced, 0 mismatched" in out
