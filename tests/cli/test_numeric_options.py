"""Numeric options out of range are usage errors, exit 2 (issue 27, item 12)."""

from __future__ import annotations

import pytest

from groundlock.cli import main


@pytest.mark.parametrize(
    "hours",
    [
        str(10**23),  # once an OverflowError in delta-rs: exit 1
        str(2**64 - 1),  # once passed on, and read by delta-rs as a negative retention
        str(2**63),  # once a panic in delta-rs
        "1000001",
        "-1",  # once "below the configured minimum": exit 1
        "12.5",
        "many",
    ],
)
def test_a_retention_out_of_range_is_a_usage_error(
    store_uri: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hours: str,
) -> None:
    monkeypatch.setenv("GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS", "0")
    code = main(["records", "vacuum", "--store", store_uri, "--retention-hours", hours])
    _, err = capsys.readouterr()
    assert code == 2
    assert "usage: groundlock records vacuum" in err
    assert "argument --retention-hours:" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("hours", ["0", "1000000"])
def test_a_retention_in_range_is_taken(
    store_uri: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hours: str,
) -> None:
    monkeypatch.setenv("GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS", "0")
    code = main(["records", "vacuum", "--store", store_uri, "--retention-hours", hours])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "validations: would delete" in out


@pytest.mark.parametrize("rating", [str(10**23), "0", "-1", "6"])
def test_a_rating_out_of_range_is_a_usage_error(
    store_uri: str, capsys: pytest.CaptureFixture[str], rating: str
) -> None:
    code = main(["feedback", "ok-0", "--rating", rating, "--store", store_uri])
    _, err = capsys.readouterr()
    assert code == 2
    assert "rating" in err
