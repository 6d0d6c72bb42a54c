"""The Delta store's upkeep: compaction and vacuum, neither of which changes a row.

Kept apart from writing and reading because an operator runs it, not a request: it is
where retention is enforced (a vacuum below the configured minimum is refused) and where a
damaged file stops the work with its name rather than a delta-rs message quoting a path.

Neither breaks the hash chain: a compaction carries no link and moves rows unchanged, and
once a vacuum has deleted the files it replaced, ``records verify`` checks those rows through
the running row set each format-2 link carries (:mod:`groundlock.stores.lthash`), not
through their commits' own files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundlock.stores.delta_tables import TABLES
from groundlock.stores.layout import compact_by_day
from groundlock.stores.readers import TrailDamaged, damaged_file

if TYPE_CHECKING:
    from groundlock.stores.delta import DeltaAuditStore

__all__ = ["compact", "vacuum"]


def compact(store: DeltaAuditStore) -> dict[str, dict[str, Any]]:
    """Merge small files in every table, a day at a time; rows unchanged (``dataChange=false``).

    A commit per day compacted (:func:`~groundlock.stores.layout.compact_by_day`): no merged
    file holds two days, and ``records verify`` reads each compaction commit back a day at a
    time.

    Raises :class:`~groundlock.stores.readers.TrailDamaged` naming the table and the data
    file when a file to merge is missing or unreadable.
    """
    compacted = {}
    for row_type in TABLES:
        table = store._open(row_type)
        try:
            compacted[row_type.table] = compact_by_day(table)
        except Exception as exc:
            found = damaged_file(table, exc)
            if found is None:
                raise
            raise TrailDamaged(
                f"the {row_type.table} table cannot be compacted: its data file "
                f"{found[0]} is {found[1]}"
            ) from None
    return compacted


def vacuum(store: DeltaAuditStore, retention_hours: int, *, dry_run: bool) -> dict[str, list[str]]:
    """Delete files no longer referenced and older than ``retention_hours``.

    Refuses a retention below the store's ``min_vacuum_retention_hours``: a shorter one
    could delete files that a reader (or time travel for an audit) still needs. Refuses one
    past 1,000,000 h (114 years) too: delta-rs panics on a retention past what its clock
    holds, and reads 2**64 - 1 as a negative one, deleting every unreferenced file.
    """
    if not 0 <= retention_hours <= 1_000_000:
        raise ValueError(f"retention of {retention_hours} h is not between 0 and 1,000,000 h")
    if retention_hours < store.min_vacuum_retention_hours:
        raise ValueError(
            f"retention of {retention_hours} h is below the configured minimum of "
            f"{store.min_vacuum_retention_hours} h"
        )
    return {
        row_type.table: store._open(row_type).vacuum(
            retention_hours=retention_hours, dry_run=dry_run, enforce_retention_duration=False
        )
        for row_type in TABLES
    }
