"""``groundlock report``: the auditors' report, one self-contained HTML file.

The command reads a time range of the audit trail (the last seven days unless told) and
writes :func:`render_report`'s page. The page has: a summary whose failure reasons each link
(an in-page anchor) to the list of requests that failed with it, with the time, the policy,
the model and the offending firewall rule(s), the enforced one first; counts broken down by
policy version, firewall ruleset, model and index version; and per policy version, status
and failure reasons over time, citation health, latency and tokens. Every chart is inline
SVG with a title, a time axis labelled in UTC dates and a y axis with ticks and its unit
(requests, ms, tokens); the latency and token charts put each period's median and maximum
side by side, each bar labelled with its value where there is room. An auditor reads it on an
ordinary screen, so it fits a 1280 px viewport: an identifier (reason code, policy, model,
ruleset, time) is never broken inside a cell, because ``UNCITED_FACTUA`` / ``L_STATEMENT``
is misread and cannot be searched for; a column heading that is a reason code breaks only
after an underscore; request ids and free text wrap anywhere; and a table that still cannot
fit (a model name of hundreds of characters) scrolls inside its own box, never the page.
A failure the firewall did not decide (a model error, a deadline, a refused input) shows
the message its row records, so the auditor sees why without opening the trail.

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
from typing import TYPE_CHECKING, Any

from groundlock.cli._shared import (
    Parser,
    UsageError,
    open_store,
    range_options,
    store_option,
    trail_query,
)

if TYPE_CHECKING:
    from groundlock.contracts.audit_rows import FeedbackRow, ValidationRow
    from groundlock.stores.readers import InvalidRow

__all__ = ["add_commands", "render_report"]


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``report`` to the command line."""
    report = commands.add_parser("report", help="write the auditors' HTML report")
    store_option(report)
    range_options(report)
    report.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="the HTML file to write"
    )
    report.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    # (The row models and their reader: for a report, not for the parser --help builds.)
    from groundlock.contracts.audit_rows import FeedbackRow, ValidationRow  # noqa: PLC0415
    from groundlock.stores.readers import InvalidRow  # noqa: PLC0415
    from groundlock.stores.sink import TrailQuery  # noqa: PLC0415

    if args.since and args.until and args.since >= args.until:
        raise UsageError("--since must be before --until")
    store = open_store(args)
    # Without --until the range ends now, or at --since when that is later: a --since in
    # the future is an empty report, as it is an empty records list, not a usage error.
    until = args.until or max(datetime.now(UTC), args.since or _EPOCH)
    since = args.since or until - timedelta(days=7)
    args.since, args.until = since, until
    window = TrailQuery(since=since, until=until)
    read = [*store.rows(ValidationRow, trail_query(args)), *store.rows(FeedbackRow, window)]
    # A row that breaks its model is left out of every count and chart, and listed.
    rows = [row for row in read if isinstance(row, ValidationRow)]
    feedback = [row for row in read if isinstance(row, FeedbackRow)]
    unread = [row for row in read if isinstance(row, InvalidRow)]
    integrity = trail_integrity(store)
    page = render_report(
        rows, feedback, since=since, until=until, unread=unread, integrity=integrity
    )
    try:
        args.out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
    sys.stdout.write(f"report of {len(rows)} request(s) written to {args.out}\n")
    sys.stdout.write(integrity + "\n")
    if unread:
        sys.stdout.write(
            f"{len(unread)} row(s) could not be read (they break the row model): "
            "listed under 'Rows not read'\n"
        )
    return 0


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def trail_integrity(store: Any) -> str:  # noqa: ANN401  (a DeltaAuditStore, imported late)
    """One line: whether the rows a tool reads verify against the trail's hash chain.

    The whole chain of each table is checked, as ``records verify`` does; a report or a
    replay of rows that do not verify says so before anyone relies on them.
    """
    from groundlock.stores.sink import AuditUnavailable  # noqa: PLC0415
    from groundlock.stores.verify import verify_store  # noqa: PLC0415

    try:
        reports = verify_store(store)
    except AuditUnavailable as exc:  # the store failed under the verifier: say so, go on
        return f"trail integrity: not checked ({exc})"
    findings = [finding for report in reports for finding in report.findings]
    if not findings:
        return "trail integrity: verified (the hash chain of every table holds)"
    first = findings[0].line()
    return (
        f"trail integrity: {len(findings)} problem(s) found; run groundlock records verify "
        f"(first: {first})"
    )


