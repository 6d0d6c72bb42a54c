"""``groundlock replay``: re-run R2-R5 on archived requests, and measure a policy's impact.

For each row of the evidence archive (:class:`~groundlock.stores.archive.EvidenceArchive`)
R2 runs again on the archived retrieval bundle and the prompt is built again under the
archived policy, and its sha256 must be the archived one: the proof that the prompt bytes
a model saw are the bytes groundlock says it built from that input. The archived raw model
text is then judged again by R5 under the same policy (the same verdict is expected). With
``--policy P`` the request goes through R2-R5 under P too, and every verdict P would change
is listed: ``000``'s policy impact measurement (admission gates, prompt budget and
firewall), without calling any model. P's model would have written another answer to
another prompt; what is measured is how P judges the answer that was given.

Exit 1 when a prompt sha256 or an original verdict is not reproduced; a policy's changes
are a finding, not a failure.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from groundlock.cli._shared import Parser, UsageError, range_options, sql_time, table_lines
from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.audit_rows import EvidenceRow
from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.contracts.state import Assembled
from groundlock.core.evidence_assembly import assemble
from groundlock.core.firewall import validate_answer
from groundlock.core.prompt_build import build_prompt
from groundlock.policies.loader import available_policies, load_policy
from groundlock.policies.model import Policy
from groundlock.stores.archive import EvidenceArchive

__all__ = ["Replayed", "add_commands", "archived_policy", "replay_row"]


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``replay`` to the command line."""
    replay = commands.add_parser(
        "replay", help="rebuild archived prompts, prove their sha256, and judge them again"
    )
    replay.add_argument(
        "--archive",
        default=os.environ.get("GROUNDLOCK_ARCHIVE"),
        help="the evidence archive's path or URI (default $GROUNDLOCK_ARCHIVE)",
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
    replay.set_defaults(handler=_replay)


@dataclass(frozen=True, slots=True)
class Replayed:
    """One archived request replayed: the sha256 check and the verdicts."""

    request_id: str | None
    archived_sha256: str | None
    rebuilt_sha256: str | None
    archived: tuple[str, str | None]
    """The request's recorded (status, reason)."""
    again: tuple[str, str | None]
    """R5's (status, reason) on the archived text, under the archived policy."""
    other: tuple[str, str | None] | None
    """The same under ``--policy``, if given."""

    @property
    def sha256_reproduced(self) -> bool:
        """Whether the rebuilt prompt has the archived prompt's sha256."""
        return self.archived_sha256 == self.rebuilt_sha256


def _judge(row: EvidenceRow, policy: Policy) -> tuple[str | None, tuple[str, str | None]]:
    """The rebuilt prompt's sha256 and the (status, reason) ``policy`` gives the archived text.

    R2 runs again under ``policy`` on the archived retrieval bundle, so its admission gates
    (similarity floor, caps, knowledge types) are measured too. A row archived without one
    (R2 refused its input, or the row predates the column) replays from the archived
    evidence, re-stamped with ``policy``'s identity (a state refuses a bundle of another
    policy). A request whose prompt is not built OK (no evidence, a question or budget
    ``policy`` refuses) gets R2's or R3's outcome: no model text would have been judged.
    """
    if row.retrieval_bundle_json is not None:
        retrieval = RetrievalBundle.model_validate_json(row.retrieval_bundle_json)
        assembled = Assembled.of(assemble(retrieval, policy), retrieval)
    else:
        bundle = AnswerBundle.model_validate_json(row.answer_bundle_json)
        trace = bundle.trace.model_copy(
            update={"policy_version": policy.policy_version, "policy_sha256": policy.policy_sha256}
        )
        assembled = Assembled.of(bundle.model_copy(update={"trace": trace}))
    prompted = build_prompt(assembled, policy)
    if prompted.status is not GenerationStatus.OK:
        outcome = prompted.outcome
        return prompted.prompt.prompt_sha256, (
            outcome.status.value,
            outcome.reason.value if outcome.reason else None,
        )
    execution = LLMExecutionResult.uncalled(GenerationStatus.OK, text=row.raw_model_text)
    verdict = validate_answer(prompted.answered(execution), policy)
    reason = verdict.failure_reason.value if verdict.failure_reason else None
    return prompted.prompt.prompt_sha256, (verdict.generation_status.value, reason)


def archived_policy(version: str, sha256: str, policy_dir: Path | None = None) -> Policy:
    """The policy a request was archived under: built in, or ``<version>.json`` in ``policy_dir``.

    Raises ``ValueError`` when it cannot be found, or when its locked file no longer has the
    archived sha256: a replay under another policy would prove nothing.
    """
    if version in available_policies():
        policy = load_policy(version)
    elif policy_dir is not None and (policy_dir / f"{version}.json").is_file():
        policy = load_policy(policy_dir / f"{version}.json")
    else:
        raise ValueError(f"policy {version} is not built in; pass --policy-dir with its file")
    if policy.policy_sha256 != sha256:
        raise ValueError(f"policy {version} is not the one archived (sha256 differs)")
    return policy


def replay_row(
    row: EvidenceRow, other: Policy | None = None, *, policy_dir: Path | None = None
) -> Replayed:
    """Replay one archived request under its own policy (and ``other``, if given).

    Raises ``ValueError`` when the archived policy cannot be found or is not the one
    archived (see :func:`archived_policy`), or needs a support judge.
    """
    policy = archived_policy(row.policy_version, row.policy_sha256, policy_dir)
    if policy.support_judge is not None or (other is not None and other.support_judge):
        raise ValueError("a policy with a support judge cannot be replayed without its judge")
    rebuilt, again = _judge(row, policy)
    other_pair = _judge(row, other)[1] if other is not None else None
    return Replayed(
        request_id=row.request_id,
        archived_sha256=row.prompt_sha256,
        rebuilt_sha256=rebuilt if row.prompt_sha256 is not None else None,
        archived=(row.status, row.failure_reason),
        again=again,
        other=other_pair,
    )


def _replay(args: argparse.Namespace) -> int:
    if not args.archive:
        raise UsageError("no archive: pass --archive URI or set GROUNDLOCK_ARCHIVE")
    if args.since and args.until and args.since >= args.until:
        raise UsageError("--since must be before --until")
    other = load_policy(args.policy) if args.policy else None
    conditions = []
    if args.since:
        conditions.append(f"timestamp_utc >= {sql_time(args.since)}")
    if args.until:
        conditions.append(f"timestamp_utc < {sql_time(args.until)}")
    rows = EvidenceArchive(args.archive).select(" AND ".join(conditions))
    results: list[Replayed] = []
    unreplayable = 0
    for row in rows:
        try:
            results.append(replay_row(row, other, policy_dir=args.policy_dir))
        except ValueError as exc:  # this row cannot be replayed; the others still are
            unreplayable += 1
            sys.stdout.write(f"CANNOT REPLAY {row.request_id}: {exc}\n")
    mismatched = [r for r in results if not r.sha256_reproduced]
    # A request that failed after R5 (the audit write) keeps its recorded status: only
    # R5's own verdict is compared.
    drifted = [
        r for r in results if r.again != r.archived and r.archived[1] != "AUDIT_WRITE_FAILED"
    ]
    for r in mismatched:
        sys.stdout.write(
            f"sha256 MISMATCH {r.request_id}: archived {r.archived_sha256}, "
            f"rebuilt {r.rebuilt_sha256}\n"
        )
    for r in drifted:
        sys.stdout.write(
            f"verdict NOT REPRODUCED {r.request_id}: {_show(r.archived)} -> {_show(r.again)}\n"
        )
    proven = sum(1 for r in results if r.archived_sha256 is not None and r.sha256_reproduced)
    sys.stdout.write(
        f"{len(results)} request(s) replayed; {proven} prompt sha256 reproduced, "
        f"{len(mismatched)} mismatched; {len(results) - len(drifted)} verdict(s) reproduced\n"
    )
    if unreplayable:
        sys.stdout.write(f"{unreplayable} request(s) could not be replayed\n")
    if other is not None:
        changed = [r for r in results if r.other is not None and r.other != r.again]
        table = [[r.request_id or "-", _show(r.again), _show(r.other or r.again)] for r in changed]
        sys.stdout.write(f"policy impact of {other.policy_version}:\n")
        for line in table_lines(["request_id", "old", "new"], table):
            sys.stdout.write(line + "\n")
        sys.stdout.write(f"{len(changed)} of {len(results)} verdict(s) would change\n")
    return 1 if mismatched or drifted or unreplayable else 0


def _show(pair: tuple[str, str | None]) -> str:
    status, reason = pair
    return f"{status}/{reason}" if reason else status
