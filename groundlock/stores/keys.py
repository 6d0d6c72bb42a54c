"""The audit trail's key rule, as pure functions (no Delta, no I/O).

A keyed table holds one record per ``(request_id, run_id)``: the first row of a key is its
record, and a later row of the same key with the same outcome is the same execution again
(a retry, a flush that ran twice) and is not written. A later row with *another* outcome is
a re-execution: kept under the derived run id ``<run_id>~<n>``, ``n`` = 1, 2, ... the next
number its key's family does not hold yet, assigned by the writer at commit time.

Why a sequence and not a hash: the derived id must be something the client cannot choose.
An earlier form, ``<run_id>~<the outcome hash's first 16 hex digits>``, was computable by the
client, so a client could plant that key first with another outcome, and the store then took
a later answer's row for a duplicate and dropped it: an answer delivered with no record.
Here a row is dropped only when its own outcome is already recorded in its key's family, so
no planted row can hide a new outcome; the next free number is taken whatever a client
planted. Rows written by that earlier form are still read as re-executions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from groundlock.contracts.audit_rows import ValidationRow

__all__ = [
    "RERUN_SEPARATOR",
    "KeyedRow",
    "executions_of",
    "family_index",
    "new_rows",
    "rerun_of",
]

RERUN_SEPARATOR = "~"
"""Between a run id and its re-execution number. Served client run ids may not hold it."""

_LEGACY_SUFFIX = 16


class KeyedRow(Protocol):
    """What the key rule reads of a row."""

    def key(self) -> tuple[str, str] | None:
        """``(request_id, run_id)``, or None for a row with no key."""

    def outcome(self) -> tuple[object, ...]:
        """What the caller received, as the row records it."""


RowT = TypeVar("RowT", bound=KeyedRow)


def rerun_of(run_id: str, outcome_hash: object = None) -> str | None:
    """The run id that ``run_id`` re-executes, or None if it is no derived run id.

    ``<run>~<n>`` (n a number from 1, no leading zero) is one; so is the earlier form
    ``<run>~<the first 16 hex digits of the row's own outcome hash>`` (``outcome_hash``).
    """
    head, separator, tail = run_id.rpartition(RERUN_SEPARATOR)
    if not separator:
        return None
    if tail.isascii() and tail.isdigit() and tail[0] != "0":
        return head
    legacy = str(outcome_hash or "")[:_LEGACY_SUFFIX] or "0" * _LEGACY_SUFFIX
    return head if tail == legacy else None


def _number(run_id: str, base: str) -> int | None:
    tail = run_id[len(base) + 1 :]
    return int(tail) if tail.isascii() and tail.isdigit() and tail[0] != "0" else None


def family_index(
    present: Mapping[tuple[str, str], tuple[object, ...]],
) -> dict[tuple[str, str, tuple[object, ...]], str]:
    """Where each outcome of each key's family is recorded.

    Maps ``(request_id, plain run_id, outcome)`` to the run id (plain or derived) holding it.

    What the second table of a request follows: its row goes where the first table put the
    same execution, so both tables number re-executions alike whatever order concurrent
    writers commit in.
    """
    placed: dict[tuple[str, str, tuple[object, ...]], str] = {}
    for (request_id, run_id), outcome in present.items():
        base = rerun_of(run_id, outcome[0] if outcome else None)
        placed.setdefault((request_id, run_id if base is None else base, outcome), run_id)
    return placed


def new_rows(
    rows: Iterable[RowT],
    present: Mapping[tuple[str, str], tuple[object, ...]],
    rerun: Callable[[RowT, str], RowT],
    placed: Mapping[tuple[str, str, tuple[object, ...]], str] | None = None,
) -> list[tuple[RowT, bool]]:
    """The rows of ``rows`` a table holding ``present`` does not hold yet, in order.

    ``present`` maps each key the table holds, for every request id among ``rows`` (all its
    run ids, derived ones included), to that key's outcome. A row whose outcome its key's
    family (the key and its derived keys) already records is left out; one with a new
    outcome is kept, under ``rerun(row, derived_run_id)`` if its key is taken. Each kept
    row comes with whether it is such a re-execution. Unkeyed rows are always kept.

    ``placed`` (:func:`family_index` of the table written first) fixes where an execution
    goes when that table already holds it: the same run id, plain or derived.
    """
    families: dict[tuple[str, str], dict[str, tuple[object, ...]]] = {}
    for (request_id, run_id), outcome in present.items():
        base = rerun_of(run_id, outcome[0] if outcome else None)
        families.setdefault((request_id, run_id if base is None else base), {})[run_id] = outcome
    kept: list[tuple[RowT, bool]] = []
    for row in rows:
        key = row.key()
        if key is None:
            kept.append((row, False))
            continue
        family = families.setdefault(key, {})
        outcome = row.outcome()
        if outcome in family.values():
            continue  # this execution is recorded already
        request_id, run_id = key
        target = (placed or {}).get((request_id, run_id, outcome))
        if target is not None and target not in family:
            family[target] = outcome
            kept.append((row if target == run_id else rerun(row, target), target != run_id))
            continue
        if run_id not in family:
            family[run_id] = outcome
            kept.append((row, False))
            continue
        numbers = (_number(other, run_id) for other in family if other != run_id)
        derived = f"{run_id}{RERUN_SEPARATOR}{max(filter(None, numbers), default=0) + 1}"
        family[derived] = outcome
        kept.append((rerun(row, derived), True))
    return kept


def executions_of(
    records: Iterable[ValidationRow], keys: Collection[tuple[str, str]]
) -> dict[tuple[str, str], tuple[ValidationRow, ...]]:
    """Each of ``keys``' executions among ``records``: its record first, then re-executions.

    ``records`` are validations rows oldest first, as the trail holds them (the key rule
    applied), and may include rows of other keys. A key's record is its first row; its
    re-executions are the rows under its derived run ids, oldest first. A key with no
    record is absent. What a batch job reads to resume: a request already recorded, or
    re-executed since, is not answered again.
    """
    asked = set(keys)
    found: dict[tuple[str, str], ValidationRow] = {}
    reruns: dict[tuple[str, str], list[ValidationRow]] = {}
    for row in records:
        request_id, run = row.request_id or "", row.run_id or ""
        if row.request_id is None:
            continue
        if (request_id, run) in asked:
            found.setdefault((request_id, run), row)
        # (Not elif: a key asked for may itself be another's re-execution.)
        base = rerun_of(run, row.outcome_sha256)
        if base is not None and (request_id, base) in asked:
            kept = reruns.setdefault((request_id, base), [])
            if row not in kept:  # a reader may return a row twice (joined to two keys)
                kept.append(row)
    return {key: (record, *reruns.get(key, ())) for key, record in found.items()}
