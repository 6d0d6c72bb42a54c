"""What ``groundlock replay`` does (:mod:`~groundlock.cli.replay` has the command and why).

Apart from the parser so that ``groundlock --help`` does not load the chain's stages, the
firewall and the row models: this module is imported when ``replay`` runs, or when one of
its public names is read from :mod:`groundlock.cli.replay`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundlock.cli._shared import (
    UsageError,
    check_location,
    open_archive,
    open_store,
    sql_time,
    table_lines,
)
from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.audit_rows import EvidenceRow, QueryRow, ValidationRow
from groundlock.contracts.enums import GenerationStatus, ValidationStatus
from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.contracts.state import Answered, Assembled, Judged, Outcome
from groundlock.contracts.validation import ValidationResult
from groundlock.core.audit import audit_rows
from groundlock.core.evidence_assembly import assemble
from groundlock.core.firewall import validate_answer
from groundlock.core.prompt_build import build_prompt
from groundlock.core.skipped import unanswered, unjudged
from groundlock.policies.loader import available_policies, load_policy
from groundlock.policies.model import Policy
from groundlock.stores.readers import InvalidRow
from groundlock.stores.sink import AuditReader, TrailQuery

if TYPE_CHECKING:
    pass

__all__ = [
    "Disagreement",
    "Replayed",
    "archived_policy",
    "disagreements",
    "replay",
    "replay_row",
]


@dataclass(frozen=True, slots=True)
class Replayed:
    """One archived request replayed: the sha256 check, the verdicts and its audit rows."""

    request_id: str | None
    archived_sha256: str | None
    rebuilt_sha256: str | None
    archived: tuple[str, str | None]
    """The request's recorded (status, reason)."""
    again: tuple[str, str | None]
    """R5's (status, reason) on the archived text, under the archived policy."""
    other: tuple[str, str | None] | None
    """The same under ``--policy``, if given."""
    run_id: str | None = None
    validation: ValidationRow | None = None
    """The validations row the trail must hold for the request, as the replay computes it,
    with the archived model's name (the run's own measurements, latency, tokens and the
    model's reply metadata, are not compared: an uncalled replay has none)."""
    query: QueryRow | None = None
    """The queries row the trail must hold, likewise."""

    @property
    def sha256_reproduced(self) -> bool:
        """Whether the rebuilt prompt has the archived prompt's sha256 (both none: none built)."""
        return self.archived_sha256 == self.rebuilt_sha256


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One thing the audit trail holds otherwise than the archived request replays to."""

    request_id: str | None
    run_id: str | None
    """The trail row's run id (a re-execution's derived one), or the archived one."""
    field: str
    """``<table>.<column>``; ``<table>`` for a row that is missing, ``record`` when the
    trail holds no row of the request at all."""
    archived: object
    """What the archived request replays to (an answer text as its sha256)."""
    trail: object
    """What the trail holds."""


def _replayed(row: EvidenceRow, policy: Policy, *, archived: bool) -> Judged:
    """The state R5 leaves on the archived request under ``policy``.

    R2 runs again under ``policy`` on the archived retrieval bundle, so its admission gates
    (similarity floor, caps, knowledge types) are measured too. A row archived without one
    (R2 refused its input, or the row predates the column) replays from the archived
    evidence, re-stamped with ``policy``'s identity (a state refuses a bundle of another
    policy). A prompt built OK gets the archived model text; a request without evidence
    gets the refusal R4 gives it, which under the ``archived`` policy must be the archived
    text; a FAILED one R5 passes over, as the chain does.
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
    if prompted.status is GenerationStatus.FAILED:
        return unjudged(unanswered(prompted, None))
    reply = row.raw_model_text
    if prompted.status is GenerationStatus.NO_EVIDENCE and not archived:
        reply = prompted.prompt.refusal_text
    answered = prompted.answered(LLMExecutionResult.uncalled(prompted.status, text=reply))
    verdict = validate_answer(answered, policy)
    return answered.judged(verdict, outcome=_decided(answered, verdict))


def _decided(state: Answered, verdict: ValidationResult) -> Outcome:
    """The outcome R5's stage decides from its verdict (``ValidateAnswer``'s rule)."""
    if verdict.validation_status is ValidationStatus.FAILED:
        return Outcome.failed(verdict.failure_reason or ReasonCode.INTERNAL_ERROR, verdict.message)
    if verdict.generation_status is GenerationStatus.NO_EVIDENCE:
        if state.outcome.status is GenerationStatus.NO_EVIDENCE:
            return state.outcome
        return Outcome(status=GenerationStatus.NO_EVIDENCE, reason=None, message=None)
    return Outcome.ok()


