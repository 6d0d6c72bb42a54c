"""``groundlock replay``: re-run R2-R5 on archived requests, cross-check them against the trail.

For each row of the evidence archive (:class:`~groundlock.stores.archive.EvidenceArchive`)
R2 runs again on the archived retrieval bundle and the prompt is built again under the
archived policy, and its sha256 must be the archived one: the proof that the prompt bytes
a model saw are the bytes groundlock says it built from that input. The archived raw model
text is then judged again by R5 under the same policy (the same verdict is expected). With
``--policy P`` the request goes through R2-R5 under P too, and every verdict P would change
is listed: ``000``'s policy impact measurement (admission gates, prompt budget and
firewall), without calling any model. P's model would have written another answer to
another prompt; what is measured is how P judges the answer that was given.

An archive checked only against itself proves nothing about tampering: an edit that nulls
or recomputes the archived sha256, a replaced model text that R5 still passes, or a forged
row all replay cleanly. So with ``--store`` (or ``$GROUNDLOCK_STORE``) every replayed
request is cross-checked against the audit trail: the audit rows the replay computes (prompt
and template sha256, status and reason, the outcome hash, the validated answer, its
citations and cited chunks, the firewall's findings, the selected and retrieved chunks)
must be the ones the trail's validations and queries rows hold, and an archived request the
trail does not hold is reported too. Without a store the result says plainly that nothing
was cross-checked; ``--require-store`` makes that a usage error.

Exit 1 when a prompt sha256 or an original verdict is not reproduced, a request cannot be
replayed, or the trail disagrees; a policy's changes are a finding, not a failure.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundlock.cli._shared import Parser, deferred, range_options

if TYPE_CHECKING:
    from groundlock.cli._replay_run import (
        Disagreement,
        Replayed,
        archived_policy,
        disagreements,
        replay_row,
    )

__all__ = [
    "Disagreement",
    "Replayed",
    "add_commands",
    "archived_policy",
    "disagreements",
    "replay_row",
]

_RUN = "groundlock.cli._replay_run"
"""Where the replay is: it needs the chain's stages and the row models, the parser does not."""


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``replay`` to the command line."""
    replay = commands.add_parser(
        "replay",
        help="rebuild archived prompts, prove their sha256, judge them again, check the trail",
    )
    replay.add_argument(
        "--archive",
        default=os.environ.get("GROUNDLOCK_ARCHIVE"),
        metavar="URI",
        help="the evidence archive's path or URI (default $GROUNDLOCK_ARCHIVE)",
    )
    replay.add_argument(
        "--store",
        default=os.environ.get("GROUNDLOCK_STORE"),
        metavar="URI",
        help="the audit store to cross-check every archived request against "
        "(default $GROUNDLOCK_STORE; without one nothing is cross-checked, and the result "
        "says so)",
    )
    replay.add_argument(
        "--require-store",
        action="store_true",
        help="refuse to replay without a store to cross-check against (exit 2)",
    )
    range_options(replay)
    replay.add_argument(
        "--policy", metavar="NAME_OR_PATH", help="also judge under this policy (name or file)"
    )
    replay.add_argument(
        "--policy-dir",
        metavar="DIR",
        type=Path,
        help="where archived policies that are not built in are found (as <version>.json)",
    )
    replay.add_argument("--json", action="store_true", help="the result as one JSON object")
    replay.set_defaults(handler=deferred(_RUN, "replay"))


def __getattr__(name: str) -> Any:  # noqa: ANN401  (a public name of any kind)
    """The replay's public names, read from :mod:`groundlock.cli._replay_run` on first use."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_RUN), name)
    globals()[name] = value
    return value
