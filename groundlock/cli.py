"""The ``groundlock`` command: serving and the audit trail from a shell.

``groundlock serve`` serves the chain over HTTP; ``groundlock records`` lists, filters and
shows audit rows, and compacts and vacuums the tables; ``groundlock feedback`` records a
reader's rating; ``groundlock report`` writes the auditors' HTML report. The store is
``--store URI`` or ``$GROUNDLOCK_STORE``; object-store credentials come from the
environment, where delta-rs looks for them.

Exit codes (``002``'s convention): 0 done (a list that matches nothing included), 1 the
operation failed or ``show``/``feedback`` found no record of the request, 2 a usage error.
Reads go through delta-rs's own query engine, never pyarrow, which can abort at interpreter
exit after a read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from groundlock.stores.delta import AuditUnavailable, DeltaAuditStore, sql_text
from groundlock.stores.report import render_report
from groundlock.stores.rows import FeedbackRow, QueryRow, ValidationRow

__all__ = ["main"]

_LIST_COLUMNS = ("timestamp_utc", "request_id", "run_id", "status", "failure_reason",
                 "policy_version", "citation_count", "latency_ms")  # fmt: skip


class _UsageError(Exception):
    """Bad arguments or input: exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"groundlock: error: {message}\n")
        raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.handler(args))
    except _UsageError as exc:
        sys.stderr.write(f"groundlock: error: {exc}\n")
        return 2
    except (AuditUnavailable, ValueError) as exc:
        sys.stderr.write(f"groundlock: {exc}\n")
        return 1
    except Exception as exc:  # noqa: BLE001  (no traceback for the operator; the kind only)
        sys.stderr.write(f"groundlock: the audit store failed ({type(exc).__name__})\n")
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="groundlock", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    records = commands.add_parser("records", help="list, show, compact or vacuum audit rows")
    actions = records.add_subparsers(required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list validation rows, newest last")
    _store_option(listing)
    listing.add_argument("--status", choices=["OK", "NO_EVIDENCE", "FAILED"])
    listing.add_argument("--failure-reason", metavar="CODE")
    listing.add_argument("--policy-version", metavar="NAME")
    _range_options(listing)
    listing.add_argument("--limit", type=int, default=100, help="at most N rows (default 100)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", help="one request's whole audit record")
    show.add_argument("request_id")
    _store_option(show)
    show.set_defaults(handler=_show)

    compact = actions.add_parser("compact", help="merge small files (rows unchanged)")
    _store_option(compact)
    compact.set_defaults(handler=_compact)

    vacuum = actions.add_parser("vacuum", help="delete unreferenced files past retention")
    _store_option(vacuum)
    vacuum.add_argument("--retention-hours", type=int, default=168)
    vacuum.add_argument("--apply", action="store_true", help="delete (default: dry run)")
    vacuum.set_defaults(handler=_vacuum)

    feedback = commands.add_parser("feedback", help="record a rating of one answer")
    feedback.add_argument("request_id")
    feedback.add_argument("--rating", type=int, required=True, help="1 (wrong) to 5 (right)")
    feedback.add_argument("--comment")
    _store_option(feedback)
    feedback.set_defaults(handler=_feedback)

    serve = commands.add_parser("serve", help="serve the chain over HTTP (LangServe, uvicorn)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="worker processes (forked)")
    serve.add_argument("--model", help="provider:model (default: the offline model)")
    serve.add_argument("--policy", help="policy version (default R2_POLICY_V1)")
    _store_option(serve)
    serve.set_defaults(handler=_serve)

    report = commands.add_parser("report", help="write the auditors' HTML report")
    _store_option(report)
    _range_options(report)
    report.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    report.set_defaults(handler=_report)
    return parser


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", default=os.environ.get("GROUNDLOCK_STORE"),
        help="the audit store's path or URI (default $GROUNDLOCK_STORE)",
    )  # fmt: skip


def _range_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", type=_timestamp, help="ISO date or time, UTC if no zone")
    parser.add_argument("--until", type=_timestamp, help="ISO date or time, UTC if no zone")


_EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def _timestamp(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"not an ISO date or time: {text!r}") from None
    if not _EARLIEST <= moment <= _LATEST:
        raise argparse.ArgumentTypeError(f"outside the years 1900 to 9000: {text!r}")
    return moment


def _store(args: argparse.Namespace) -> DeltaAuditStore:
    if not args.store:
        raise _UsageError("no store: pass --store URI or set GROUNDLOCK_STORE")
    # The vacuum minimum comes from configuration ($GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS),
    # never from the command line that asks for the vacuum.
    return DeltaAuditStore(args.store)


def _where(args: argparse.Namespace) -> str:
    conditions = []
    for column in ("status", "failure_reason", "policy_version"):
        value = getattr(args, column, None)
        if value:
            conditions.append(f"{column} = {sql_text(value)}")
    if args.since:
        conditions.append(f"timestamp_utc >= {_sql_time(args.since)}")
    if args.until:
        conditions.append(f"timestamp_utc < {_sql_time(args.until)}")
    return " AND ".join(conditions)


def _sql_time(moment: datetime) -> str:
    return f"TIMESTAMP {sql_text(moment.astimezone(UTC).replace(tzinfo=None).isoformat() + 'Z')}"


def _list(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 1_000_000:
        raise _UsageError("--limit must be between 1 and 1,000,000")
    if args.since and args.until and args.since >= args.until:
        raise _UsageError("--since must be before --until")
    store = _store(args)
    rows = store.select(
        ValidationRow, _where(args), order_by="timestamp_utc DESC", limit=args.limit
    )[::-1]
    if args.json:
        for row in rows:
            sys.stdout.write(row.model_dump_json() + "\n")
        return 0
    table = [[_cell(getattr(row, column)) for column in _LIST_COLUMNS] for row in rows]
    _print_table(list(_LIST_COLUMNS), table)
    sys.stdout.write(f"{len(rows)} row(s)\n")
    return 0


def _show(args: argparse.Namespace) -> int:
    store = _store(args)
    where = f"request_id = {sql_text(args.request_id)}"
    record: dict[str, Any] = {
        name: [json.loads(row.model_dump_json()) for row in store.select(row_type, where)]
        for name, row_type in (
            ("validations", ValidationRow), ("queries", QueryRow), ("feedback", FeedbackRow),
        )
    }  # fmt: skip
    if not record["validations"] and not record["queries"]:
        sys.stderr.write(f"groundlock: no audit record for request {args.request_id!r}\n")
        return 1
    sys.stdout.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return 0


def _compact(args: argparse.Namespace) -> int:
    for table, metrics in _store(args).compact().items():
        added, removed = metrics.get("numFilesAdded", 0), metrics.get("numFilesRemoved", 0)
        sys.stdout.write(f"{table}: {removed} file(s) compacted into {added}\n")
    return 0


def _vacuum(args: argparse.Namespace) -> int:
    store = _store(args)
    deleted = store.vacuum(args.retention_hours, dry_run=not args.apply)
    verb = "deleted" if args.apply else "would delete"
    for table, files in deleted.items():
        sys.stdout.write(f"{table}: {verb} {len(files)} file(s)\n")
    return 0


def _feedback(args: argparse.Namespace) -> int:
    store = _store(args)
    where = f"request_id = {sql_text(args.request_id)}"
    if not store.select(ValidationRow, where, limit=1):
        sys.stderr.write(f"groundlock: no audit record for request {args.request_id!r}\n")
        return 1
    try:
        row = store.add_feedback(args.request_id, args.rating, args.comment)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise _UsageError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    sys.stdout.write(f"feedback {row.record_id} recorded for {args.request_id}\n")
    return 0


def _report(args: argparse.Namespace) -> int:
    store = _store(args)
    until = args.until or datetime.now(UTC)
    since = args.since or until - timedelta(days=7)
    if since >= until:
        raise _UsageError("--since must be before --until")
    args.since, args.until = since, until
    rows = store.select(ValidationRow, _where(args))
    window = f"timestamp_utc >= {_sql_time(since)} AND timestamp_utc < {_sql_time(until)}"
    feedback = store.select(FeedbackRow, window)
    try:
        args.out.write_text(
            render_report(rows, feedback, since=since, until=until), encoding="utf-8"
        )
    except OSError as exc:
        raise _UsageError(f"cannot write {args.out}: {exc.strerror}") from None
    sys.stdout.write(f"report of {len(rows)} request(s) written to {args.out}\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import uvicorn  # noqa: PLC0415  (only this command needs the server)

    if not 1 <= args.port <= 65535 or args.workers < 1:
        raise _UsageError("--port must be 1-65535 and --workers at least 1")
    # Each worker builds its app from the environment (uvicorn's factory), after the fork:
    # delta-rs and the audit writer must not be created in the parent.
    for name, value in (
        ("GROUNDLOCK_MODEL", args.model),
        ("GROUNDLOCK_POLICY", args.policy),
        ("GROUNDLOCK_STORE", args.store),
    ):
        if value:
            os.environ[name] = value
    uvicorn.run(
        "groundlock.serve.app:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="warning",
    )
    return 0


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    for line in [header, *rows]:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + "\n")


if __name__ == "__main__":
    sys.exit(main())
