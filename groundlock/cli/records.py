"""The audit-trail commands: ``records list|show|verify|checkpoint|compact|vacuum``, ``feedback``.

They read and maintain the store named by ``--store`` (or ``$GROUNDLOCK_STORE``). ``show``
and ``feedback`` exit 1 when the request left no record, so a script can tell "not there"
from "done"; a ``list`` that matches nothing is still a success.
"""

from __future__ import annotations

import argparse
import os

from groundlock.cli._shared import Parser, deferred, range_options, store_option

__all__ = ["add_commands"]

_RUN = "groundlock.cli._records_run"
"""Where the handlers are: they need the row models and the firewall, the parser does not."""


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``records`` (with its actions) and ``feedback`` to the command line."""
    records = commands.add_parser(
        "records", help="list, show, verify, compact or vacuum audit rows"
    )
    actions = records.add_subparsers(required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list validation rows, newest last")
    store_option(listing)
    listing.add_argument(
        "--status", choices=["OK", "NO_EVIDENCE", "FAILED"], help="only rows of this status"
    )
    listing.add_argument(
        "--failure-reason",
        metavar="CODE",
        help="only rows that failed with this reason (UNCITED_FACTUAL_STATEMENT, ...)",
    )
    listing.add_argument(
        "--policy-version", metavar="NAME", help="only rows answered under this policy"
    )
    range_options(listing)
    listing.add_argument(
        "--limit", type=int, default=100, metavar="N", help="at most N rows (default 100)"
    )
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(handler=deferred(_RUN, "list_rows"))

    show = actions.add_parser("show", help="one request's whole audit record")
    show.add_argument("request_id", help="the request's id (as records list shows it)")
    store_option(show)
    show.add_argument(
        "--archive",
        default=os.environ.get("GROUNDLOCK_ARCHIVE"),
        metavar="URI",
        help="the evidence archive, to quote rejected sentences (default $GROUNDLOCK_ARCHIVE)",
    )
    show.set_defaults(handler=deferred(_RUN, "show_record"))

    compact = actions.add_parser("compact", help="merge small files (rows unchanged)")
    store_option(compact)
    compact.set_defaults(handler=deferred(_RUN, "compact"))

    vacuum = actions.add_parser("vacuum", help="delete unreferenced files past retention")
    store_option(vacuum)
    vacuum.add_argument(
        "--retention-hours",
        type=_retention_hours,
        default=168,
        metavar="HOURS",
        help=f"keep files newer than this (0 to {_MAX_RETENTION_HOURS:,}; default 168)",
    )
    vacuum.add_argument("--apply", action="store_true", help="delete (default: dry run)")
    vacuum.set_defaults(handler=deferred(_RUN, "vacuum"))

    verify = actions.add_parser(
        "verify", help="recompute the trail's hash chain from its data files (exit 1 if altered)"
    )
    store_option(verify)
    verify.add_argument(
        "--since",
        type=_version,
        default=0,
        metavar="VERSION",
        help="read the files of table versions from VERSION on (older links taken as recorded)",
    )
    _key_options(verify, checkpoint_help="a signed checkpoint to check the history against")
    verify.set_defaults(handler=deferred(_RUN, "verify"))

    checkpoint = actions.add_parser(
        "checkpoint", help="verify, then sign each table's chain head (HMAC-SHA256) into a file"
    )
    store_option(checkpoint)
    _key_options(checkpoint, checkpoint_help="where to write it (keep it away from the trail)")
    checkpoint.set_defaults(handler=deferred(_RUN, "checkpoint"))

    feedback = commands.add_parser("feedback", help="record a rating of one answer")
    feedback.add_argument("request_id", help="the id of the request whose answer is rated")
    feedback.add_argument(
        "--rating", type=int, required=True, metavar="1-5", help="1 (wrong) to 5 (right)"
    )
    feedback.add_argument("--comment", metavar="TEXT", help="what was wrong or right (optional)")
    store_option(feedback)
    feedback.set_defaults(handler=deferred(_RUN, "record_feedback"))


_MAX_RETENTION_HOURS = 1_000_000
"""114 years: what ``DeltaAuditStore.vacuum`` accepts (delta-rs panics on a retention past
its clock, and reads 2**64 - 1 as a negative one)."""


def _retention_hours(text: str) -> int:
    """``--retention-hours``: a whole number of hours in range, or a usage error (exit 2)."""
    try:
        hours = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of hours: {text!r}") from None
    if not 0 <= hours <= _MAX_RETENTION_HOURS:
        raise argparse.ArgumentTypeError(f"must be 0 to {_MAX_RETENTION_HOURS:,} hours")
    return hours


def _version(text: str) -> int:
    """``--since``: a table version (a whole number from 0), or a usage error (exit 2)."""
    try:
        version = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a table version: {text!r}") from None
    if version < 0:
        raise argparse.ArgumentTypeError("a table version is 0 or more")
    return version


def _key_options(parser: argparse.ArgumentParser, *, checkpoint_help: str) -> None:
    """``--key-file`` and ``--checkpoint``: the key is read from a file, never an argument."""
    parser.add_argument(
        "--key-file",
        metavar="FILE",
        help="the operator's checkpoint key (its bytes; never kept beside the trail)",
    )
    parser.add_argument("--checkpoint", metavar="FILE", help=checkpoint_help)
