"""``groundlock report`` and the HTML it writes: self-contained, escaped, every row drawn.

The command runs in-process against a real store (``store_uri``, from this folder's
``conftest.py``); the page itself is checked through :func:`render_report` directly.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from groundlock.cli import main
from groundlock.cli.report import render_report
from tests.stores.rows import validation_row


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_report_is_self_contained_html_with_charts(
    store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "report.html"
    code, out, _ = _run(capsys, "report", "--store", store_uri, "--out", str(out_file))
    page = out_file.read_text(encoding="utf-8")
    assert code == 0
    assert "report of 8 request(s)" in out
    assert "Policy R2_POLICY_V2" in page
    assert page.count("<svg") >= 3  # status over time, latency, tokens
    assert "Failure reasons over time" in page
    assert re.search(r"<td>All</td><td>1</td>", page)  # the one rejected answer
    assert "INVALID_CITATION_REFERENCE" in page
    assert re.search(r"<td>Requests</td>|<th>Requests</th>", page)
    assert not re.search(r"<script|<link|src=|href=|@import|url\(", page, re.IGNORECASE)


def test_report_escapes_what_the_table_holds(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    row = validation_row(policy_version="<script>alert(1)</script>")
    page = render_report([row], [], since=now - timedelta(hours=1), until=now + timedelta(hours=1))
    assert "<script>" not in page
    assert "&lt;script&gt;" in page


def test_a_long_report_range_widens_its_bars_instead_of_dropping_rows() -> None:
    since = datetime(2026, 1, 1, tzinfo=UTC)
    until = datetime(2027, 12, 31, tzinfo=UTC)
    late = validation_row(
        timestamp_utc=since + timedelta(days=500), status="FAILED", validation_status="FAILED",
        generation_status="FAILED", failure_reason="EMPTY_ANSWER",
    )  # fmt: skip
    page = render_report([late], [], since=since, until=until)
    bars = re.findall(r"<title>([^<]*) FAILED: 1</title>", page)
    assert len(bars) == 1
    assert "Requests per week" in page
    assert page.count("<rect x=") <= 400 + 30  # status bars, plus one histogram
