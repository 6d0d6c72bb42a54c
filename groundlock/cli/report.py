"""``groundlock report``: the auditors' report, one self-contained HTML file.

The command reads a time range of the audit trail (the last seven days unless told) and
writes :func:`render_report`'s page. The page has: a summary whose failure reasons each link
(an in-page anchor) to the list of requests that failed with it, with the time, the policy,
the model and the offending firewall rule(s), the enforced one first; counts broken down by
policy version, firewall ruleset, model and index version; and per policy version, status
and failure reasons over time, citation health, latency and tokens. Every chart is inline
SVG with a title, a time axis labelled in UTC dates and a y axis with ticks and its unit
(requests, ms, tokens). An auditor reads it on an ordinary screen, so it fits a 1280 px
viewport: tables have a fixed layout and long ids or reason codes wrap inside their cells.

It loads nothing from anywhere (no script, no stylesheet, no font), so it can be archived
and opened offline years later; every value from the table is HTML-escaped; and the same
rows give the same bytes (everything listed is sorted). The rendering lives here rather
than with the store because it is command output: the store holds rows, and this is one way
of printing them.
"""

from __future__ import annotations

import argparse
import html
import math
import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from groundlock.cli._shared import (
    Parser,
    UsageError,
    open_store,
    range_options,
    sql_time,
    store_option,
    where,
)
from groundlock.contracts.audit_rows import FeedbackRow, ValidationRow
from groundlock.stores.readers import InvalidRow, read_rows

__all__ = ["add_commands", "render_report"]


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``report`` to the command line."""
    report = commands.add_parser("report", help="write the auditors' HTML report")
    store_option(report)
    range_options(report)
    report.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    report.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    store = open_store(args)
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(days=7)
    if since >= until:
        raise UsageError("--since must be before --until")
    args.since, args.until = since, until
    window = f"timestamp_utc >= {sql_time(since)} AND timestamp_utc < {sql_time(until)}"
    read = [*read_rows(store, ValidationRow, where(args)), *read_rows(store, FeedbackRow, window)]
    # A row that breaks its model is left out of every count and chart, and listed.
    rows = [row for row in read if isinstance(row, ValidationRow)]
    feedback = [row for row in read if isinstance(row, FeedbackRow)]
    unread = [row for row in read if isinstance(row, InvalidRow)]
    page = render_report(rows, feedback, since=since, until=until, unread=unread)
    try:
        args.out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
    sys.stdout.write(f"report of {len(rows)} request(s) written to {args.out}\n")
    if unread:
        sys.stdout.write(
            f"{len(unread)} row(s) could not be read (they break the row model): "
            "listed under 'Rows not read'\n"
        )
    return 0


_STATUS_COLOURS = {"OK": "#2e7d32", "NO_EVIDENCE": "#f9a825", "FAILED": "#c62828"}
# Fixed table layout and breaking anywhere: a request id or reason code of hundreds of
# characters wraps inside its cell instead of widening the page past the auditor's screen.
# Charts scale down with the page (max-width) and keep their proportions (height auto).
_STYLE = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1rem auto;padding:0 1rem;max-width:72rem;
color:#222;overflow-wrap:anywhere}
h1{font-size:1.5rem}h2{font-size:1.25rem;margin-top:2.5rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0;width:100%;table-layout:fixed}
td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:right;vertical-align:top;
overflow-wrap:anywhere;word-break:break-word}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
td.text,th.text{text-align:left}
table.breakdown th:first-child,table.failure-reasons th:first-child{width:36%}
ul.rules{margin:0;padding-left:1rem;text-align:left}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555}
svg{display:block;max-width:100%;height:auto}
svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#333}
svg .chart-title{font-size:14px;font-weight:600}
"""
_NONE = "(none)"


