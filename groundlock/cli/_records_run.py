"""What ``records list|show|compact|vacuum`` and ``feedback`` do (:mod:`~groundlock.cli.records`).

Apart from the parser so that ``groundlock --help`` does not load the row models, the
firewall's parser or the rulesets: this module is imported when one of them runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groundlock.cli._shared import (
    UsageError,
    check_location,
    open_archive,
    open_store,
    table_lines,
    trail_query,
)
from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.audit_rows import (
    EvidenceRow,
    FeedbackRow,
    QueryRow,
    TableRow,
    ValidationRow,
)
from groundlock.core.firewall.parsed import parse_answer
from groundlock.policies.ruleset import load_ruleset
from groundlock.stores.readers import InvalidRow, sql_text
from groundlock.stores.sink import AuditUnavailable, TrailQuery

__all__ = [
    "checkpoint",
    "compact",
    "list_rows",
    "record_feedback",
    "show_record",
    "vacuum",
    "verify",
]

_LIST_COLUMNS = ("timestamp_utc", "request_id", "run_id", "status", "failure_reason",
                 "policy_version", "citation_count", "latency_ms")  # fmt: skip


def list_rows(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 1_000_000:
        raise UsageError("--limit must be between 1 and 1,000,000")
    if args.since and args.until and args.since >= args.until:
        raise UsageError("--since must be before --until")
    store = open_store(args)
    # One row more than asked: whether the listing is cut, and then say so.
    query = replace(trail_query(args), newest_first=True, limit=args.limit + 1)
    newest = store.rows(ValidationRow, query)
    cut = len(newest) > args.limit
    rows = newest[: args.limit][::-1]
    more = (
        f"more rows match: only the newest {args.limit} {'is' if args.limit == 1 else 'are'} "
        "shown; see more with "
        "--limit N, or fewer with --since/--until/--status/--failure-reason"
    )
    if args.json:
        for row in rows:
            sys.stdout.write(_json_line(row) + "\n")
        if cut:  # (not on stdout: every line there is a row)
            sys.stderr.write(f"groundlock: {more}\n")
        return 0
    table = [_cells(row) for row in rows]
    for line in table_lines(list(_LIST_COLUMNS), table):
        sys.stdout.write(line + "\n")
    invalid = [row for row in rows if isinstance(row, InvalidRow)]
    for row in invalid:
        sys.stdout.write(f"! {row.describe()}\n")
    flagged = f", {len(invalid)} breaking the row model (marked !)" if invalid else ""
    sys.stdout.write(f"{len(rows)} row(s){flagged}\n")
    if cut:
        sys.stdout.write(f"{more}\n")
    return 0


def _cells(row: ValidationRow | InvalidRow) -> list[str]:
    """A row as the ``list`` table shows it; a value that breaks the model is marked ``!``."""
    if not isinstance(row, InvalidRow):
        return [_cell(getattr(row, column)) for column in _LIST_COLUMNS]
    return [
        _cell(row.get(column)) + ("!" if column in row.fields else "") for column in _LIST_COLUMNS
    ]


def _json_line(row: TableRow | InvalidRow) -> str:
    """A row as one JSON object; one that breaks its model as read, with its ``problems``."""
    if not isinstance(row, InvalidRow):
        return row.model_dump_json()
    return json.dumps(_jsonable(row), ensure_ascii=False, separators=(",", ":"))


def _jsonable(row: InvalidRow) -> dict[str, Any]:
    """An invalid row's values as JSON holds them (a NaN as ``"NaN"``), and its problems."""
    values: dict[str, Any] = {}
    for name, value in row.values.items():
        if isinstance(value, datetime):
            values[name] = value.isoformat().replace("+00:00", "Z")
        elif isinstance(value, float) and not math.isfinite(value):
            values[name] = str(value).replace("nan", "NaN").replace("inf", "Infinity")
        else:
            values[name] = value
    return {**values, "problems": list(row.problems)}


