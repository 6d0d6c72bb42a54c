"""What more than one command module needs: the parser class, usage errors, common options.

Kept apart from the package's ``__init__`` so that the command modules never import the
module that imports them: ``groundlock.cli`` assembles the parser from
:mod:`~groundlock.cli.chain`, :mod:`~groundlock.cli.records` and
:mod:`~groundlock.cli.report`, and all three take their shared pieces from here.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import UTC, datetime
from typing import NoReturn

from groundlock.stores import DeltaAuditStore
from groundlock.stores.delta import sql_text
from groundlock.stores.location import delta_location

__all__ = [
    "Parser",
    "UsageError",
    "check_location",
    "open_store",
    "range_options",
    "sql_time",
    "store_option",
    "table_lines",
    "where",
]


class UsageError(Exception):
    """Bad arguments or input: exit 2."""


_REST_ROLE = re.compile(r":[a-z]+:`~?(?:[\w.]+\.)?([^`]+)`")
_REST_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """``text`` without the reST markup of the docstrings it comes from (``x``, :mod:`~a.x`)."""
    return _REST_LITERAL.sub(r"\1", _REST_ROLE.sub(r"\1", text))


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors name the command, as every other error does.

    Its help is plain text: descriptions come from docstrings, written in reST.
    """

    def format_help(self) -> str:
        """The help, its reST markup removed."""
        return plain(super().format_help())

    def error(self, message: str) -> NoReturn:
        """Print the usage and the message, then exit 2 (argparse's code for bad usage)."""
        self.print_usage(sys.stderr)
        sys.stderr.write(f"groundlock: error: {message}\n")
        raise SystemExit(2)


def store_option(parser: argparse.ArgumentParser, *, default: str | None = "env") -> None:
    """Add ``--store``: from ``$GROUNDLOCK_STORE`` by default, or optional (``default=None``).

    The audit commands need a store and fall back on the environment; ``ask`` records only
    when told to, so a stray ``$GROUNDLOCK_STORE`` does not make it write an audit trail.
    """
    if default == "env":
        default = os.environ.get("GROUNDLOCK_STORE")
        hint = "the audit store's path or URI (default $GROUNDLOCK_STORE)"
    else:
        hint = "record each request in this audit store (default: none)"
    parser.add_argument("--store", default=default, help=hint)


def range_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--since`` and ``--until``, checked while parsing (a bad time is exit 2)."""
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


def check_location(location: str | None, option: str) -> None:
    """Refuse a location no store could open (exit 2) before a command does any work.

    A command that writes or reads its store, archive, index or log only at the end (after
    every item of a gold set is answered, or only when there is something to quote) would
    otherwise refuse it after the work, or never. None or empty is left to the command.
    """
    if not location:
        return
    try:
        delta_location(location)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def open_store(args: argparse.Namespace) -> DeltaAuditStore:
    """The store named by ``--store`` (or the environment).

    None at all, a location no store can have, or a bad setting in the environment is a
    usage error (exit 2).
    """
    if not args.store:
        raise UsageError("no store: pass --store URI or set GROUNDLOCK_STORE")
    # The vacuum minimum comes from configuration ($GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS),
    # never from the command line that asks for the vacuum.
    check_location(args.store, "--store")
    try:
        return DeltaAuditStore(args.store)  # (touches nothing: a refusal comes before any work)
    except ValueError as exc:  # a bad setting, such as $GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS
        raise UsageError(str(exc)) from None


def where(args: argparse.Namespace) -> str:
    """The SQL condition for the filters and the time range given on the command line."""
    conditions = []
    for column in ("status", "failure_reason", "policy_version"):
        value = getattr(args, column, None)
        if value:
            conditions.append(f"{column} = {sql_text(value)}")
    if args.since:
        conditions.append(f"timestamp_utc >= {sql_time(args.since)}")
    if args.until:
        conditions.append(f"timestamp_utc < {sql_time(args.until)}")
    return " AND ".join(conditions)


def sql_time(moment: datetime) -> str:
    """A SQL timestamp literal, in UTC (the tables store UTC)."""
    return f"TIMESTAMP {sql_text(moment.astimezone(UTC).replace(tzinfo=None).isoformat() + 'Z')}"


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A plain-text table, each column as wide as its widest cell, no trailing spaces."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    ]
