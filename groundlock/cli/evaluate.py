"""The evaluation commands: ``eval DATASET``, ``eval review`` and ``eval compare``.

``groundlock eval DATASET.jsonl --index PATH`` answers a gold set from a lakehouse index,
under the same policy choice as ``ask --index``, appends the scored rows to the evaluation
log at ``--store`` (a Delta table's path or URI; default ``$GROUNDLOCK_EVAL_STORE``) and
prints the run's summary. Without a store it scores and prints, and writes nothing. A gold
set is JSON Lines, one item a line: its ``id``, a ``question``, the ``gold_answer``, the
``expected_citations`` (the chunk ids a correct answer cites, as ``groundlock index --list``
shows them) and whether it is ``answerable``. Each answer is scored on citation precision
and recall, whether it was refused when it should have been, a pass, its relevance to the
gold answer (token F1, ROUGE-L) and its compliance.

``groundlock eval review RUN_ID ITEM_ID --status approved|rejected --reviewer NAME`` records
a human review of one item; ``groundlock eval compare RUN_A RUN_B`` prints the two runs'
summaries side by side, the difference of their mean scores and the items whose outcome
or scores changed (``--html`` writes the same as
an HTML section, for a report).

One ``eval`` command with a first word rather than three commands: ``eval DATASET`` is the
common case and reads as the issue names it; ``review`` and ``compare`` are not dataset
names a gold set would have.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from groundlock.cli._shared import Parser, UsageError, check_location, model_named
from groundlock.cli.chain import MODEL_HELP
from groundlock.cli.lakehouse import DEFAULT_TOP_K, TOP_K_HELP

if TYPE_CHECKING:
    from groundlock.stores.readers import InvalidRow

__all__ = ["add_commands"]

_VERBS = ("review", "compare")
_PAIR = 2
"""Summaries ``compare`` sets a difference line under: one per run."""


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``eval`` to the command line."""
    parser = commands.add_parser(
        "eval",
        help="evaluate a gold set against an index; review or compare runs",
        description="\n\n".join(__doc__.split("\n\n")[1:3]) if __doc__ else None,
        # Written out: argparse prints a "+" positional as "X [X ...]", which reads as
        # several datasets or commands.
        usage=(
            "groundlock eval DATASET.jsonl --index PATH [--policy P] [--model M] [--top-k N]"
            " [--run-id ID] [--store URI] [--json]\n"
            "       groundlock eval review RUN_ID ITEM_ID --status {approved,rejected}"
            " --reviewer NAME [--store URI]\n"
            "       groundlock eval compare RUN_A RUN_B [--html FILE] [--json] [--store URI]"
        ),
    )
    parser.add_argument(
        "words",
        nargs="+",
        metavar="DATASET | review RUN_ID ITEM_ID | compare RUN_A RUN_B",
        help="a JSONL gold set to evaluate, or a review or compare",
    )
    parser.add_argument("--index", metavar="PATH", help="eval: the lakehouse index to answer from")
    parser.add_argument(
        "--policy",
        help="eval: the policy (default: as ask --index chooses, R2_POLICY_V4_LEXICAL for a "
        "lexical index)",
    )
    parser.add_argument("--model", metavar="PROVIDER:MODEL", help=f"eval: {MODEL_HELP}")
    parser.add_argument(
        "--top-k", type=int, default=DEFAULT_TOP_K, metavar="N", help=f"eval: {TOP_K_HELP}"
    )
    parser.add_argument("--run-id", metavar="ID", help="eval: the run's id (default a fresh one)")
    parser.add_argument(
        "--store",
        metavar="URI",
        default=os.environ.get("GROUNDLOCK_EVAL_STORE"),
        help="the evaluation log's path or URI (default $GROUNDLOCK_EVAL_STORE)",
    )
    parser.add_argument("--status", choices=("approved", "rejected"), help="review: verdict")
    parser.add_argument("--reviewer", metavar="NAME", help="review: who reviewed")
    parser.add_argument(
        "--html", type=Path, metavar="FILE", help="compare: also write an HTML section here"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON (eval: the runs and the items that did not pass; "
        "compare: the runs and the items that changed)",
    )
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    words: list[str] = args.words
    if words[0] == "review":
        return _review(args, words[1:])
    if words[0] == "compare":
        return _compare(args, words[1:])
    if len(words) != 1:
        raise UsageError("eval takes one dataset (or: review RUN ITEM, compare RUN_A RUN_B)")
    return _evaluate(args, Path(words[0]))


def _evaluate(args: argparse.Namespace, dataset: Path) -> int:
    from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415
    from groundlock.cli.lakehouse import index_front  # noqa: PLC0415
    from groundlock.lakehouse.evaluation import (  # noqa: PLC0415
        failures,
        format_summary,
        load_dataset,
        run_eval,
        summary,
        summary_json,
    )

    if args.index is None:
        raise UsageError("eval DATASET needs --index PATH")
    # The log is written once every item is answered: a location it cannot have is
    # refused now, not after the run has cost its time (or a real model's calls).
    check_location(args.store, "--store")
    check_location(args.index, "--index")
    if not dataset.is_file():
        raise UsageError(f"no such dataset: {dataset}")
    items = load_dataset(dataset)
    front, policy = index_front(args.index, args.top_k, args.policy)
    with model_named(args.model, "eval"):
        chain = (
            grounded_answer_chain(policy=policy, front=front, model=args.model)
            if args.model
            else grounded_answer_chain(policy=policy, front=front)
        )
    rows = run_eval(items, chain, run_id=args.run_id, table_uri=args.store)
    summaries = summary(rows)
    failed = failures(rows)
    if args.json:
        document = {"runs": json.loads(summary_json(summaries)), "failed": failed}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return 0
    sys.stdout.write(format_summary(summaries) + "\n")
    if failed:
        sys.stdout.write(f"{len(failed)} item(s) did not pass:\n")
        for failure in failed:
            sys.stdout.write(f"  {failure['item_id']}: {failure['why']}\n")
    where = f"appended to {args.store}" if args.store else "not written (no --store)"
    sys.stdout.write(f"run {rows[0].run_id if rows else '-'}: {len(rows)} rows {where}\n")
    return 0


def _need_store(args: argparse.Namespace) -> str:
    if not args.store:
        raise UsageError("no evaluation log: pass --store URI or set GROUNDLOCK_EVAL_STORE")
    check_location(args.store, "--store")
    return str(args.store)


def _review(args: argparse.Namespace, words: list[str]) -> int:
    from groundlock.lakehouse.evaluation import set_review  # noqa: PLC0415

    if len(words) != 2:
        raise UsageError(f"eval review needs a run id and an item id; {_got(words)}")
    missing = [
        option
        for option, given in (
            ("--status approved|rejected", args.status is not None),
            ("--reviewer NAME", bool(args.reviewer and args.reviewer.strip())),
        )
        if not given
    ]
    if missing:
        raise UsageError(f"eval review needs {' and '.join(missing)}")
    store = _need_store(args)
    try:
        set_review(store, words[0], words[1], args.status, args.reviewer)
    except LookupError as exc:
        sys.stderr.write(f"groundlock: {_no_review(store, words[0], exc)}\n")
        return 1
    sys.stdout.write(f"{words[0]} {words[1]}: {args.status} by {args.reviewer}\n")
    return 0


def _got(words: list[str]) -> str:
    """What was given instead: ``got 1: run-a``."""
    return f"got {len(words)}" + (f": {' '.join(words)}" if words else "")


def _no_review(store: str, run_id: str, exc: LookupError) -> str:
    """Why a review found nothing to update: no such run, or no such item in it."""
    from groundlock.lakehouse.evaluation import read_eval_rows  # noqa: PLC0415

    if "has no item" not in str(exc):  # (no log at all: said as it is)
        return str(exc)
    if not read_eval_rows(store, run_id):
        return f"the evaluation log holds no run {run_id}"
    return str(exc)


def _compare(args: argparse.Namespace, words: list[str]) -> int:
    from groundlock.lakehouse.evaluation import (  # noqa: PLC0415
        compare,
        comparison_html,
        format_difference,
        format_summary,
        read_eval_rows,
        score_difference,
        summary_json,
    )

    if len(words) != 2:
        raise UsageError(f"eval compare needs two run ids; {_got(words)}")
    try:
        rows = read_eval_rows(_need_store(args))
        summaries, changes = compare(rows, words[0], words[1])
    except LookupError as exc:
        sys.stderr.write(f"groundlock: {exc}\n")
        return 1
    # A row that breaks its model is in no summary: each is named, with what it breaks.
    flagged = [f"! {_unread(row)}\n" for row in rows if _of_runs(row, words)]
    if args.html is not None:
        try:
            args.html.write_text(comparison_html(summaries, changes), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.html}: {exc.strerror}") from None
        # (On stderr: stdout is the comparison, and under --json only JSON.)
        sys.stderr.write(f"groundlock: comparison of {words[0]} and {words[1]} written to "
                         f"{args.html}\n")  # fmt: skip
    if args.json:
        document = {
            "runs": json.loads(summary_json(summaries)),
            "difference": score_difference(*summaries) if len(summaries) == _PAIR else None,
            "changed": _changed(changes),
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        sys.stderr.write("".join(f"groundlock: {line}" for line in flagged))
        return 0
    sys.stdout.write(format_summary(summaries) + "\n")
    if len(summaries) == _PAIR:  # (a run under two policies has a summary per policy)
        sys.stdout.write(format_difference(*summaries) + "\n")
    if changes:
        sys.stdout.write("items that changed:\n" + "".join(f"  {c}\n" for c in changes))
    else:
        sys.stdout.write("no item changed\n")
    if flagged:
        sys.stdout.write("".join(flagged))
        sys.stdout.write(f"{len(flagged)} row(s) break the row model: in no summary\n")
    return 0


def _changed(changes: list[str]) -> list[dict[str, str]]:
    """The changed items as JSON: ``{"item_id": "g01", "change": "OK -> FAILED (fail)"}``."""
    return [dict(zip(("item_id", "change"), c.split(": ", 1), strict=True)) for c in changes]


def _of_runs(row: object, runs: list[str]) -> TypeGuard[InvalidRow]:
    """Whether ``row`` breaks its model and is of one of ``runs`` (or of no run it names)."""
    from groundlock.stores.readers import InvalidRow  # noqa: PLC0415

    if not isinstance(row, InvalidRow):
        return False
    run = row.get("run_id")
    return run in runs or not isinstance(run, str)


def _unread(row: InvalidRow) -> str:
    """One line: the row's run and item (escaped if they hold a control character)."""
    run, item = (_shown(row.get(name)) for name in ("run_id", "item_id"))
    return (
        f"the evaluation log holds a row that breaks its model (run {run}, item {item}): "
        f"{'; '.join(row.problems)}"
    )


def _shown(value: object) -> str:
    if value is None:
        return "-"
    text = str(value)
    return text if text.isprintable() else repr(text)