def show_record(args: argparse.Namespace) -> int:
    # The archive is opened only to quote a rejection: checked now, or a location no
    # archive can have would pass unnoticed whenever there is nothing to quote.
    check_location(args.archive, "--archive")
    store = open_store(args)
    if args.archive and not open_archive(args.archive).exists():
        # As replay refuses it (exit 1): an archive named but absent is a mistake to
        # report, not "the sentence text is not archived".
        raise AuditUnavailable("the evidence archive does not exist")
    condition = f"request_id = {sql_text(args.request_id)}"  # (for the archive)
    asked = TrailQuery(request_ids=(args.request_id,))
    read: dict[str, list[Any]] = {
        name: store.rows(row_type, asked)
        for name, row_type in (
            ("validations", ValidationRow), ("queries", QueryRow), ("feedback", FeedbackRow),
        )
    }  # fmt: skip
    # A row that breaks its model is shown as read, with its problems, never dropped.
    record: dict[str, Any] = {
        name: [json.loads(_json_line(row)) for row in rows] for name, rows in read.items()
    }
    if not record["validations"] and not record["queries"]:
        sys.stderr.write(f"groundlock: no audit record for request {args.request_id!r}\n")
        return 1
    rejections = _rejections(
        [row for row in read["validations"] if isinstance(row, ValidationRow)],
        args.archive,
        condition,
    )
    if rejections:
        record["rejected_sentences"] = rejections
    sys.stdout.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return 0


def _rejections(
    validations: list[ValidationRow], archive_uri: str | None, condition: str
) -> list[dict[str, Any]]:
    """For each FAILED run's findings: the rule, its reason and the sentence it fired on.

    The trail holds only the sentence's number (it never quotes a refused answer); its
    text comes from the evidence archive's raw model text, segmented by the ruleset's own
    segmenter exactly as R5 did, so number ``n`` is R5's sentence ``n``.
    """
    failed = [v for v in validations if v.validation_status == "FAILED" and v.firewall_findings]
    if not failed:
        return []
    archived: dict[str, EvidenceRow] = {}
    if archive_uri:
        archived = {
            row.run_id or "": row
            for row in open_archive(archive_uri).read(condition)
            if isinstance(row, EvidenceRow)  # (one that breaks its model quotes nothing)
        }
    out = []
    for row in failed:
        evidence = archived.get(row.run_id or "")
        sentences = _sentences(evidence, row.firewall_ruleset) if evidence else None
        for label in row.firewall_findings or ():
            rule, reason, mode, where = label.rsplit(":", 3)
            number = None if where == "-" else int(where)
            entry: dict[str, Any] = {
                "run_id": row.run_id, "rule": rule, "reason": reason, "mode": mode,
                "sentence": number,
            }  # fmt: skip
            if sentences is None:
                entry["text"] = None
                entry["note"] = "the sentence text is not archived"
            elif number is None:
                entry["text"] = None
                entry["note"] = "the finding is about the whole answer"
            else:
                entry["text"] = sentences.get(number)
            out.append(entry)
    return out


def _sentences(evidence: EvidenceRow, ruleset_name: str | None) -> dict[int, str]:
    """The archived answer's sentences by R5's 1-based number, as R5 segmented them."""
    bundle = AnswerBundle.model_validate_json(evidence.answer_bundle_json)
    ruleset = load_ruleset(ruleset_name or "firewall_v1")
    entries = {e.anchor: e for e in bundle.selected_evidence}
    grammar = ruleset.grammar.bound(bundle.selected_evidence)
    parsed = parse_answer(evidence.raw_model_text, entries, grammar, ruleset.segmenter)
    return {sentence.number: sentence.raw for sentence in parsed.sentences}


def compact(args: argparse.Namespace) -> int:
    for table, metrics in open_store(args).compact().items():
        added, removed = metrics.get("numFilesAdded", 0), metrics.get("numFilesRemoved", 0)
        sys.stdout.write(f"{table}: {removed} file(s) compacted into {added}\n")
    return 0


