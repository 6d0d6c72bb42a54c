"""``groundlock report``: the auditors' report, one self-contained HTML file.

The command reads a time range of the audit trail (the last seven days unless told) and
writes :func:`render_report`'s page. The page covers, per policy version: status and
failure-reason counts over time, citation health, and the distributions of latency and
tokens, with charts drawn as inline SVG. It loads nothing from anywhere (no script, no
stylesheet, no font), so it can be archived and opened offline years later, and every value
from the table is HTML-escaped. The rendering lives here rather than with the store because
it is command output: the store holds rows, and this is one way of printing them.
"""

from __future__ import annotations

import argparse
import html
import math
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
    rows = store.select(ValidationRow, where(args))
    window = f"timestamp_utc >= {sql_time(since)} AND timestamp_utc < {sql_time(until)}"
    feedback = store.select(FeedbackRow, window)
    try:
        args.out.write_text(
            render_report(rows, feedback, since=since, until=until), encoding="utf-8"
        )
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
    sys.stdout.write(f"report of {len(rows)} request(s) written to {args.out}\n")
    return 0


_STATUS_COLOURS = {"OK": "#2e7d32", "NO_EVIDENCE": "#f9a825", "FAILED": "#c62828"}
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:62rem;color:#222}
h1{font-size:1.5rem}h2{font-size:1.25rem;margin-top:2.5rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem}table{border-collapse:collapse;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555}
"""


def render_report(
    rows: Sequence[ValidationRow],
    feedback: Sequence[FeedbackRow],
    *,
    since: datetime,
    until: datetime,
    generated_at: datetime | None = None,
) -> str:
    """The report as one HTML document."""
    generated = generated_at or datetime.now(UTC)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>groundlock audit report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>groundlock audit report</h1>",
        f"<p>Requests recorded from <b>{_e(since.isoformat())}</b> to "
        f"<b>{_e(until.isoformat())}</b> (UTC). Generated {_e(generated.isoformat())}.</p>",
        _summary(rows, feedback),
    ]
    by_policy: dict[str, list[ValidationRow]] = defaultdict(list)
    for row in rows:
        by_policy[row.policy_version or "(no policy: input refused before assembly)"].append(row)
    parts.extend(_policy_section(p, by_policy[p], since, until) for p in sorted(by_policy))
    if not rows:
        parts.append("<p>No request was recorded in this range.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _summary(rows: Sequence[ValidationRow], feedback: Sequence[FeedbackRow]) -> str:
    statuses = Counter(row.status for row in rows)
    ratings = [item.rating for item in feedback]
    mean = f"{statistics.fmean(ratings):.2f}" if ratings else "n/a"
    return "<h2>Summary</h2>" + _table(
        ["Requests", "OK", "NO_EVIDENCE", "FAILED", "Feedback", "Mean rating"],
        [
            [
                str(len(rows)),
                *(str(statuses[s]) for s in _STATUS_COLOURS),
                str(len(ratings)),
                mean,
            ]
        ],
    )


def _policy_section(
    policy: str, rows: list[ValidationRow], since: datetime, until: datetime
) -> str:
    failures = Counter(row.failure_reason for row in rows if row.failure_reason)
    latency = [row.latency_ms for row in rows if row.attempts > 0]
    tokens = [row.total_tokens for row in rows if row.total_tokens]
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
            _distribution(latency, "ms"),
            "<h3>Total tokens per request</h3>",
            _distribution([float(t) for t in tokens], "tokens"),
        ]
    )


def _failures_over_time(
    rows: list[ValidationRow], totals: Counter[str], since: datetime, until: datetime
) -> str:
    """A table: one row per period with failures, one column per reason (most common first)."""
    bucket = _bucket(since, until)
    start = _floor(since, bucket)
    reasons = [reason for reason, _ in totals.most_common()]
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


def _status_chart(rows: list[ValidationRow], since: datetime, until: datetime) -> str:
    bucket = _bucket(since, until)
    start = _floor(since, bucket)
    buckets = max(1, math.ceil((until - start) / bucket))
    counts: list[Counter[str]] = [Counter() for _ in range(buckets)]
    for row in rows:
        index = int((row.timestamp_utc - start) / bucket)
        if 0 <= index < buckets:
            counts[index][row.status] += 1
    peak = max((sum(c.values()) for c in counts), default=0) or 1
    width, height = 720, 200
    bar = width / buckets
    shapes = []
    for index, counter in enumerate(counts):
        y = float(height)
        for status, colour in _STATUS_COLOURS.items():
            size = counter[status] * (height - 10) / peak
            if size:
                y -= size
                shapes.append(
                    f"<rect x='{index * bar:.1f}' y='{y:.1f}' width='{max(bar - 1, 0.5):.1f}' "
                    f"height='{size:.1f}' fill='{colour}'><title>"
                    f"{_e((start + index * bucket).isoformat())} {status}: {counter[status]}"
                    "</title></rect>"
                )
    unit = {timedelta(hours=1): "hour", timedelta(days=1): "day", timedelta(days=7): "week"}.get(
        bucket, f"{bucket.days} days"
    )
    legend = "".join(
        f"<span style='background:{colour}'></span>{status}"
        for status, colour in _STATUS_COLOURS.items()
    )
    return (
        f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"role='img' aria-label='requests per {unit} by status'>"
        f"<rect width='{width}' height='{height}' fill='#fafafa'/>{''.join(shapes)}</svg>"
        f"<figcaption class='legend'>Requests per {unit} (peak {peak}).{legend}</figcaption>"
        "</figure>"
    )


def _distribution(values: list[float], unit: str) -> str:
    if not values:
        return "<p>No values.</p>"
    ordered = sorted(values)
    stats = _table(
        ["Count", "p50", "p90", "p99", "Max"],
        [
            [
                str(len(ordered)),
                *(f"{_percentile(ordered, p):.1f}" for p in (50, 90, 99)),
                f"{ordered[-1]:.1f}",
            ]
        ],
    )
    bins = 30
    low, high = ordered[0], ordered[-1]
    step = (high - low) / bins or 1.0
    counts = [0] * bins
    for value in ordered:
        counts[min(bins - 1, int((value - low) / step))] += 1
    peak = max(counts)
    width, height = 720, 140
    bar = width / bins
    shapes = "".join(
        f"<rect x='{i * bar:.1f}' y='{height - n * (height - 10) / peak:.1f}' "
        f"width='{bar - 1:.1f}' height='{n * (height - 10) / peak:.1f}' fill='#1565c0'>"
        f"<title>{low + i * step:.1f}-{low + (i + 1) * step:.1f} {unit}: {n}</title></rect>"
        for i, n in enumerate(counts)
        if n
    )
    return (
        stats + f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{width}' "
        f"height='{height}' role='img' aria-label='histogram of {unit}'>"
        f"<rect width='{width}' height='{height}' fill='#fafafa'/>{shapes}</svg>"
        f"<figcaption>Histogram, {low:.1f} to {high:.1f} {unit}.</figcaption></figure>"
    )


def _percentile(ordered: Sequence[float], percent: float) -> float:
    """Nearest-rank percentile: always a value that was observed."""
    rank = max(1, -(-len(ordered) * percent // 100))
    return ordered[int(rank) - 1]


def _floor(moment: datetime, bucket: timedelta) -> datetime:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return day if bucket >= timedelta(days=1) else moment.replace(minute=0, second=0, microsecond=0)


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