def render_report(
    rows: Sequence[ValidationRow],
    feedback: Sequence[FeedbackRow],
    *,
    since: datetime,
    until: datetime,
    generated_at: datetime | None = None,
    unread: Sequence[InvalidRow] = (),
) -> str:
    """The report as one HTML document.

    The same rows, range and ``generated_at`` always give the same bytes: every listing is
    sorted, so two reports of one audit trail can be compared with ``diff``. ``unread``
    are the rows of the range that break their model: counted nowhere, each listed under
    "Rows not read" with what it breaks.
    """
    generated = generated_at or datetime.now(UTC)
    anchors = _anchors(rows)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        "<title>groundlock audit report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>groundlock audit report</h1>",
        f"<p>Requests recorded from <b>{_e(_utc(since))}</b> to "
        f"<b>{_e(_utc(until))}</b> (UTC). Generated {_e(_utc(generated))}.</p>",
        _summary(rows, feedback, anchors),
        _unread(unread),
        _breakdowns(rows),
    ]
    by_policy: dict[str, list[ValidationRow]] = defaultdict(list)
    for row in rows:
        by_policy[row.policy_version or "(no policy: input refused before assembly)"].append(row)
    parts.extend(_policy_section(p, by_policy[p], since, until) for p in sorted(by_policy))
    parts.append(_failed_requests(rows, anchors))
    if not rows:
        parts.append("<p>No request was recorded in this range.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _anchors(rows: Sequence[ValidationRow]) -> dict[str, str]:
    """An in-page id per failure reason: ``fail-<rank>-<reason's safe characters>``.

    A reason is free text up to 512 characters; the rank keeps two reasons that differ
    only in unsafe characters apart, and the safe part keeps the link readable.
    """
    reasons = sorted({row.failure_reason for row in rows if row.failure_reason})
    return {
        reason: f"fail-{rank}-{re.sub(r'[^A-Za-z0-9_-]', '', reason)[:64]}"
        for rank, reason in enumerate(reasons)
    }


def _summary(
    rows: Sequence[ValidationRow], feedback: Sequence[FeedbackRow], anchors: dict[str, str]
) -> str:
    statuses = Counter(row.status for row in rows)
    ratings = [item.rating for item in feedback]
    mean = f"{statistics.fmean(ratings):.2f}" if ratings else "n/a"
    parts = [
        "<h2 id='summary'>Summary</h2>",
        _table(
            ["Requests", "OK", "NO_EVIDENCE", "FAILED", "Feedback", "Mean rating"],
            [
                [
                    str(len(rows)),
                    *(str(statuses[s]) for s in _STATUS_COLOURS),
                    str(len(ratings)),
                    mean,
                ]
            ],
        ),
    ]
    failures = Counter(row.failure_reason for row in rows if row.failure_reason)
    if failures:
        parts.append("<h3>Failure reasons (each links to its requests)</h3>")
        ranked = sorted(failures.items(), key=lambda item: (-item[1], item[0]))
        body = "".join(
            f"<tr><td><a href='#{anchors[reason]}'>{_e(reason)}</a></td>"
            f"<td>{count}</td><td>{100 * count / len(rows):.1f} %</td></tr>"
            for reason, count in ranked
        )
        parts.append(
            "<table class='failure-reasons'><tr><th>Failure reason</th><th>Requests</th>"
            f"<th>Share of requests</th></tr>{body}</table>"
        )
    return "".join(parts)


def _unread(unread: Sequence[InvalidRow]) -> str:
    """The rows the report could not read: which table, which row, and what each breaks."""
    if not unread:
        return ""
    listed = sorted(
        unread,
        key=lambda row: (row.table, str(row.get("timestamp_utc")), str(row.get("record_id"))),
    )
    body = [
        [
            row.table,
            _moment(row.get("timestamp_utc")),
            str(row.get("request_id") or _NONE),
            str(row.get("run_id") or _NONE),
            str(row.get("record_id") or _NONE),
            "; ".join(row.problems),
        ]
        for row in listed
    ]
    return (
        "<h2 id='rows-not-read'>Rows not read</h2>"
        f"<p>{len(unread)} row(s) of this range break the row model (a value out of its "
        "column's range, a null where a value belongs): they are counted nowhere in this "
        "report. Each is listed with what it breaks.</p>"
        + _table(
            ["Table", "Time (UTC)", "Request id", "Run id", "Record id", "Problem(s)"],
            body,
            cls="unread",
        )
    )


def _moment(value: object) -> str:
    return _utc(value) if isinstance(value, datetime) else str(value or _NONE)


_DIMENSIONS = (
    ("policy_version", "Policy version"),
    ("firewall_ruleset", "Firewall ruleset"),
    ("model_name", "Model"),
    ("index_version", "Index version"),
)


def _breakdowns(rows: Sequence[ValidationRow]) -> str:
    """Counts per policy, ruleset, model and index version: which configuration failed."""
    if not rows:
        return ""
    parts = ["<h2 id='breakdowns'>Breakdowns</h2>"]
    for field, title in _DIMENSIONS:
        groups: dict[str, Counter[str]] = defaultdict(Counter)
        for row in rows:
            groups[getattr(row, field) or _NONE][row.status] += 1
        body = [
            [
                value,
                str(sum(groups[value].values())),
                *(str(groups[value][s]) for s in _STATUS_COLOURS),
                f"{100 * groups[value]['FAILED'] / sum(groups[value].values()):.1f} %",
            ]
            for value in sorted(groups)
        ]
        parts.append(f"<h3>By {title.lower()}</h3>")
        parts.append(
            _table(
                [title, "Requests", *_STATUS_COLOURS, "Failed share"],
                body,
                cls=f"breakdown {field}",
            )
        )
    return "".join(parts)


def _offending_rules(row: ValidationRow) -> list[str]:
    """The firewall findings of a row, the one that failed it first.

    Findings are ``rule:REASON:mode:sentence``; the order is: enforced findings of the
    row's own failure reason (what withheld the answer), other enforced ones, then the
    flagged ones (recorded, not decisive). Within each group the rule-table order is kept.
    """
    parsed = []
    for finding in row.firewall_findings or ():
        parts = finding.rsplit(":", 3)
        if len(parts) != 4:
            parsed.append((3, finding))
            continue
        rule, reason, mode, sentence = parts
        where_ = "whole answer" if sentence == "-" else f"sentence {sentence}"
        rank = 0 if mode == "enforce" and reason == row.failure_reason else 1
        rank = rank if mode == "enforce" else 2
        parsed.append((rank, f"{rule} ({reason}, {mode}, {where_})"))
    return [label for _, label in sorted(parsed, key=lambda item: item[0])]


# The request id and the rules are the long cells: they get the room, the time gets enough.
_FAILED_COLUMNS = (
    "<colgroup>"
    + "".join(f"<col style='width:{share}%'>" for share in (22, 12, 16, 26, 12, 12))
    + "</colgroup>"
)


def _failed_requests(rows: Sequence[ValidationRow], anchors: dict[str, str]) -> str:
    """Per failure reason, the requests that failed with it: what an auditor follows up."""
    if not anchors:
        return ""
    parts = ["<h2 id='failed-requests'>Failed requests</h2>"]
    header = ["Request id", "Time (UTC)", "Reason", "Offending rule(s)", "Policy", "Model"]
    head = "".join(f"<th class='text'>{_e(cell)}</th>" for cell in header)
    for reason in sorted(anchors, key=lambda r: anchors[r]):
        failed = sorted(
            (row for row in rows if row.failure_reason == reason),
            key=lambda row: (row.timestamp_utc, row.request_id or "", row.record_id),
        )
        body = []
        for row in failed:
            rules = _offending_rules(row)
            listed = (
                "<ul class='rules'>" + "".join(f"<li>{_e(r)}</li>" for r in rules) + "</ul>"
                if rules
                else "-"
            )
            cells = [
                _e(row.request_id or _NONE),
                _e(_utc(row.timestamp_utc)),
                _e(reason),
                listed,
                _e(row.policy_version or _NONE),
                _e(row.model_name or _NONE),
            ]
            body.append("<tr>" + "".join(f"<td class='text'>{c}</td>" for c in cells) + "</tr>")
        parts.append(
            f"<h3 id='{anchors[reason]}'>{_e(reason)} ({len(failed)} request(s))</h3>"
            f"<table class='failed'>{_FAILED_COLUMNS}<tr>{head}</tr>{''.join(body)}</table>"
            "<p><a href='#summary'>Back to the summary</a></p>"
        )
    return "".join(parts)


def _policy_section(
    policy: str, rows: list[ValidationRow], since: datetime, until: datetime
) -> str:
    failures = Counter(row.failure_reason for row in rows if row.failure_reason)
    latency = [(row.timestamp_utc, row.latency_ms) for row in rows if row.attempts > 0]
    tokens = [(row.timestamp_utc, float(row.total_tokens)) for row in rows if row.total_tokens]
    answered = [row for row in rows if row.status == "OK"]
    return "".join(
        [
            f"<h2>Policy {_e(policy)}</h2>",
            f"<p>{len(rows)} requests; policy hashes: "
            f"{_e(', '.join(sorted({r.policy_sha256 or '-' for r in rows})))}.</p>",
            "<h3>Status over time</h3>",
            _status_chart(rows, since, until),
            "<h3>Failure reasons over time</h3>",
            _failures_over_time(rows, failures, since, until)
            if failures
            else "<p>No failures.</p>",
            "<h3>Citation health (OK answers)</h3>",
            _citation_health(answered),
            "<h3>Model latency (ms, requests that called the model)</h3>",
            _distribution(latency, "ms", "Model latency", since, until),
            "<h3>Total tokens per request</h3>",
            _distribution(tokens, "tokens", "Total tokens per request", since, until),
        ]
    )


def _failures_over_time(
    rows: list[ValidationRow], totals: Counter[str], since: datetime, until: datetime
) -> str:
    """A table: one row per period with failures, one column per reason (most common first)."""
    bucket = _bucket(since, until)
    start = _floor(since, bucket)
    reasons = [reason for reason, _ in sorted(totals.items(), key=lambda i: (-i[1], i[0]))]
    periods: dict[datetime, Counter[str]] = defaultdict(Counter)
    for row in rows:
        if row.failure_reason:
            periods[start + (row.timestamp_utc - start) // bucket * bucket][row.failure_reason] += 1
    body = [
        [_period(period, bucket), *(str(periods[period][r]) for r in reasons)]
        for period in sorted(periods)
    ]
    total = ["All", *(str(totals[r]) for r in reasons)]
    return _table(["Period (UTC)", *reasons], [*body, total])


_MAX_BARS = 400


def _bucket(since: datetime, until: datetime) -> timedelta:
    """Hours for a range of up to three days, then days, weeks or multiples of 30 days.

    At most 400 bars: a long range widens its bars instead of dropping rows.
    """
    span = until - since
    if span <= timedelta(days=3):
        return timedelta(hours=1)
    for bucket in (timedelta(days=1), timedelta(days=7)):
        if span <= bucket * (_MAX_BARS - 1):
            return bucket
    return timedelta(days=30) * max(1, math.ceil(span / (timedelta(days=30) * (_MAX_BARS - 1))))


def _bucket_name(bucket: timedelta) -> str:
    return {timedelta(hours=1): "hour", timedelta(days=1): "day", timedelta(days=7): "week"}.get(
        bucket, f"{bucket.days} days"
    )


def _period(start: datetime, bucket: timedelta) -> str:
    if bucket < timedelta(days=1):
        return start.strftime("%Y-%m-%d %H:00")
    return start.date().isoformat() + (
        "" if bucket == timedelta(days=1) else f" (+{bucket.days} d)"
    )


def _citation_health(rows: list[ValidationRow]) -> str:
    if not rows:
        return "<p>No OK answers.</p>"
    count = len(rows)

    def share(flagged: Iterable[bool]) -> str:
        return f"{100 * sum(flagged) / count:.1f} %"

    def mean(values: Iterable[int]) -> str:
        return f"{statistics.fmean(values):.2f}"

    return _table(
        ["Measure", "Value"],
        [
            ["Mean citations per answer", mean(r.citation_count for r in rows)],
            ["Mean sentences per answer", mean(r.sentence_count for r in rows)],
            ["Answers with a suspicious new id", share(bool(r.suspicious_new_ids) for r in rows)],
            ["Answers flagged for length ratio", share(r.length_ratio_flag for r in rows)],
            ["Uncited sentences in OK answers", str(sum(r.uncited_sentence_count for r in rows))],
            ["Invalid anchors in OK answers", str(sum(r.invalid_anchor_count for r in rows))],
        ],
    )


# One geometry for every chart: the plot area inside margins that hold the axes' labels.
_WIDTH, _HEIGHT = 960, 280
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 64, 36, 56
_PLOT_W, _PLOT_H = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
_MAX_X_TICKS = 6


class _TimeAxis:
    """The buckets of a range: where each one starts and where its bar goes."""

    def __init__(self, since: datetime, until: datetime) -> None:
        self.bucket = _bucket(since, until)
        self.start = _floor(since, self.bucket)
        self.count = max(1, math.ceil((until - self.start) / self.bucket))
        self.bar = _PLOT_W / self.count

    def index(self, moment: datetime) -> int | None:
        index = int((moment - self.start) / self.bucket)
        return index if 0 <= index < self.count else None

    def x(self, index: float) -> float:
        return _LEFT + index * self.bar

    def group(self) -> str:
        """The x axis: a baseline, a tick and a UTC date label every few buckets, a unit."""
        step = max(1, math.ceil(self.count / _MAX_X_TICKS))
        hourly = self.bucket < timedelta(days=1)
        ticks = []
        # The range's end is always labelled; the last regular tick gives way when it
        # would sit close enough to the end for the two labels to overlap.
        indices = list(range(0, self.count, step))
        if len(indices) > 1 and self.count - indices[-1] < step * 0.75:
            indices.pop()
        for index in [*indices, self.count]:
            moment = self.start + index * self.bucket
            x = self.x(index)
            label = moment.strftime("%Y-%m-%d %H:%M" if hourly else "%Y-%m-%d")
            ticks.append(
                f"<line x1='{x:.1f}' y1='{_TOP + _PLOT_H}' x2='{x:.1f}' "
                f"y2='{_TOP + _PLOT_H + 5}' stroke='#333'/>"
                f"<text class='tick' x='{x:.1f}' y='{_TOP + _PLOT_H + 18}' "
                f"text-anchor='middle'>{_e(label)}</text>"
            )
        return (
            "<g class='axis x-axis'>"
            f"<line x1='{_LEFT}' y1='{_TOP + _PLOT_H}' x2='{_LEFT + _PLOT_W}' "
            f"y2='{_TOP + _PLOT_H}' stroke='#333'/>{''.join(ticks)}"
            f"<text class='unit' x='{_LEFT + _PLOT_W / 2:.1f}' y='{_HEIGHT - 8}' "
            f"text-anchor='middle'>time (UTC), one bar per {_bucket_name(self.bucket)}</text>"
            "</g>"
        )


def _nice_step(peak: float, *, integer: bool) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving four or five ticks."""
    raw = peak / 4 if peak > 0 else 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)
    return max(1.0, step) if integer else step


def _y_axis(peak: float, unit: str, *, integer: bool) -> tuple[str, float]:
    """The y axis for values up to ``peak``: its markup and the value at the plot's top."""
    step = _nice_step(peak, integer=integer)
    top = step * max(1, math.ceil(peak / step))
    ticks = []
    for number in range(round(top / step) + 1):
        value = number * step
        y = _TOP + _PLOT_H - value * _PLOT_H / top
        label = f"{value:.0f}" if value == int(value) else f"{value:g}"
        ticks.append(
            f"<line x1='{_LEFT - 5}' y1='{y:.1f}' x2='{_LEFT + _PLOT_W}' y2='{y:.1f}' "
            f"stroke='{'#333' if number == 0 else '#e0e0e0'}'/>"
            f"<text class='tick' x='{_LEFT - 8}' y='{y + 4:.1f}' text-anchor='end'>{label}</text>"
        )
    markup = (
        "<g class='axis y-axis'>"
        f"<line x1='{_LEFT}' y1='{_TOP}' x2='{_LEFT}' y2='{_TOP + _PLOT_H}' stroke='#333'/>"
        f"{''.join(ticks)}<text class='unit' x='16' y='{_TOP + _PLOT_H / 2:.1f}' "
        f"text-anchor='middle' transform='rotate(-90 16 {_TOP + _PLOT_H / 2:.1f})'>"
        f"{_e(unit)}</text></g>"
    )
    return markup, top


def _svg(title: str, body: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{_WIDTH}' "
        f"height='{_HEIGHT}' viewBox='0 0 {_WIDTH} {_HEIGHT}' role='img' "
        f"aria-label='{_e(title)}'><title>{_e(title)}</title>"
        f"<rect width='{_WIDTH}' height='{_HEIGHT}' fill='#fafafa'/>"
        f"<text class='chart-title' x='{_LEFT}' y='22'>{_e(title)}</text>{body}</svg>"
    )


def _status_chart(rows: list[ValidationRow], since: datetime, until: datetime) -> str:
    axis = _TimeAxis(since, until)
    counts: list[Counter[str]] = [Counter() for _ in range(axis.count)]
    for row in rows:
        index = axis.index(row.timestamp_utc)
        if index is not None:
            counts[index][row.status] += 1
    peak = max((sum(c.values()) for c in counts), default=0) or 1
    y_axis, top = _y_axis(peak, "requests", integer=True)
    shapes = []
    for index, counter in enumerate(counts):
        y = float(_TOP + _PLOT_H)
        for status, colour in _STATUS_COLOURS.items():
            size = counter[status] * _PLOT_H / top
            if size:
                y -= size
                shapes.append(
                    f"<rect x='{axis.x(index):.1f}' y='{y:.1f}' "
                    f"width='{max(axis.bar - 1, 0.5):.1f}' height='{size:.1f}' fill='{colour}'>"
                    f"<title>{_e(_utc(axis.start + index * axis.bucket))} UTC {status}: "
                    f"{counter[status]}</title></rect>"
                )
    unit = _bucket_name(axis.bucket)
    legend = "".join(
        f"<span style='background:{colour}'></span>{status}"
        for status, colour in _STATUS_COLOURS.items()
    )
    title = f"Requests per {unit} by status (UTC)"
    return (
        f"<figure>{_svg(title, y_axis + ''.join(shapes) + axis.group())}"
        f"<figcaption class='legend'>Requests per {unit} (peak {peak}).{legend}</figcaption>"
        "</figure>"
    )


def _distribution(
    values: list[tuple[datetime, float]],
    unit: str,
    title: str,
    since: datetime,
    until: datetime,
) -> str:
    """Percentiles over the range, and a chart of each period's median and maximum."""
    if not values:
        return "<p>No values.</p>"
    ordered = sorted(value for _, value in values)
    stats = _table(
        ["Count", f"p50 ({unit})", f"p90 ({unit})", f"p99 ({unit})", f"Max ({unit})"],
        [
            [
                str(len(ordered)),
                *(f"{_percentile(ordered, p):.1f}" for p in (50, 90, 99)),
                f"{ordered[-1]:.1f}",
            ]
        ],
    )
    axis = _TimeAxis(since, until)
    periods: dict[int, list[float]] = defaultdict(list)
    for moment, value in values:
        index = axis.index(moment)
        if index is not None:
            periods[index].append(value)
    y_axis, top = _y_axis(max(ordered[-1], 1e-9), unit, integer=False)
    # One group per period: its two bars (maximum behind, median in front) and one tooltip.
    shapes = []
    for index in sorted(periods):
        period = sorted(periods[index])
        median, peak = _percentile(period, 50), period[-1]
        x, width = axis.x(index), max(axis.bar - 1, 0.5)
        bars = "".join(
            f"<rect x='{x:.1f}' y='{_TOP + _PLOT_H - value * _PLOT_H / top:.1f}' "
            f"width='{width:.1f}' height='{value * _PLOT_H / top:.1f}' fill='{colour}'/>"
            for value, colour in ((peak, "#90caf9"), (median, "#1565c0"))
        )
        shapes.append(
            f"<g>{bars}<title>{_e(_utc(axis.start + index * axis.bucket))} UTC: "
            f"{len(period)} request(s), median {median:.1f} {unit}, "
            f"max {peak:.1f} {unit}</title></g>"
        )
    legend = (
        "<span style='background:#1565c0'></span>median"
        "<span style='background:#90caf9'></span>maximum"
    )
    chart_title = f"{title} per {_bucket_name(axis.bucket)} ({unit}, UTC)"
    return (
        stats + f"<figure>{_svg(chart_title, y_axis + ''.join(shapes) + axis.group())}"
        f"<figcaption class='legend'>{_e(title)}, {ordered[0]:.1f} to {ordered[-1]:.1f} "
        f"{_e(unit)}.{legend}</figcaption></figure>"
    )


def _percentile(ordered: Sequence[float], percent: float) -> float:
    """Nearest-rank percentile: always a value that was observed."""
    rank = max(1, -(-len(ordered) * percent // 100))
    return ordered[int(rank) - 1]


def _floor(moment: datetime, bucket: timedelta) -> datetime:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return day if bucket >= timedelta(days=1) else moment.replace(minute=0, second=0, microsecond=0)


def _table(header: list[str], rows: list[list[str]], *, cls: str = "") -> str:
    head = "".join(f"<th>{_e(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    attribute = f" class='{_e(cls)}'" if cls else ""
    return f"<table{attribute}><tr>{head}</tr>{body}</table>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