def vacuum(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.retention_hours < store.min_vacuum_retention_hours:
        # A usage error like any other (exit 2), before the store is touched.
        raise UsageError(
            f"--retention-hours {args.retention_hours} is below the configured minimum of "
            f"{store.min_vacuum_retention_hours} h (GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS)"
        )
    deleted = store.vacuum(args.retention_hours, dry_run=not args.apply)
    verb = "deleted" if args.apply else "would delete"
    for table, files in deleted.items():
        sys.stdout.write(f"{table}: {verb} {len(files)} file(s)\n")
    return 0


def verify(args: argparse.Namespace) -> int:
    """Exit 0 when every chained table verifies (and the checkpoint holds), else 1."""
    from groundlock.stores.verify import (  # noqa: PLC0415
        check_checkpoint,
        waive_covered_truncation,
    )

    if bool(args.key_file) != bool(args.checkpoint):
        raise UsageError("--key-file and --checkpoint go together")
    reports = _verify_store(args, since=args.since)
    signed = _signed(args.checkpoint) if args.checkpoint else None
    if signed is not None:
        waive_covered_truncation(signed, _key(args.key_file), reports)
    findings = [finding for report in reports for finding in report.findings]
    if signed is not None:
        findings += check_checkpoint(signed, _key(args.key_file), reports)
    for report in reports:
        sys.stdout.write(report.summary() + "\n")
    for finding in findings:
        sys.stdout.write(finding.line() + "\n")
    if args.checkpoint and not findings:
        sys.stdout.write("checkpoint: signature valid; the history holds every signed head\n")
    return 1 if findings else 0


def _signed(path: str) -> dict[str, Any]:
    """The checkpoint file's contents; a usage error when it is not one."""
    try:
        signed = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--checkpoint cannot be read ({type(exc).__name__})") from None
    if not isinstance(signed, dict):
        raise UsageError("--checkpoint is not a checkpoint")
    return signed


def checkpoint(args: argparse.Namespace) -> int:
    """Verify the whole trail, then write its heads, signed, to ``--checkpoint``."""
    from groundlock.stores.verify import make_checkpoint  # noqa: PLC0415

    if not args.key_file or not args.checkpoint:
        raise UsageError("records checkpoint needs --key-file and --checkpoint")
    target = Path(args.checkpoint)
    if target.exists():
        raise UsageError("--checkpoint exists: a checkpoint is never overwritten")
    key = _key(args.key_file)
    reports = _verify_store(args, since=0)
    for report in reports:
        sys.stdout.write(report.summary() + "\n")
    try:
        signed = make_checkpoint(reports, key)
    except ValueError as exc:
        for report in reports:
            for finding in report.findings:
                sys.stdout.write(finding.line() + "\n")
        sys.stderr.write(f"groundlock: {exc}\n")
        return 1
    target.write_text(json.dumps(signed, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"checkpoint written: {len(signed['tables'])} table head(s) signed\n")
    return 0


def _verify_store(args: argparse.Namespace, *, since: int) -> list[Any]:
    from groundlock.stores.verify import verify_store  # noqa: PLC0415

    return verify_store(open_store(args), since=since)


def _key(path: str) -> bytes:
    """The key file's bytes, stripped of a trailing newline; never echoed."""
    try:
        key = Path(path).read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise UsageError(f"--key-file cannot be read ({type(exc).__name__})") from None
    if len(key) < 16:
        raise UsageError("--key-file holds fewer than 16 bytes: too short a key")
    return key


def record_feedback(args: argparse.Namespace) -> int:
    store = open_store(args)
    if not store.rows(ValidationRow, TrailQuery(request_ids=(args.request_id,), limit=1)):
        sys.stderr.write(f"groundlock: no audit record for request {args.request_id!r}\n")
        return 1
    try:
        row = store.add_feedback(args.request_id, args.rating, args.comment)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise UsageError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    sys.stdout.write(f"feedback {row.record_id} recorded for {args.request_id}\n")
    return 0


def _cell(value: object) -> str:
    """A value as the ``list`` table shows it: to the second, one decimal, ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)
