"""What more than one command module needs: the parser class, usage errors, common options.

Kept apart from the package's ``__init__`` so that the command modules never import the
module that imports them: ``groundlock.cli`` assembles the parser from
:mod:`~groundlock.cli.chain`, :mod:`~groundlock.cli.records` and
:mod:`~groundlock.cli.report`, and all three take their shared pieces from here.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from groundlock.stores.location import delta_location

if TYPE_CHECKING:
    from groundlock.stores.archive import EvidenceArchive
    from groundlock.stores.delta import DeltaAuditStore
    from groundlock.stores.sink import TrailQuery

__all__ = [
    "Parser",
    "PlainHelpFormatter",
    "PlainRawDescriptionFormatter",
    "UsageError",
    "builtin_policies",
    "check_location",
    "deferred",
    "model_named",
    "open_store",
    "range_options",
    "sql_time",
    "store_option",
    "table_lines",
    "trail_query",
]


class UsageError(Exception):
    """Bad arguments or input: exit 2."""


def deferred(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The handler ``name`` of ``module``, imported only when its command runs.

    A handler needs the contracts, the firewall and the stores; its parser needs none of
    them, and ``groundlock --help`` (or any usage error) builds every command's parser.
    """

    def handler(args: argparse.Namespace) -> int:
        run: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
        return run(args)

    return handler


def builtin_policies() -> list[str]:
    """The built-in policy versions, sorted: ``available_policies()`` without its import.

    Importing :mod:`groundlock.policies` builds the pydantic ``Policy`` model (a quarter of
    a second); a parser only needs the names of the ``*.json`` files in its folder, which
    ``find_spec`` gives without running the package.
    """
    spec = importlib.util.find_spec("groundlock.policies")
    folders = spec.submodule_search_locations if spec is not None else None
    return sorted(path.stem for folder in folders or () for path in Path(folder).glob("*.json"))


_REST_LITERAL = re.compile(r"``([^`]+)``")
_REST_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(?:[^`<]*<)?(~?)\.?([\w.]+)>?`")
_REST_DEFAULT_ROLE = re.compile(r"(?<![\w`])`([^`]+)`(?![\w`])")


def _role(match: re.Match[str]) -> str:
    """A cross-reference as Sphinx shows it (``~`` keeps the last component), in quotes."""
    short, target = match.groups()
    return f"'{target.rsplit('.', 1)[-1] if short else target}'"


def plain(text: str) -> str:
    """``text`` without the reST markup of the docstrings it comes from.

    A literal (two backticks) loses its backticks; a cross-reference (:mod:`~a.b`) becomes
    the name Sphinx would show, in quotes ('b', or 'a.b' without the tilde); a span in
    single backticks is quoted.
    """
    text = _REST_ROLE.sub(_role, _REST_LITERAL.sub(r"\1", text))
    return _REST_DEFAULT_ROLE.sub(r"'\1'", text)


class PlainHelpFormatter(argparse.HelpFormatter):
    """Help text from reST docstrings, made plain *before* it is wrapped.

    Stripping the markup after argparse has wrapped the text left lines cut where a long
    role used to be (a short line, then a long one).
    """

    def _format_text(self, text: str) -> str:
        return super()._format_text(plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return plain(super()._expand_help(action))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        # Each paragraph wrapped on its own (argparse runs them all into one).
        paragraphs = re.split(r"\n\s*\n", text.strip())
        fill = super()._fill_text  # (a bare super() cannot run inside the comprehension)
        return "\n\n".join(fill(paragraph, width, indent) for paragraph in paragraphs)


class PlainRawDescriptionFormatter(PlainHelpFormatter):
    """As :class:`PlainHelpFormatter`, the description's own line breaks kept."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in text.splitlines(keepends=True))


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors name the command, as every other error does.

    Its help is plain text: descriptions come from docstrings, written in reST, and are
    made plain before they are wrapped (:class:`PlainHelpFormatter`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401  (argparse's own)
        kwargs.setdefault("formatter_class", PlainHelpFormatter)
        super().__init__(*args, **kwargs)

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
    parser.add_argument("--store", default=default, metavar="URI", help=hint)


def range_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--since`` and ``--until``, checked while parsing (a bad time is exit 2)."""
    parser.add_argument(
        "--since",
        type=_timestamp,
        metavar="TIME",
        help="from this ISO date or time on (UTC if no zone)",
    )
    parser.add_argument(
        "--until",
        type=_timestamp,
        metavar="TIME",
        help="before this ISO date or time (UTC if no zone)",
    )


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


@contextlib.contextmanager
def model_named(spec: str | None, command: str) -> Iterator[None]:
    """Turn a ``--model`` string no chat model can be built from into one usage line (exit 2).

    LangChain's reason runs to several lines (every provider it knows, a URL): the first
    line is kept, and the help that lists the model forms is named.
    """
    from groundlock.providers.chat import (  # noqa: PLC0415  (only a command with a model)
        ModelPinningError,
        ProviderUnavailableError,
    )

    try:
        yield
    except (ModelPinningError, ProviderUnavailableError) as exc:
        prefix = f"cannot build a chat model from {spec!r}: "
        if spec is None or not str(exc).startswith(prefix):
            raise
        reason = (str(exc).removeprefix(prefix).splitlines() or ["-"])[0]
        if isinstance(exc, ProviderUnavailableError):
            raise UsageError(f"--model {spec}: ProviderUnavailableError: {reason}") from None
        # (LangChain's advice is for its Python API: the shell's form is provider:model.)
        reason = reason.replace(" Please specify 'model_provider' directly.", "").rstrip(".")
        raise UsageError(
            f"--model {spec}: {reason}; see groundlock {command} --help for the model forms"
        ) from None


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
    from groundlock.stores.delta import DeltaAuditStore  # noqa: PLC0415  (Arrow: not for --help)

    try:
        return DeltaAuditStore(args.store)  # (touches nothing: a refusal comes before any work)
    except ValueError as exc:  # a bad setting, such as $GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS
        raise UsageError(str(exc)) from None


def open_archive(uri: str) -> EvidenceArchive:
    """The evidence archive at ``uri`` (touches nothing until it is read)."""
    from groundlock.stores.archive import EvidenceArchive  # noqa: PLC0415  (Arrow: not for --help)

    return EvidenceArchive(uri)


def trail_query(args: argparse.Namespace) -> TrailQuery:
    """The typed trail query for the filters and the time range given on the command line."""
    from groundlock.stores.sink import TrailQuery  # noqa: PLC0415  (the row models: not for --help)

    return TrailQuery(
        since=args.since,
        until=args.until,
        status=getattr(args, "status", None) or None,
        failure_reason=getattr(args, "failure_reason", None) or None,
        policy_version=getattr(args, "policy_version", None) or None,
    )


def sql_time(moment: datetime) -> str:
    """A SQL timestamp literal, in UTC (the tables store UTC)."""
    from groundlock.stores import delta_reads  # noqa: PLC0415  (the row models: not for --help)

    return delta_reads.sql_time(moment)


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A plain-text table, each column as wide as its widest cell, no trailing spaces."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    ]
