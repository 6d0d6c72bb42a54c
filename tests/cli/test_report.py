"""``groundlock report`` and the HTML it writes: self-contained, escaped, every row drawn.

The command runs in-process against a real store (``store_uri``, from this folder's
``conftest.py``); the page itself is checked through :func:`render_report` directly.
"""

from __future__ import annotations

import html
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


def _text(markup: str) -> str:
    """The text of a piece of the page, its tags removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


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
    assert "Policy R2_POLICY_V4" in page
    assert page.count("<svg") >= 3  # status over time, latency, tokens
    assert "Failure reasons over time" in page
    assert re.search(r"<td class='id'>All</td><td class='num'>1</td>", page)  # the rejection
    assert "INVALID_CITATION_REFERENCE" in page
    assert "<th class='num'>Requests</th>" in page
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
    counts = re.findall(r">([A-Z_]+)</a></td><td class='num'>(\d+)</td>", summary)
    assert counts == [("UNSUPPORTED_VALUE", "2"), ("EMPTY_ANSWER", "1"),
                      ("INSUFFICIENT_EVIDENCE", "1")]  # fmt: skip

    failed = _table_rows(_section(page, links["UNSUPPORTED_VALUE"]))
    assert [row[0] for row in failed] == ["bad-1", "bad-2"]  # by time, then request id
    assert failed[0][1] == "2026-03-04 00:00:00"
    assert failed[0][2] == "-"  # no firewall finding and no message recorded
    rules = [_text(rule) for rule in re.findall(r"<li>(.*?)</li>", failed[1][2])]
    assert rules == [  # the enforced finding of the row's own reason first
        "R5.values (UNSUPPORTED_VALUE, enforce, sentence 2)",
        "R5.entities (UNSUPPORTED_ENTITY, flag, sentence 1)",
    ]
    assert failed[1][3] == "P2<br>m-b"  # the policy above the model
    refused = _table_rows(_section(page, links["INSUFFICIENT_EVIDENCE"]))
    assert refused == [["refused", "2026-03-06 00:00:00", "-", "(none)<br>(none)"]]
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
    rules = [_text(rule) for rule in re.findall(r"<li>(.*?)</li>", first)]
    assert "<rule> (<b>REASON</b>, enforce, whole answer)" in rules
    assert "m&amp;m" in first
    ids = re.findall(r"id='([^']*)'", first)
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", anchor) for anchor in ids)


def test_a_failure_the_firewall_did_not_decide_shows_the_message_it_recorded() -> None:
    day = timedelta(days=1)
    rows = [
        _failed("MODEL_ERROR", request_id="model-error", timestamp_utc=_SINCE + day,
                message="model: RuntimeError after 1 attempt(s)"),
        _failed("DEADLINE_EXCEEDED", request_id="deadline", timestamp_utc=_SINCE + day,
                message="serving: the request ran past the server's deadline"),
        _failed("INPUT_SCHEMA_INVALID", request_id="schema", timestamp_utc=_SINCE + day,
                message="results[2].similarity: must be < 1.0", attempts=0),
        _failed("UNCITED_FACTUAL_STATEMENT", request_id="firewall", timestamp_utc=_SINCE + day,
                message="answer: sentence 1 of 2 has no anchor",
                firewall_findings=("uncited_statement:UNCITED_FACTUAL_STATEMENT:enforce:1",)),
    ]  # fmt: skip
    page = render_report(rows, [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    anchors = dict(re.findall(r"<a href='#([^']+)'>([^<]+)<", _section(page, "summary")))

    def why(reason: str) -> str:
        anchor = next(anchor for anchor, name in anchors.items() if name == reason)
        (row,) = _table_rows(_section(page, anchor))
        return row[2]

    assert _text(why("MODEL_ERROR")) == "model: RuntimeError after 1 attempt(s)"
    assert _text(why("DEADLINE_EXCEEDED")) == "serving: the request ran past the server's deadline"
    assert why("INPUT_SCHEMA_INVALID") == (  # escaped like every value of the trail
        "<p class='message'>results[2].similarity: must be &lt; 1.0</p>"
    )
    firewall = why("UNCITED_FACTUAL_STATEMENT")  # the rule first, then what it found
    assert [_text(rule) for rule in re.findall(r"<li>(.*?)</li>", firewall)] == [
        "uncited_statement (UNCITED_FACTUAL_STATEMENT, enforce, sentence 1)"
    ]
    assert firewall.endswith("<p class='message'>answer: sentence 1 of 2 has no anchor</p>")


def _periods(chart: str) -> list[dict[str, str]]:
    """Per period of a median/maximum chart: each bar's geometry and its value label."""
    found = []
    for group in re.findall(r"<g class='period'>(.*?)</g>", chart):
        tooltip = re.search(r"<title>([^<]*)</title>", group)
        assert tooltip, group
        period = {"tooltip": tooltip.group(1)}
        for name in ("median", "maximum"):
            bar = re.search(rf"<rect class='{name}' ([^>]*)/>", group)
            assert bar, group
            period |= {f"{name}.{k}": v for k, v in re.findall(r"(\w+)='([^']*)'", bar.group(1))}
            label = re.search(rf"<text class='value {name}'[^>]*>([^<]*)</text>", group)
            period[f"{name}.label"] = label.group(1) if label else ""
        found.append(period)
    return found


