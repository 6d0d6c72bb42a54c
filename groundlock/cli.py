"""The ``groundlock`` command: serving and the audit trail from a shell.

``groundlock ask`` answers a bundle (or a JSONL batch of them); ``groundlock validate``
judges an existing answer without any model; ``groundlock serve`` serves the chain over
HTTP; ``groundlock records`` lists, filters and
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
import dataclasses
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import ValidationError

from groundlock.serve.limits import ServeLimits
from groundlock.stores.delta import AuditUnavailable, DeltaAuditStore, sql_text
from groundlock.stores.report import render_report
from groundlock.stores.rows import FeedbackRow, QueryRow, ValidationRow

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from groundlock.chains.answer import GroundedAnswerChain
    from groundlock.contracts.response import PublicResponse

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
        sys.stderr.write(f"groundlock: failed ({type(exc).__name__})\n")
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="groundlock", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _answer_commands(commands)
    _audit_commands(commands)
    return parser


def _answer_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    ask = commands.add_parser("ask", help="answer a bundle (a JSON file, or stdin)")
    source = ask.add_mutually_exclusive_group()
    source.add_argument("--bundle", type=Path, help="a bundle JSON file (default: stdin)")
    source.add_argument("--batch", type=Path, help="a JSONL file of bundles, one per line")
    ask.add_argument("--json", action="store_true", help="print the PublicResponse as JSON")
    ask.add_argument("--model", help="provider:model (default: the offline model)")
    ask.add_argument("--policy", help="policy version (default: the library's default)")
    ask.add_argument("--concurrency", type=int, default=8, help="with --batch (default 8)")
    _store_option(ask, default=None)
    ask.set_defaults(handler=_ask)

    validate = commands.add_parser(
        "validate", help="judge an existing answer against a bundle, without a model"
    )
    validate.add_argument("--bundle", type=Path, required=True)
    validate.add_argument("--answer-file", type=Path, required=True)
    validate.add_argument("--policy", help="policy version (default: the library's default)")
    validate.set_defaults(handler=_validate)

    serve = commands.add_parser("serve", help="serve the chain over HTTP (LangServe, uvicorn)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="worker processes (forked)")
    serve.add_argument("--model", help="provider:model (default: the offline model)")
    serve.add_argument("--policy", help="policy version (default: the library's default)")
    _store_option(serve)
    for field in dataclasses.fields(ServeLimits):
        serve.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=float if field.name.endswith("seconds") else int,
            help=f"(default {field.default}; env GROUNDLOCK_{field.name.upper()})",
        )
    serve.set_defaults(handler=_serve)


def _audit_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
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

    report = commands.add_parser("report", help="write the auditors' HTML report")
    _store_option(report)
    _range_options(report)
    report.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    report.set_defaults(handler=_report)


def _store_option(parser: argparse.ArgumentParser, *, default: str | None = "env") -> None:
    if default == "env":
        default = os.environ.get("GROUNDLOCK_STORE")
        hint = "the audit store's path or URI (default $GROUNDLOCK_STORE)"
    else:
        hint = "record each request in this audit store (default: none)"
    parser.add_argument("--store", default=default, help=hint)


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


def _read_json(path: Path | None) -> object:
    """The bundle from a file or stdin; unreadable input is a usage error (exit 2)."""
    try:
        text = sys.stdin.read() if path is None or str(path) == "-" else path.read_text("utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"cannot read {path or 'stdin'}: {type(exc).__name__}") from None
    except (ValueError, RecursionError) as exc:  # (RecursionError: nested too deep)
        raise _UsageError(f"{path or 'stdin'} is not JSON: {type(exc).__name__}") from None


def _chain_for(args: argparse.Namespace, model: BaseChatModel | None = None) -> GroundedAnswerChain:
    from groundlock.chains.answer import grounded_answer_chain  # noqa: PLC0415
    from groundlock.errors import GroundlockError  # noqa: PLC0415
    from groundlock.policies.loader import DEFAULT_POLICY  # noqa: PLC0415
    from groundlock.providers.chat import ModelPinningError  # noqa: PLC0415

    try:
        return grounded_answer_chain(
            model=model or getattr(args, "model", None) or None,
            policy=args.policy or DEFAULT_POLICY,
            store=getattr(args, "store", None) or None,
        )
    except (GroundlockError, ModelPinningError, ValidationError, ValueError, LookupError) as exc:
        raise _UsageError(f"cannot build the chain: {type(exc).__name__}: {exc}") from None


def _exit_code(status: str) -> int:
    return 1 if status == "FAILED" else 0


def _ask(args: argparse.Namespace) -> int:
    if args.batch is not None:
        return _ask_batch(args)
    bundle = _read_json(args.bundle)
    response = _chain_for(args).invoke(bundle)
    if args.json:
        sys.stdout.write(response.model_dump_json(indent=2) + "\n")
    else:
        _print_response(response)
    return _exit_code(response.status.value)


def _print_response(response: PublicResponse) -> None:
    if response.status.value == "FAILED":
        detail = f": {response.failure_message}" if response.failure_message else ""
        reason = response.failure_reason.value if response.failure_reason else "-"
        sys.stdout.write(f"FAILED {reason}{detail}\n")
        return
    sys.stdout.write(response.answer + "\n")
    for number, citation in enumerate(response.citations, start=1):
        details = ", ".join(
            part
            for part in (citation.source_reference, citation.event_date, citation.equipment_id)
            if part
        )
        sys.stdout.write(f"  {number}. [{citation.anchor}] {citation.knowledge_id}")
        sys.stdout.write(f" ({details})\n" if details else "\n")


def _ask_batch(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor, as_completed  # noqa: PLC0415

    if not 1 <= args.concurrency <= 256:
        raise _UsageError("--concurrency must be between 1 and 256")
    try:
        lines = args.batch.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"cannot read {args.batch}: {type(exc).__name__}") from None
    bundles: list[object] = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                bundles.append(json.loads(line))
            except (ValueError, RecursionError):
                raise _UsageError(f"{args.batch}:{number} is not JSON") from None
    chain = _chain_for(args)
    results: list[Any] = [None] * len(bundles)
    seconds: list[float] = [0.0] * len(bundles)

    def answer(index: int) -> int:
        started = time.perf_counter()
        results[index] = chain.invoke(bundles[index])
        seconds[index] = time.perf_counter() - started
        return index

    with ThreadPoolExecutor(args.concurrency) as pool:
        for done, future in enumerate(
            as_completed(pool.submit(answer, i) for i in range(len(bundles))), start=1
        ):
            index = future.result()
            if args.json:
                sys.stdout.write(results[index].model_dump_json() + "\n")
            _progress(done, len(bundles))
    sys.stderr.write("\n")
    _summary(results, seconds)
    return 1 if any(r.status.value == "FAILED" for r in results) else 0


def _progress(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    sys.stderr.flush()


def _summary(results: list[Any], seconds: list[float]) -> None:
    counts: dict[tuple[str, str], int] = {}
    for response in results:
        key = (
            response.status.value,
            response.failure_reason.value if response.failure_reason else "-",
        )
        counts[key] = counts.get(key, 0) + 1
    rows = [[status, reason, str(n)] for (status, reason), n in sorted(counts.items())]
    out = sys.stderr
    for line in _table_lines(["status", "failure_reason", "requests"], rows):
        out.write(line + "\n")
    if seconds:
        ordered = sorted(seconds)
        pick = [ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] for p in (50, 90, 99)]
        out.write(
            f"latency (s): p50 {pick[0]:.3f}  p90 {pick[1]:.3f}  p99 {pick[2]:.3f}  "
            f"max {ordered[-1]:.3f}  ({len(ordered)} requests)\n"
        )


def _validate(args: argparse.Namespace) -> int:
    from groundlock.providers.replay import ReplayChatModel  # noqa: PLC0415

    bundle = _read_json(args.bundle)
    try:
        answer = args.answer_file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"cannot read {args.answer_file}: {type(exc).__name__}") from None
    chain = _chain_for(args, model=ReplayChatModel(text=answer))
    verdict: Any = bundle
    for step in chain.steps[:4]:  # R2 to R5: the verdict, before packaging
        verdict = step.invoke(verdict)
    reason = verdict.failure_reason.value if verdict.failure_reason else None
    sys.stdout.write(
        json.dumps(
            {
                "request_id": verdict.request_id,
                "validation_status": verdict.validation_status.value,
                "generation_status": verdict.generation_status.value,
                "failure_reason": reason,
                "message": verdict.message,
                "validated_citations": list(verdict.validated_citations),
                "grounding_metrics": verdict.grounding_metrics.model_dump(mode="json"),
            },
            indent=2,
        )
        + "\n"
    )
    return _exit_code(verdict.generation_status.value)


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
        *(
            (f"GROUNDLOCK_{field.name.upper()}", getattr(args, field.name))
            for field in dataclasses.fields(ServeLimits)
        ),
    ):
        if value is not None and value != "":
            os.environ[name] = str(value)
    try:
        ServeLimits.from_env()  # a bad limit is a usage error here, not in every worker
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    # So is a model or policy that cannot be built: tried once here, without the store
    # (delta-rs must not start before the fork).
    _chain_for(argparse.Namespace(model=args.model, policy=args.policy, store=None))
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
    for line in _table_lines(header, rows):
        sys.stdout.write(line + "\n")


def _table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    ]


if __name__ == "__main__":
    sys.exit(main())
