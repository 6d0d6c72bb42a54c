"""The ``groundlock`` command: serving and the audit trail from a shell.

``groundlock ask`` answers a bundle (or a JSONL batch of them), or with ``--index`` a plain
question from a lakehouse index that ``groundlock index`` wrote; ``groundlock validate``
judges an existing answer without any model; ``groundlock serve`` serves the chain over
HTTP; ``groundlock records`` lists, filters and
shows audit rows, and compacts and vacuums the tables; ``groundlock feedback`` records a
reader's rating; ``groundlock report`` writes the auditors' HTML report. The store is
``--store URI`` or ``$GROUNDLOCK_STORE``; object-store credentials come from the
environment, where delta-rs looks for them. ``--index``, ``--store`` and ``--archive`` also
take a table name of the catalog ``$GROUNDLOCK_CATALOG`` names (``semantic.gold_chunks``;
:mod:`groundlock.stores.catalog`).

Exit codes (``002``'s convention): 0 done (a list that matches nothing included), 1 the
operation failed or ``show``/``feedback`` found no record of the request, 2 a usage error.
Reads go through delta-rs's own query engine, never pyarrow, which can abort at interpreter
exit after a read.

This module only assembles the parser and turns errors into exit codes; each command lives
with its arguments in :mod:`~groundlock.cli.chain` (ask, validate, serve),
:mod:`~groundlock.cli.records` (records, feedback), :mod:`~groundlock.cli.lakehouse` (index,
and ask's ``--index``) or :mod:`~groundlock.cli.report`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from groundlock._version import __version__
from groundlock.cli import chain, evaluate, lakehouse, lock, records, replay, report
from groundlock.cli._shared import Parser, UsageError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    # (Its row models load now, once a command runs: --help and usage errors never do.)
    from groundlock.stores.sink import AuditUnavailable  # noqa: PLC0415

    try:
        _resolve_table_names(args)
        return int(args.handler(args))
    except BrokenPipeError:
        # The reader went away (``records list | head``): what it wanted it has. Quietly,
        # and with stdout pointed at nothing so the exit's own flush cannot raise again.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as exc:
        sys.stderr.write(f"groundlock: error: {exc}\n")
        return 2
    except (AuditUnavailable, ValueError) as exc:
        sys.stderr.write(f"groundlock: {exc}\n")
        return 1
    except Exception as exc:  # noqa: BLE001  (no traceback for the operator; the kind only)
        sys.stderr.write(f"groundlock: failed ({type(exc).__name__})\n")
        return 1


_LOCATION_OPTIONS = ("index", "store", "archive")
"""The options naming a table's location, which take a catalog's table names too."""


def _resolve_table_names(args: argparse.Namespace) -> None:
    """Replace a table name given for a location by its catalog's location (exit 2 if none).

    See :mod:`groundlock.stores.catalog` (``$GROUNDLOCK_CATALOG``).
    """
    from groundlock.stores.catalog import resolve_location  # noqa: PLC0415

    for option in _LOCATION_OPTIONS:
        value = getattr(args, option, None)
        if isinstance(value, str):
            try:
                setattr(args, option, resolve_location(value, f"--{option}"))
            except ValueError as exc:
                raise UsageError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="groundlock", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"groundlock {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    for module in (chain, lakehouse, records, report):  # the order of ``groundlock --help``
        module.add_commands(commands)
    replay.add_commands(commands)
    evaluate.add_commands(commands)
    lock.add_commands(commands)
    lakehouse.extend_ask(commands.choices["ask"])
    return parser