def test_each_period_shows_its_median_beside_its_maximum_with_their_values() -> None:
    day = timedelta(days=1)
    latencies = [(day, 500.0), (day, 520.0), (day, 30000.0), (2 * day, 800.0)]
    rows = [
        validation_row(request_id=f"r{number}", timestamp_utc=_SINCE + offset, latency_ms=ms)
        for number, (offset, ms) in enumerate(latencies)
    ]
    page = render_report(rows, [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    latency = next(c for c in re.findall(r"<svg.*?</svg>", page, re.DOTALL) if "latency" in c)
    periods = _periods(latency)
    assert len(periods) == 2
    for period in periods:
        median_right = float(period["median.x"]) + float(period["median.width"])
        assert median_right < float(period["maximum.x"])  # side by side, apart
        assert float(period["median.height"]) >= 2  # 520 ms beside 30 s is still seen
    skewed, single = periods
    assert (skewed["median.label"], skewed["maximum.label"]) == ("520", "30000")
    assert float(skewed["maximum.height"]) > 10 * float(skewed["median.height"])  # to scale
    # One request: its median is its maximum, and both bars are drawn, equal.
    assert (single["median.label"], single["maximum.label"]) == ("800", "800")
    assert single["median.height"] == single["maximum.height"]
    assert "median (left bar)" in page
    assert "maximum (right bar)" in page


def test_narrow_periods_keep_both_bars_and_leave_the_values_to_the_tooltip() -> None:
    until = _SINCE + timedelta(days=3)  # 72 hourly periods: too narrow for a label
    rows = [
        validation_row(request_id=f"r{hour}", timestamp_utc=_SINCE + timedelta(hours=hour),
                       latency_ms=100.0 + hour)
        for hour in range(0, 72, 5)
    ]  # fmt: skip
    page = render_report(rows, [], since=_SINCE, until=until, generated_at=until)
    latency = next(c for c in re.findall(r"<svg.*?</svg>", page, re.DOTALL) if "latency" in c)
    periods = _periods(latency)
    assert len(periods) == len(rows)
    for period in periods:
        median_right = float(period["median.x"]) + float(period["median.width"])
        assert median_right < float(period["maximum.x"])
        assert (period["median.label"], period["maximum.label"]) == ("", "")
        assert re.search(r"median [\d.]+ ms, max [\d.]+ ms", period["tooltip"])


def test_identifiers_are_kept_whole_and_headings_break_only_after_underscores() -> None:
    rows = [
        *_hand_built(),
        _failed("UNCITED_FACTUAL_STATEMENT", request_id="long", policy_version="R2_POLICY_V3",
                model_name="mistral-large-instruct-2411-eu-west-deployment",
                timestamp_utc=_SINCE + timedelta(days=2)),
    ]  # fmt: skip
    page = render_report(rows, [], since=_SINCE, until=_UNTIL, generated_at=_UNTIL)
    assert "<th class='num'>UNCITED_<wbr>FACTUAL_<wbr>STATEMENT</th>" in page
    assert "<th class='num'>NO_<wbr>EVIDENCE</th>" in page
    headings = re.findall(r"<th[^>]*>(.*?)</th>", page)
    assert all(re.fullmatch(r"([^<]|_<wbr>)*", heading) for heading in headings)
    names = ("UNCITED_FACTUAL_STATEMENT", "R2_POLICY_V3",
             "mistral-large-instruct-2411-eu-west-deployment")  # fmt: skip
    cells = re.findall(r"<td( class='[^']*')?>((?:(?!</td>).)*)</td>", page)
    holding = [cls for cls, text in cells if any(name in text for name in names)]
    assert holding
    assert set(holding) == {" class='id'"}  # a cell of its own, never broken
    assert "td.id,span.id{white-space:nowrap}" in page