_STATUS_COLOURS = {"OK": "#2e7d32", "NO_EVIDENCE": "#f9a825", "FAILED": "#c62828"}
_MEDIAN_COLOUR, _MAXIMUM_COLOUR = "#0d47a1", "#64b5f6"
# Tables lay out automatically, so a column is as wide as its longest identifier: an
# identifier cell (.id) never wraps, a heading breaks only at spaces and at the <wbr> put
# after each underscore, and only opaque keys (.key) and free text (.text) break anywhere.
# Each table sits in a box that scrolls sideways when it cannot fit, so even a model name
# of 512 characters stays whole without widening the page. Charts scale down with the page
# (max-width) and keep their proportions (height auto).
_STYLE = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1rem auto;padding:0 1rem;max-width:80rem;
color:#222;overflow-wrap:break-word}
h1{font-size:1.5rem}h2{font-size:1.25rem;margin-top:2.5rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem}
.table-scroll{overflow-x:auto;margin:.5rem 0}
table{border-collapse:collapse;width:100%;font-size:.9rem}
table.breakdown td.id{width:45%}
td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left;vertical-align:top}
th{background:#f3f3f3;overflow-wrap:normal}
.num{text-align:right}td.num{white-space:nowrap}
td.id,span.id{white-space:nowrap}
td.key,td.text{overflow-wrap:anywhere}
ul.rules{margin:0;padding-left:1rem}
p.message{margin:0}ul.rules+p.message{margin-top:.25rem}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555}
svg{display:block;max-width:100%;height:auto}
svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#333}
svg .chart-title{font-size:14px;font-weight:600}
svg text.value{font-size:11px;fill:#222}
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
    integrity: str | None = None,
) -> str:
    """The report as one HTML document.

    The same rows, range and ``generated_at`` always give the same bytes: every listing is
    sorted, so two reports of one audit trail can be compared with ``diff``. ``unread``
    are the rows of the range that break their model: counted nowhere, each listed under
    "Rows not read" with what it breaks. ``integrity``: what verifying the trail's hash
    chain said (``records verify``), shown under the title; None leaves it out.
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
        f"<p class='integrity'>{_e(integrity)}</p>" if integrity is not None else "",
        _summary(rows, feedback, anchors),
        _unread(unread),
        _breakdowns(rows),
    ]
    by_policy: dict[str, list[ValidationRow]] = defaultdict(list)
    for row in rows:
        by_policy[row.policy_version or "(no policy: input refused before assembly)"].append(row)
    parts.extend(
        _policy_section(policy, f"policy-{rank}", by_policy[policy], since, until)
        for rank, policy in enumerate(sorted(by_policy))
    )
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
            kinds=["num"] * 6,
        ),
    ]
    failures = Counter(row.failure_reason for row in rows if row.failure_reason)
    if failures:
        parts.append("<h3>Failure reasons (each links to its requests)</h3>")
        ranked = sorted(failures.items(), key=lambda item: (-item[1], item[0]))
        body = "".join(
            f"<tr><td class='id'><a href='#{anchors[reason]}'>{_e(reason)}</a></td>"
            f"<td class='num'>{count}</td>"
            f"<td class='num'>{100 * count / len(rows):.1f} %</td></tr>"
            for reason, count in ranked
        )
        parts.append(
            "<div class='table-scroll'><table class='failure-reasons'><tr>"
            "<th class='id'>Failure reason</th><th class='num'>Requests</th>"
            f"<th class='num'>Share of requests</th></tr>{body}</table></div>"
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
            kinds=["id", "id", "key", "key", "key", "text"],
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
                kinds=["id", *["num"] * 5],
                cls=f"breakdown {field}",
            )
        )
    return "".join(parts)


def _offending_rules(row: ValidationRow) -> list[str]:
    """The firewall findings of a row as HTML, the one that failed it first.

    Findings are ``rule:REASON:mode:sentence``; the order is: enforced findings of the
    row's own failure reason (what withheld the answer), other enforced ones, then the
    flagged ones (recorded, not decisive). Within each group the rule-table order is kept.
    The rule and the reason are identifiers, so each is kept on one line.
    """
    parsed = []
    for finding in row.firewall_findings or ():
        parts = finding.rsplit(":", 3)
        if len(parts) != 4:
            parsed.append((3, _e(finding)))
            continue
        rule, reason, mode, sentence = parts
        where_ = "whole answer" if sentence == "-" else f"sentence {sentence}"
        rank = 0 if mode == "enforce" and reason == row.failure_reason else 1
        rank = rank if mode == "enforce" else 2
        label = f"{_span_id(rule)} ({_span_id(reason)}, {_e(mode)}, {_e(where_)})"
        parsed.append((rank, label))
    return [label for _, label in sorted(parsed, key=lambda item: item[0])]


def _why(row: ValidationRow) -> str:
    """What failed the request: its offending rules, then the message its row records.

    A firewall verdict has rules; a model error, a deadline or a refused input has none,
    and its message (``model: RuntimeError after 1 attempt(s)``) is the only account of
    it the trail holds, so it is shown rather than a bare ``-``.
    """
    parts = []
    if rules := _offending_rules(row):
        parts.append("<ul class='rules'>" + "".join(f"<li>{r}</li>" for r in rules) + "</ul>")
    if row.message:
        parts.append(f"<p class='message'>{_e(row.message)}</p>")
    return "".join(parts) or "-"


# The request id (up to 512 characters) and the rules and message are the long cells and
# break where they must; the time keeps its natural width. The policy and the model share
# a column, one above the other: side by side, two long names (SOURCE_PAGE_POLICY_V1 and a
# 46-character deployment name) leave too little of 1280 px for the message, and neither
# may break.
_FAILED_COLUMNS = (
    "<colgroup>"
    + "".join(f"<col style='width:{share}'>" for share in ("22%", "auto", "40%", "auto"))
    + "</colgroup>"
)


def _failed_requests(rows: Sequence[ValidationRow], anchors: dict[str, str]) -> str:
    """Per failure reason, the requests that failed with it: what an auditor follows up."""
    if not anchors:
        return ""
    parts = ["<h2 id='failed-requests'>Failed requests</h2>"]
    # The reason is each table's heading, so no column repeats it.
    columns = (
        ("Request id", "key"),
        ("Time (UTC)", "id"),
        ("Offending rule(s) and message", "text"),
        ("Policy / model", "id"),
    )
    head = "".join(f"<th class='{kind}'>{_e(cell)}</th>" for cell, kind in columns)
    for reason in sorted(anchors, key=lambda r: anchors[r]):
        failed = sorted(
            (row for row in rows if row.failure_reason == reason),
            key=lambda row: (row.timestamp_utc, row.request_id or "", row.record_id),
        )
        body = []
        for row in failed:
            cells = [
                _e(row.request_id or _NONE),
                _e(_utc(row.timestamp_utc)),
                _why(row),
                f"{_e(row.policy_version or _NONE)}<br>{_e(row.model_name or _NONE)}",
            ]
            body.append(
                "<tr>"
                + "".join(
                    f"<td class='{kind}'>{cell}</td>"
                    for cell, (_, kind) in zip(cells, columns, strict=True)
                )
                + "</tr>"
            )
        parts.append(
            f"<h3 id='{anchors[reason]}'>{_e(reason)} ({len(failed)} request(s))</h3>"
            f"<div class='table-scroll'><table class='failed'>{_FAILED_COLUMNS}<tr>{head}</tr>"
            f"{''.join(body)}</table></div>"
            "<p><a href='#summary'>Back to the summary</a></p>"
        )
    return "".join(parts)


def _policy_section(
    policy: str, anchor: str, rows: list[ValidationRow], since: datetime, until: datetime
) -> str:
    failures = Counter(row.failure_reason for row in rows if row.failure_reason)
    latency = [(row.timestamp_utc, row.latency_ms) for row in rows if row.attempts > 0]
    tokens = [(row.timestamp_utc, float(row.total_tokens)) for row in rows if row.total_tokens]
    answered = [row for row in rows if row.status == "OK"]
    return "".join(
        [
            f"<h2 id='{anchor}'>Policy {_e(policy)}</h2>",
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
            f"<h3 id='{anchor}-latency'>Model latency (ms, requests that called the model)</h3>",
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
    kinds = ["id", *["num"] * len(reasons)]
    return _table(["Period (UTC)", *reasons], [*body, total], kinds=kinds)


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
        kinds=["text", "num"],
    )


# One geometry for every chart: the plot area inside margins that hold the axes' labels.
_WIDTH, _HEIGHT = 960, 280
# (The top margin leaves room for a value label above a bar that reaches the plot's top.)
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 64, 44, 56
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
    """Percentiles over the range, and a chart of each period's median beside its maximum.

    The two are side by side, never one over the other: a median far below its maximum
    (a 30 s deadline among 0.5 s answers) would otherwise be a sliver hidden at the foot of
    the maximum's bar, and an equal one would hide the maximum. A bar of a value above zero
    is at least 2 px tall, so it can be seen, and is labelled with its value where the bar
    is wide enough for the label; the tooltip always gives both.
    """
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
        kinds=["num"] * 5,
    )
    axis = _TimeAxis(since, until)
    periods: dict[int, list[float]] = defaultdict(list)
    for moment, value in values:
        index = axis.index(moment)
        if index is not None:
            periods[index].append(value)
    y_axis, top = _y_axis(max(ordered[-1], 1e-9), unit, integer=False)
    # One group per period: its median bar, its maximum bar to the right, one tooltip.
    shapes = []
    for index in sorted(periods):
        period = sorted(periods[index])
        median, peak = _percentile(period, 50), period[-1]
        # A tenth of the period's width on each side keeps its pair apart from the next.
        pad = axis.bar / 10
        half = (axis.bar - 2 * pad) / 2
        bars = "".join(
            _value_bar(
                axis.x(index) + pad + offset * half,
                max(half - 1, 0.5),
                value,
                top=top,
                name=name,
                colour=colour,
            )
            for offset, (value, name, colour) in enumerate(
                ((median, "median", _MEDIAN_COLOUR), (peak, "maximum", _MAXIMUM_COLOUR))
            )
        )
        shapes.append(
            f"<g class='period'>{bars}<title>{_e(_utc(axis.start + index * axis.bucket))} "
            f"UTC: {len(period)} request(s), median {median:.1f} {unit}, "
            f"max {peak:.1f} {unit}</title></g>"
        )
    legend = (
        f"<span style='background:{_MEDIAN_COLOUR}'></span>median (left bar)"
        f"<span style='background:{_MAXIMUM_COLOUR}'></span>maximum (right bar)"
    )
    chart_title = f"{title} per {_bucket_name(axis.bucket)} ({unit}, UTC)"
    return (
        stats + f"<figure>{_svg(chart_title, y_axis + ''.join(shapes) + axis.group())}"
        f"<figcaption class='legend'>{_e(title)}, {ordered[0]:.1f} to {ordered[-1]:.1f} "
        f"{_e(unit)}.{legend}</figcaption></figure>"
    )


# A value label's width per character at 11 px (digits and a point), with some margin.
_LABEL_CHAR_PX = 7.0


def _value_bar(x: float, width: float, value: float, *, top: float, name: str, colour: str) -> str:
    """One bar of a period (``median`` or ``maximum``), and its value above it if it fits."""
    height = max(value * _PLOT_H / top, 2.0) if value > 0 else 0.0
    y = _TOP + _PLOT_H - height
    bar = (
        f"<rect class='{name}' x='{x:.1f}' y='{y:.1f}' width='{width:.1f}' "
        f"height='{height:.1f}' fill='{colour}'/>"
    )
    label = f"{value:.0f}" if value >= 100 else f"{value:.1f}"
    if width < len(label) * _LABEL_CHAR_PX:
        return bar
    return (
        f"{bar}<text class='value {name}' x='{x + width / 2:.1f}' y='{y - 4:.1f}' "
        f"text-anchor='middle'>{label}</text>"
    )


def _percentile(ordered: Sequence[float], percent: float) -> float:
    """Nearest-rank percentile: always a value that was observed."""
    rank = max(1, -(-len(ordered) * percent // 100))
    return ordered[int(rank) - 1]


def _floor(moment: datetime, bucket: timedelta) -> datetime:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return day if bucket >= timedelta(days=1) else moment.replace(minute=0, second=0, microsecond=0)


def _table(header: list[str], rows: list[list[str]], *, kinds: Sequence[str], cls: str = "") -> str:
    """A table in its scrolling box; ``kinds`` gives each column's class (see ``_STYLE``).

    ``id`` is an identifier, never broken; ``num`` a number, right-aligned; ``key`` an
    opaque id that may break anywhere; ``text`` free text. Headings break only at spaces
    and after underscores, so a reason code heading a column keeps its words whole.
    """
    head = "".join(
        f"<th class='{kind}'>{_breakable(cell)}</th>"
        for cell, kind in zip(header, kinds, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td class='{kind}'>{_e(c)}</td>" for c, kind in zip(row, kinds, strict=True))
        + "</tr>"
        for row in rows
    )
    attribute = f" class='{_e(cls)}'" if cls else ""
    return f"<div class='table-scroll'><table{attribute}><tr>{head}</tr>{body}</table></div>"


def _breakable(identifier: str) -> str:
    """Escaped, with a break opportunity after each underscore (and nowhere else in a word)."""
    return _e(identifier).replace("_", "_<wbr>")


def _span_id(identifier: str) -> str:
    """An identifier inside free text, kept on one line."""
    return f"<span class='id'>{_e(identifier)}</span>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
