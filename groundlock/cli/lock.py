"""``groundlock lock``: write or check the sha256 locks of policies, templates and rulesets.

A thin shell over :func:`groundlock.policies.locking.lock`; see there for what each kind of
artefact is checked against before it is locked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from groundlock.cli._shared import Parser, UsageError

__all__ = ["add_commands"]


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``lock`` to the command line."""
    command = commands.add_parser(
        "lock",
        help="lock (or check) policies, prompt templates and rulesets",
        description=(
            "Validate each PATH as its loader will and write its <name>.sha256 lock beside "
            "it: a policy (NAME.json), a prompt template (NAME.txt) or a ruleset (a folder "
            "with a manifest.json). A PATH already locked with another sha256 is refused: a "
            "changed artefact is a new version. Exit 0 when every PATH is locked (or, with "
            "--check, matches its lock), 1 when any is refused, 2 when a PATH is none of the "
            "three (nothing is written then)."
        ),
    )
    command.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="what to lock")
    mode = command.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail on a missing or stale lock (for CI over your own policies)",
    )
    mode.add_argument(
        "--relock",
        action="store_true",
        help="rewrite a stale lock (only for a version nothing has been judged under yet)",
    )
    command.set_defaults(handler=_lock)


def _lock(args: argparse.Namespace) -> int:
    from groundlock.policies.locking import LockError, kind_of, lock  # noqa: PLC0415  (light --help)

    for path in args.paths:  # what each PATH is, before anything is written
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
        try:
            kind_of(path)
        except LockError as exc:
            raise UsageError(str(exc)) from exc
    refused = 0
    for path in args.paths:
        try:
            done = lock(path, check=args.check, relock=args.relock)
        except LockError as exc:
            sys.stderr.write(f"groundlock: refused: {exc}\n")
            refused += 1
            continue
        sys.stdout.write(f"{done.action:<9} {done.kind:<8} {done.path}  {done.sha256}\n")
    return 1 if refused else 0