def _pair(state: Judged) -> tuple[str, str | None]:
    outcome = state.outcome
    return outcome.status.value, outcome.reason.value if outcome.reason else None


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
    archived (see :func:`archived_policy`), or needs a support judge, or when the archived
    request is not one the chain could have produced (a refusal that is not the policy's).
    """
    policy = archived_policy(row.policy_version, row.policy_sha256, policy_dir)
    if policy.support_judge is not None or (other is not None and other.support_judge):
        raise ValueError("a policy with a support judge cannot be replayed without its judge")
    state = _replayed(row, policy, archived=True)
    if (row.request_id, row.run_id) != (state.request_id, state.run_id):
        raise ValueError("the archived row's request or run id is not its evidence's")
    validation, query = audit_rows(state, {}, version=row.groundlock_version, policy=policy)
    # The model is the execution's, which a replay does not make: the archive says which.
    validation = validation.model_copy(update={"model_name": row.model_name})
    return Replayed(
        request_id=row.request_id,
        archived_sha256=row.prompt_sha256,
        rebuilt_sha256=state.prompt.prompt_sha256,
        archived=(row.status, row.failure_reason),
        again=_pair(state),
        other=_pair(_replayed(row, other, archived=False)) if other is not None else None,
        run_id=row.run_id,
        validation=validation,
        query=query,
    )


_VALIDATION_COLUMNS = (
    "status", "failure_reason", "generation_status", "validation_status", "prompt_sha256",
    "template_sha256", "policy_version", "policy_sha256", "outcome_sha256",
    "validated_answer_text", "validated_citations", "firewall_ruleset",
    "firewall_ruleset_sha256", "firewall_findings", "model_name", "invalid_citations",
)  # fmt: skip
_QUERY_COLUMNS = (
    "status", "failure_reason", "outcome_sha256", "retrieved_chunk_ids", "selected_chunk_ids",
    "cited_chunk_ids", "response_text",
)  # fmt: skip
_LATER_COLUMNS = frozenset(
    {
        "outcome_sha256", "firewall_ruleset", "firewall_ruleset_sha256", "firewall_findings",
        "invalid_citations", "response_text",
    }
)  # fmt: skip
"""Null in rows written before the column existed: a null there is not a disagreement
(the columns each of them sums up, status, answer and citations, are still compared)."""

TrailRow = ValidationRow | QueryRow | InvalidRow


def disagreements(
    replayed: Replayed, validations: Sequence[TrailRow], queries: Sequence[TrailRow]
) -> list[Disagreement]:
    """Where the trail's rows of ``replayed``'s request disagree with its replay.

    ``validations`` and ``queries`` are the trail's rows of the request id, every run,
    oldest first. The execution compared is the archived key's own record, or the
    re-execution the trail keeps under a derived run id (``<run_id>~...``) whose outcome
    is the replayed one: the archive keeps every execution under the request's run id. A
    row that breaks its model is compared as read, and each rule it breaks is reported.
    """
    if replayed.validation is None or replayed.query is None:
        raise ValueError("a replay without its audit rows cannot be cross-checked")
    request_id, run = replayed.request_id, replayed.run_id or ""
    family_v = [row for row in validations if _of_run(row, run)]
    family_q = [row for row in queries if _of_run(row, run)]
    if not family_v and not family_q:
        return [Disagreement(request_id, replayed.run_id, "record", "archived", "absent")]
    chosen = _execution(family_v or family_q, run, replayed.validation)
    found: list[Disagreement] = []
    compared: tuple[tuple[str, Sequence[TrailRow], ValidationRow | QueryRow, tuple[str, ...]], ...]
    compared = (
        ("validations", family_v, replayed.validation, _VALIDATION_COLUMNS),
        ("queries", family_q, replayed.query, _QUERY_COLUMNS),
    )
    for table, rows, expected, columns in compared:
        row = next((r for r in rows if (_get(r, "run_id") or "") == chosen), None)
        if row is None:
            found.append(Disagreement(request_id, chosen or None, table, "a row", "no row"))
            continue
        if isinstance(row, InvalidRow):
            for problem in row.problems:
                name = problem.split(":", 1)[0]
                found.append(
                    Disagreement(
                        request_id, chosen or None, f"{table}.{name}",
                        "a value its row model allows", f"{_shown(name, row.get(name))} "
                        f"({problem.split(': ', 1)[-1]})",
                    )
                )  # fmt: skip
        for name in columns:
            want, have = getattr(expected, name), _get(row, name)
            if want == have or (have is None and name in _LATER_COLUMNS):
                continue
            found.append(
                Disagreement(
                    request_id, chosen or None, f"{table}.{name}", _shown(name, want),
                    _shown(name, have),
                )
            )  # fmt: skip
    return found


def _get(row: TrailRow | EvidenceRow, name: str) -> Any:  # noqa: ANN401  (a column's value)
    return row.get(name) if isinstance(row, InvalidRow) else getattr(row, name)


def _of_run(row: TrailRow, run: str) -> bool:
    """Whether ``row`` records an execution of run ``run``: its own or a derived run id."""
    run_id = _get(row, "run_id") or ""
    return bool(run_id == run or (isinstance(run_id, str) and run_id.startswith(f"{run}~")))


def _execution(rows: Sequence[TrailRow], run: str, expected: ValidationRow) -> str:
    """The run id of the execution the archived one is: its outcome (and prompt) replayed.

    The key's own run first; when none matches, the key's own record (or the first row).
    """
    runs = sorted(dict.fromkeys(_get(row, "run_id") or "" for row in rows), key=lambda r: r != run)
    first = {r: next(row for row in rows if (_get(row, "run_id") or "") == r) for r in runs}
    outcome = expected.outcome_sha256
    for with_prompt in (True, False):
        for candidate in runs:
            row = first[candidate]
            if _get(row, "outcome_sha256") == outcome and (
                not with_prompt
                or _get(row, "prompt_sha256") == expected.prompt_sha256
                or isinstance(row, QueryRow)
            ):
                return candidate
    return runs[0]


def _shown(name: str, value: object) -> object:
    """A value as a disagreement shows it: an answer as its sha256, JSON-safe."""
    if name in {"validated_answer_text", "response_text"} and isinstance(value, str):
        return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _trail(
    store: AuditReader, request_ids: set[str]
) -> tuple[dict[str, list[TrailRow]], dict[str, list[TrailRow]]]:
    """The trail's validations and queries rows of ``request_ids``, by request id, oldest first.

    Read as stored: a row that breaks its model is kept, to be reported, not to fail the run.
    """
    validations: dict[str, list[TrailRow]] = defaultdict(list)
    queries: dict[str, list[TrailRow]] = defaultdict(list)
    asked = TrailQuery(request_ids=tuple(sorted(request_ids)))
    for validation in store.rows(ValidationRow, asked):
        validations[_get(validation, "request_id")].append(validation)
    for query in store.rows(QueryRow, asked):
        queries[_get(query, "request_id")].append(query)
    return validations, queries


def replay(args: argparse.Namespace) -> int:
    if not args.archive:
        raise UsageError("no archive: pass --archive URI or set GROUNDLOCK_ARCHIVE")
    if args.require_store and not args.store:
        raise UsageError(
            "no store to cross-check against: pass --store URI or set GROUNDLOCK_STORE"
        )
    if args.since and args.until and args.since >= args.until:
        raise UsageError("--since must be before --until")
    check_location(args.archive, "--archive")
    # The store is read only once every request is replayed; it is made (which touches
    # nothing) now, so a location it cannot have is refused before the first replay.
    store = open_store(args) if args.store else None
    other = load_policy(args.policy) if args.policy else None
    conditions = []
    if args.since:
        conditions.append(f"timestamp_utc >= {sql_time(args.since)}")
    if args.until:
        conditions.append(f"timestamp_utc < {sql_time(args.until)}")
    results: list[Replayed] = []
    unreplayable: list[dict[str, Any]] = []
    for row in open_archive(args.archive).read(" AND ".join(conditions)):
        if isinstance(row, InvalidRow):
            reason = row.describe()
        else:
            try:
                results.append(replay_row(row, other, policy_dir=args.policy_dir))
                continue
            except ValueError as exc:  # this row cannot be replayed; the others still are
                reason = str(exc)
        unreplayable.append(
            {"request_id": _get(row, "request_id"), "run_id": _get(row, "run_id"), "reason": reason}
        )
    found: list[Disagreement] | None = None
    keyed = [r for r in results if r.request_id is not None]
    if store is not None:
        validations, queries = _trail(store, {r.request_id or "" for r in keyed})
        found = [
            d
            for r in keyed
            for d in disagreements(r, validations[r.request_id or ""], queries[r.request_id or ""])
        ]
    result = _result(results, unreplayable, found, len(results) - len(keyed), other)
    _with_integrity(result, store)
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        _write_text(result)
    return 0 if result["ok"] else 1


def _with_integrity(result: dict[str, Any], store: Any) -> None:  # noqa: ANN401  (a store)
    """Say whether the trail cross-checked against (if any) verifies (its hash chain).

    The rows a replay compares with are only as good as the trail: one that does not
    verify makes no clean replay.
    """
    if store is None:
        return
    from groundlock.cli.report import trail_integrity  # noqa: PLC0415

    result["trail_integrity"] = trail_integrity(store)
    result["ok"] = result["ok"] and "problem(s) found" not in result["trail_integrity"]


def _result(
    results: list[Replayed],
    unreplayable: list[dict[str, Any]],
    found: list[Disagreement] | None,
    without_id: int,
    other: Policy | None,
) -> dict[str, Any]:
    """The replay's result as one JSON-ready object (``--json`` prints it, the text reads it)."""
    mismatched = [
        {"request_id": r.request_id, "run_id": r.run_id, "archived": r.archived_sha256,
         "rebuilt": r.rebuilt_sha256}
        for r in results if not r.sha256_reproduced
    ]  # fmt: skip
    # A request that failed after R5 (the audit write) keeps its recorded status: only
    # R5's own verdict is compared.
    drifted = [
        {"request_id": r.request_id, "run_id": r.run_id, "archived": list(r.archived),
         "again": list(r.again)}
        for r in results if r.again != r.archived and r.archived[1] != "AUDIT_WRITE_FAILED"
    ]  # fmt: skip
    impact = None
    if other is not None:
        impact = {
            "policy": other.policy_version,
            "changes": [
                {"request_id": r.request_id, "run_id": r.run_id, "old": list(r.again),
                 "new": list(r.other)}
                for r in results if r.other is not None and r.other != r.again
            ],
        }  # fmt: skip
    return {
        "replayed": len(results),
        "prompt_sha256_reproduced": sum(
            1 for r in results if r.archived_sha256 is not None and r.sha256_reproduced
        ),
        "sha256_mismatches": mismatched,
        "without_prompt": sum(
            1 for r in results if r.archived_sha256 is None and r.sha256_reproduced
        ),
        "verdicts_reproduced": len(results) - len(drifted),
        "verdicts_not_reproduced": drifted,
        "unreplayable": unreplayable,
        "cross_checked": found is not None,
        "cross_checked_requests": len(results) - without_id if found is not None else 0,
        "without_request_id": without_id if found is not None else 0,
        "disagreements": [asdict(d) for d in found or ()],
        "policy_impact": impact,
        "ok": not (mismatched or drifted or unreplayable or found),
    }


def _write_text(result: dict[str, Any]) -> None:
    out = sys.stdout
    for item in result["unreplayable"]:
        out.write(f"CANNOT REPLAY {item['request_id']}: {item['reason']}\n")
    for item in result["sha256_mismatches"]:
        out.write(
            f"sha256 MISMATCH {item['request_id']}: archived {item['archived']}, "
            f"rebuilt {item['rebuilt']}\n"
        )
    for item in result["verdicts_not_reproduced"]:
        out.write(
            f"verdict NOT REPRODUCED {item['request_id']}: {_show(item['archived'])} -> "
            f"{_show(item['again'])}\n"
        )
    for item in result["disagreements"]:
        where = f"{item['request_id']} run {item['run_id'] or '-'}"
        if item["field"] == "record":
            out.write(f"NOT IN THE TRAIL {where}: archived, but the trail holds no row of it\n")
        else:
            out.write(
                f"TRAIL DISAGREES {where} {item['field']}: archived {_value(item['archived'])}, "
                f"trail {_value(item['trail'])}\n"
            )
    out.write(
        f"{result['replayed']} request(s) replayed; {result['prompt_sha256_reproduced']} prompt "
        f"sha256 reproduced, {len(result['sha256_mismatches'])} mismatched"
        + (
            f", {result['without_prompt']} had no prompt to prove (refused at R2 or R3, "
            "before any model call)"
            if result["without_prompt"]
            else ""
        )
        + f"; {result['verdicts_reproduced']} verdict(s) reproduced\n"
    )
    if result["unreplayable"]:
        out.write(f"{len(result['unreplayable'])} request(s) could not be replayed\n")
    if result["cross_checked"]:
        unchecked = result["without_request_id"]
        out.write(
            f"cross-checked against the audit trail: {result['cross_checked_requests']} "
            f"request(s), {len(result['disagreements'])} disagreement(s)"
            + (f"; {unchecked} without a request id not cross-checked" if unchecked else "")
            + "\n"
        )
        if "trail_integrity" in result:
            out.write(result["trail_integrity"] + "\n")
    else:
        out.write(
            "NOT cross-checked against the audit trail (no --store or $GROUNDLOCK_STORE): "
            "an edited or forged archive row is not detected\n"
        )
    impact = result["policy_impact"]
    if impact is not None:
        table = [
            [c["request_id"] or "-", _show(c["old"]), _show(c["new"])] for c in impact["changes"]
        ]
        out.write(f"policy impact of {impact['policy']}:\n")
        for line in table_lines(["request_id", "old", "new"], table):
            out.write(line + "\n")
        out.write(f"{len(impact['changes'])} of {result['replayed']} verdict(s) would change\n")


def _show(pair: Sequence[str | None]) -> str:
    status, reason = pair
    return f"{status}/{reason}" if reason else str(status)


def _value(value: object) -> str:
    return "null" if value is None else json.dumps(value, ensure_ascii=False)
