"""The audit-trail commands: ``records list|show|compact|vacuum`` and ``feedback``.

They read and maintain the store named by ``--store`` (or ``$GROUNDLOCK_STORE``). ``show``
and ``feedback`` exit 1 when the request left no record, so a script can tell "not there"
from "done"; a ``list`` that matches nothing is still a success.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from groundlock.cli._shared import (
    Parser,
    UsageError,
    open_store,
    range_options,
    store_option,
    table_lines,
    where,
)
from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.audit_rows import EvidenceRow, FeedbackRow, QueryRow, ValidationRow
from groundlock.core.firewall.parsed import parse_answer
from groundlock.policies.ruleset import load_ruleset
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.delta import sql_text

__all__ = ["add_commands"]

_LIST_COLUMNS = ("timestamp_utc", "request_id", "run_id", "status", "failure_reason",
                 "policy_version", "citation_count", "latency_ms")  # fmt: skip


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``records`` (with its actions) and ``feedback`` to the command line."""
    records = commands.add_parser("records", help="list, show, compact or vacuum audit rows")
    actions = records.add_subparsers(required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list validation rows, newest last")
    store_option(listing)
    listing.add_argument("--status", choices=["OK", "NO_EVIDENCE", "FAILED"])
    listing.add_argument("--failure-reason", metavar="CODE")
    listing.add_argument("--policy-version", metavar="NAME")
    range_options(listing)
    listing.add_argument("--limit", type=int, default=100, help="at most N rows (default 100)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", help="one request's whole audit record")
    show.add_argument("request_id")
    store_option(show)
    show.add_argument(
        "--archive",
        default=os.environ.get("GROUNDLOCK_ARCHIVE"),
        help="the evidence archive, to quote rejected sentences (default $GROUNDLOCK_ARCHIVE)",
    )
    show.set_defaults(handler=_show)

    compact = actions.add_parser("compact", help="merge small files (rows unchanged)")
    store_option(compact)
    compact.set_defaults(handler=_compact)

    vacuum = actions.add_parser("vacuum", help="delete unreferenced files past retention")
    store_option(vacuum)
    vacuum.add_argument("--retention-hours", type=int, default=168)
    vacuum.add_argument("--apply", action="store_true", help="delete (default: dry run)")
    vacuum.set_defaults(handler=_vacuum)

    feedback = commands.add_parser("feedback", help="record a rating of one answer")
    feedback.add_argument("request_id")
    feedback.add_argument("--rating", type=int, required=True, help="1 (wrong) to 5 (right)")
    feedback.add_argument("--comment")
    store_option(feedback)
    feedback.set_defaults(handler=_feedback)


def _list(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 1_000_000:
        raise UsageError("--limit must be between 1 and 1,000,000")
    if args.since and args.until and args.since >= args.until:
        raise UsageError("--since must be before --until")
    store = open_store(args)
    rows = store.select(
        ValidationRow, where(args), order_by="timestamp_utc DESC", limit=args.limit
    )[::-1]
    if args.json:
        for row in rows:
            sys.stdout.write(row.model_dump_json() + "\n")
        return 0
    table = [[_cell(getattr(row, column)) for column in _LIST_COLUMNS] for row in rows]
    for line in table_lines(list(_LIST_COLUMNS), table):
        sys.stdout.write(line + "\n")
    sys.stdout.write(f"{len(rows)} row(s)\n")
    return 0


def _show(args: argparse.Namespace) -> int:
    store = open_store(args)
    condition = f"request_id = {sql_text(args.request_id)}"
    record: dict[str, Any] = {
        name: [json.loads(row.model_dump_json()) for row in store.select(row_type, condition)]
        for name, row_type in (
            ("validations", ValidationRow), ("queries", QueryRow), ("feedback", FeedbackRow),
        )
    }  # fmt: skip
    if not record["validations"] and not record["queries"]:
        sys.stderr.write(f"groundlock: no audit record for request {args.request_id!r}\n")
        return 1
    rejections = _rejections(
        [ValidationRow.model_validate(v, strict=False) for v in record["validations"]],
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
        archive = EvidenceArchive(archive_uri)
        if archive.exists():
            archived = {row.run_id or "": row for row in archive.select(condition)}
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


def _compact(args: argparse.Namespace) -> int:
    for table, metrics in open_store(args).compact().items():
        added, removed = metrics.get("numFilesAdded", 0), metrics.get("numFilesRemoved", 0)
        sys.stdout.write(f"{table}: {removed} file(s) compacted into {added}\n")
    return 0


def _vacuum(args: argparse.Namespace) -> int:
    store = open_store(args)
    deleted = store.vacuum(args.retention_hours, dry_run=not args.apply)
    verb = "deleted" if args.apply else "would delete"
    for table, files in deleted.items():
        sys.stdout.write(f"{table}: {verb} {len(files)} file(s)\n")
    return 0


def _feedback(args: argparse.Namespace) -> int:
    store = open_store(args)
    condition = f"request_id = {sql_text(args.request_id)}"
    if not store.select(ValidationRow, condition, limit=1):
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
