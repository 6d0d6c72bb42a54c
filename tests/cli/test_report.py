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
from groundlock.contracts.audit_rows import ValidationRow
from tests.stores.rows import validation_row

_SINCE = datetime(2026, 3, 1, tzinfo=UTC)
_UNTIL = datetime(2026, 3, 8, tzinfo=UTC)


def _failed(reason: str, **fields: object) -> ValidationRow:
    return validation_row(
        status="FAILED", validation_status="FAILED", generation_status="FAILED",
        failure_reason=reason, **fields,
    )  # fmt: skip


def _hand_built() -> list[ValidationRow]:
    """Seven requests over a week: the counts below are worked out from this list by hand.

    policy     ruleset  model  index  status       reason
    P1         fw1      m-a    i1     OK
    P1         fw1      m-a    i1     OK
    P1         fw2      m-b    i1     OK
    P2         fw2      m-b    i2     FAILED       UNSUPPORTED_VALUE (flag first, enforce next)
    P2         fw2      m-b    i2     FAILED       UNSUPPORTED_VALUE (no findings)
    P1         None     m-a    None   FAILED       EMPTY_ANSWER
    None       None     None   None   NO_EVIDENCE  INSUFFICIENT_EVIDENCE
    """
    day = timedelta(days=1)
    base = {"policy_version": "P1", "firewall_ruleset": "fw1", "model_name": "m-a"}
    return [
        validation_row(request_id="ok-1", timestamp_utc=_SINCE + day, index_version="i1",
                       **base),
        validation_row(request_id="ok-2", timestamp_utc=_SINCE + 2 * day, index_version="i1",
                       latency_ms=40.0, total_tokens=300, **base),
        validation_row(request_id="ok-3", timestamp_utc=_SINCE + 2 * day, index_version="i1",
                       policy_version="P1", firewall_ruleset="fw2", model_name="m-b"),
        _failed("UNSUPPORTED_VALUE", request_id="bad-2", timestamp_utc=_SINCE + 3 * day,
                policy_version="P2", firewall_ruleset="fw2", model_name="m-b",
                index_version="i2",
                firewall_findings=("R5.entities:UNSUPPORTED_ENTITY:flag:1",
                                   "R5.values:UNSUPPORTED_VALUE:enforce:2")),
        _failed("UNSUPPORTED_VALUE", request_id="bad-1", timestamp_utc=_SINCE + 3 * day,
                policy_version="P2", firewall_ruleset="fw2", model_name="m-b",
                index_version="i2"),
        _failed("EMPTY_ANSWER", request_id="empty", timestamp_utc=_SINCE + 4 * day,
                index_version=None, firewall_ruleset=None, policy_version="P1",
                model_name="m-a"),
        validation_row(request_id="refused", timestamp_utc=_SINCE + 5 * day,
                       status="NO_EVIDENCE", validation_status="NOT_RUN",
                       generation_status="NOT_RUN", failure_reason="INSUFFICIENT_EVIDENCE",
                       policy_version=None, firewall_ruleset=None, model_name=None,
                       index_version=None, attempts=0, total_tokens=None),
    ]  # fmt: skip


def _section(page: str, anchor: str) -> str:
    """The page from the element with ``id=anchor`` to the next heading of its level."""
    start = re.search(rf"<h([23]) id='{re.escape(anchor)}'>", page)
    assert start, anchor
    end = page.find(f"<h{start.group(1)}", start.end())
    return page[start.start() : end if end >= 0 else len(page)]


def _table_rows(table: str) -> list[list[str]]:
    return [
        re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)
    ][1:]


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
    assert "Policy R2_POLICY_V3" in page
    assert page.count("<svg") >= 3  # status over time, latency, tokens
    assert "Failure reasons over time" in page
    assert re.search(r"<td>All</td><td>1</td>", page)  # the one rejected answer
    assert "INVALID_CITATION_REFERENCE" in page
    assert re.search(r"<td>Requests</td>|<th>Requests</th>", page)
    assert not re.search(r"<script|<link|src=|@import|url\(", page, re.IGNORECASE)
    links = re.findall(r"href='([^']*)'", page)
    assert links
    assert all(link.startswith("#") for link in links)  # in-page anchors only
    assert all(f"id='{link[1:]}'" in page for link in links)  # each lands somewhere
    assert "rejected" in _section(page, "failed-requests")  # the failure names its request


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


