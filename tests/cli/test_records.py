"""``groundlock records`` and ``feedback``: every exit code, run as a user would.

Most tests call :func:`groundlock.cli.main` in-process against a real store (``store_uri``,
from this folder's ``conftest.py``); the exit hygiene test (reliability notes T22) runs the
installed command 100 times in subprocesses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from groundlock.cli import main
from groundlock.stores import DeltaAuditStore, FeedbackRow, ValidationRow


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_filters_by_status_reason_and_policy(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--json")
    assert code == 0
    assert len(out.splitlines()) == 8
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--status", "FAILED",
                        "--json")  # fmt: skip
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == ["rejected"]
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--failure-reason",
                        "INVALID_CITATION_REFERENCE")  # fmt: skip
    assert "rejected" in out
    assert "1 row(s)" in out
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--policy-version",
                        "R9_POLICY", "--json")  # fmt: skip
    assert (code, out) == (0, "")


def test_list_filters_by_time_range_and_limit(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    _, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--since", future, "--json")
    assert out == ""
    _, out, err = _run(capsys, "records", "list", "--store", store_uri, "--until", future,
                       "--limit", "3", "--json")  # fmt: skip
    assert len(out.splitlines()) == 3
    # A cut listing says so, and how to see more (on stderr under --json: stdout is rows).
    assert "only the newest 3 are shown" in err
    assert "--limit N" in err
    _, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--limit", "3")
    assert out.splitlines()[-2:] == [
        "3 row(s)",
        "more rows match: only the newest 3 are shown; see more with --limit N, or fewer "
        "with --since/--until/--status/--failure-reason",
    ]
    _, out, err = _run(capsys, "records", "list", "--store", store_uri, "--limit", "8")
    assert out.splitlines()[-1] == "8 row(s)"  # all of them: nothing said
    assert err == ""


def test_show_prints_the_whole_record(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "records", "show", "rejected", "--store", store_uri)
    record = json.loads(out)
    assert code == 0
    assert [row["failure_reason"] for row in record["validations"]] == [
        "INVALID_CITATION_REFERENCE"
    ]
    assert record["validations"][0]["validated_answer_text"] is None
    assert record["queries"][0]["retrieved_chunk_ids"] == ["chunk-000", "chunk-001", "chunk-002"]
    code, _, err = _run(capsys, "records", "show", "never-seen", "--store", store_uri)
    assert code == 1
    assert "no audit record" in err


def test_feedback_is_recorded_and_checked(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "feedback", "ok-1", "--rating", "4", "--comment", "clear",
                        "--store", store_uri)  # fmt: skip
    assert code == 0
    assert "recorded for ok-1" in out
    rows = DeltaAuditStore(store_uri).select(FeedbackRow, "request_id = 'ok-1'")
    assert [(row.rating, row.comment) for row in rows] == [(4, "clear")]
    assert _run(capsys, "feedback", "ok-1", "--rating", "6", "--store", store_uri)[0] == 2
    assert _run(capsys, "feedback", "ok-1", "--rating", "x", "--store", store_uri)[0] == 2
    assert _run(capsys, "feedback", "unknown", "--rating", "3", "--store", store_uri)[0] == 1


def test_vacuum_refuses_short_retention_and_compact_keeps_rows(
    store_uri: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = _run(capsys, "records", "vacuum", "--store", store_uri,
                        "--retention-hours", "2")  # fmt: skip
    assert code == 2  # a usage error, like every other (it was 1)
    assert "below the configured minimum of 168 h" in err
    code, _, err = _run(capsys, "records", "vacuum", "--store", store_uri,
                        "--retention-hours", "0", "--min-retention-hours", "0")  # fmt: skip
    assert code == 2  # the minimum is configuration, not an option of the vacuum itself
    monkeypatch.setenv("GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS", "400")
    code, _, err = _run(capsys, "records", "vacuum", "--store", store_uri,
                        "--retention-hours", "336")  # fmt: skip
    assert code == 2
    assert "minimum of 400 h" in err
    monkeypatch.delenv("GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS")
    code, out, _ = _run(capsys, "records", "vacuum", "--store", store_uri)
    assert code == 0
    assert "would delete" in out
    before = sorted(r.record_id for r in DeltaAuditStore(store_uri).select(ValidationRow))
    assert _run(capsys, "records", "compact", "--store", store_uri)[0] == 0
    after = sorted(r.record_id for r in DeltaAuditStore(store_uri).select(ValidationRow))
    assert after == before


def test_usage_errors_exit_2(
    store_uri: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)
    assert _run(capsys, "records", "list")[0] == 2  # no store
    since = ("records", "list", "--store", store_uri, "--since", "yesterday")
    assert _run(capsys, *since)[0] == 2
    assert _run(capsys, "records", "frobnicate")[0] == 2
    assert _run(capsys, "--help")[0] == 0
    assert _run(capsys, "records", "list", "--store", store_uri, "--limit", "0")[0] == 2
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    code = _run(capsys, "report", "--store", store_uri, "--since", future, "--until",
                "2020-01-01", "--out", "x.html")[0]  # fmt: skip
    assert code == 2


def test_a_missing_store_exits_1_without_creating_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "records", "list", "--store", str(tmp_path / "none"))
    assert code == 1
    assert "does not exist" in err
    assert not (tmp_path / "none").exists()


@pytest.mark.slow
def test_the_cli_exits_cleanly_100_times(store_uri: str) -> None:
    # T22: each run reads the validations table and commits one feedback row; delta-rs
    # must not abort the interpreter at exit ("terminate called without an active exception").
    command = [str(Path(sys.executable).with_name("groundlock")), "feedback", "ok-2",
               "--rating", "3", "--store", store_uri]  # fmt: skip

    def run(_: Any) -> int:
        return subprocess.run(command, capture_output=True, check=False, timeout=120).returncode

    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(run, range(100)))
    assert codes == [0] * 100
    rows = DeltaAuditStore(store_uri).select(FeedbackRow, "request_id = 'ok-2'")
    assert len(rows) == 100


@pytest.mark.parametrize(
    "option",
    [
        ("--until", "9999-12-31T23:00-05:00"),  # past the last datetime once in UTC
        ("--since", "0001-01-01T00:30+01:00"),  # before the first one
        ("--since", "0999-06-01"),
        ("--limit", "99999999999999999999"),
        ("--limit", "-3"),
    ],
)
def test_odd_list_options_are_usage_errors(
    store_uri: str, capsys: pytest.CaptureFixture[str], option: tuple[str, str]
) -> None:
    code, _, err = _run(capsys, "records", "list", "--store", store_uri, *option)
    assert code == 2
    assert "Traceback" not in err


def test_list_refuses_a_range_that_ends_before_it_starts(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run(capsys, "records", "list", "--store", store_uri, "--since", "2026-02-01",
                "--until", "2026-01-01")[0]  # fmt: skip
    assert code == 2