def test_each_failure_reason_links_to_the_requests_that_failed_with_it() -> None:
    page = render_report(_hand_built(), [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    summary = _section(page, "summary")
    links = {
        reason: anchor for anchor, reason in re.findall(r"<a href='#([^']+)'>([^<]+)<", summary)
    }
    assert set(links) == {"UNSUPPORTED_VALUE", "EMPTY_ANSWER", "INSUFFICIENT_EVIDENCE"}
    counts = re.findall(r">([A-Z_]+)</a></td><td>(\d+)</td>", summary)
    assert counts == [("UNSUPPORTED_VALUE", "2"), ("EMPTY_ANSWER", "1"),
                      ("INSUFFICIENT_EVIDENCE", "1")]  # fmt: skip

    failed = _table_rows(_section(page, links["UNSUPPORTED_VALUE"]))
    assert [row[0] for row in failed] == ["bad-1", "bad-2"]  # by time, then request id
    assert failed[0][1:3] == ["2026-03-04 00:00:00", "UNSUPPORTED_VALUE"]
    assert failed[0][3] == "-"  # no firewall finding: the validator failed it
    rules = re.findall(r"<li>(.*?)</li>", failed[1][3])
    assert rules == [  # the enforced finding of the row's own reason first
        "R5.values (UNSUPPORTED_VALUE, enforce, sentence 2)",
        "R5.entities (UNSUPPORTED_ENTITY, flag, sentence 1)",
    ]
    assert failed[1][4:] == ["P2", "m-b"]
    refused = _table_rows(_section(page, links["INSUFFICIENT_EVIDENCE"]))
    assert refused == [["refused", "2026-03-06 00:00:00", "INSUFFICIENT_EVIDENCE", "-",
                        "(none)", "(none)"]]  # fmt: skip
    assert "<a href='#summary'>" in _section(page, links["EMPTY_ANSWER"])


def test_counts_break_down_by_policy_ruleset_model_and_index_version() -> None:
    page = render_report(_hand_built(), [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)

    def breakdown(field: str) -> list[list[str]]:
        table = re.search(rf"<table class='breakdown {field}'>(.*?)</table>", page)
        assert table, field
        return _table_rows(table.group(0))

    # value, requests, OK, NO_EVIDENCE, FAILED, failed share
    assert breakdown("policy_version") == [
        ["(none)", "1", "0", "1", "0", "0.0 %"],
        ["P1", "4", "3", "0", "1", "25.0 %"],
        ["P2", "2", "0", "0", "2", "100.0 %"],
    ]
    assert breakdown("firewall_ruleset") == [
        ["(none)", "2", "0", "1", "1", "50.0 %"],
        ["fw1", "2", "2", "0", "0", "0.0 %"],
        ["fw2", "3", "1", "0", "2", "66.7 %"],
    ]
    assert breakdown("model_name") == [
        ["(none)", "1", "0", "1", "0", "0.0 %"],
        ["m-a", "3", "2", "0", "1", "33.3 %"],
        ["m-b", "3", "1", "0", "2", "66.7 %"],
    ]
    assert breakdown("index_version") == [
        ["(none)", "2", "0", "1", "1", "50.0 %"],
        ["i1", "3", "3", "0", "0", "0.0 %"],
        ["i2", "2", "0", "0", "2", "100.0 %"],
    ]


def test_every_chart_has_a_title_a_dated_x_axis_and_a_y_axis_with_its_unit() -> None:
    page = render_report(_hand_built(), [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    charts = re.findall(r"<svg.*?</svg>", page, re.DOTALL)
    # three policies (P1, P2, none), each with status over time; P1 and P2 also have latency
    # and tokens; the refusal called no model and counted no token
    assert len(charts) == 7
    units = []
    for chart in charts:
        assert re.search(r"<title>[^<]+</title>", chart)
        assert "class='chart-title'" in chart
        x_axis = re.search(r"<g class='axis x-axis'>(.*?)</g>", chart)
        y_axis = re.search(r"<g class='axis y-axis'>(.*?)</g>", chart)
        assert x_axis
        assert y_axis
        dates = re.findall(r"<text class='tick'[^>]*>([^<]*)</text>", x_axis.group(1))
        assert dates[0] == "2026-03-01"  # daily, UTC, from the range's start...
        assert dates[-1] == "2026-03-08"  # ...to its end
        assert "time (UTC)" in x_axis.group(1)
        assert len(re.findall(r"<text class='tick'", y_axis.group(1))) >= 2
        unit = re.search(r"<text class='unit'[^>]*>([^<]*)</text>", y_axis.group(1))
        assert unit
        units.append(unit.group(1))
    assert sorted(units) == ["ms", "ms", "requests", "requests", "requests", "tokens", "tokens"]


def test_the_y_axis_reaches_the_tallest_bar_with_round_ticks() -> None:
    rows = [validation_row(request_id=f"r{i}", timestamp_utc=_SINCE + timedelta(days=1))
            for i in range(7)]  # fmt: skip
    page = render_report(rows, [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    status = re.findall(r"<svg.*?</svg>", page, re.DOTALL)[0]
    y_axis = re.search(r"<g class='axis y-axis'>(.*?)</g>", status)
    assert y_axis
    ticks = re.findall(r"<text class='tick'[^>]*>([^<]*)</text>", y_axis.group(1))
    assert ticks == ["0", "2", "4", "6", "8"]


def test_the_report_is_deterministic_and_escapes_failure_details() -> None:
    rows = [
        *_hand_built(),
        _failed("<b>REASON</b>", request_id="<i>id</i>", model_name="m&m",
                firewall_findings=("<rule>:<b>REASON</b>:enforce:-",)),
    ]  # fmt: skip
    first = render_report(rows, [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    again = render_report(rows[::-1], [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    assert first == again  # row order in the store changes nothing
    for raw in ("<b>REASON", "<i>", "<rule>"):
        assert raw not in first
    assert "&lt;rule&gt; (&lt;b&gt;REASON&lt;/b&gt;, enforce, whole answer)" in first
    assert "m&amp;m" in first
    ids = re.findall(r"id='([^']*)'", first)
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", anchor) for anchor in ids)
