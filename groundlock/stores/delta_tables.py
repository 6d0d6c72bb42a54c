"""The audit tables themselves: opening, creating and upgrading them, and checking them.

A table is created append-only, partitioned by UTC day (:mod:`groundlock.stores.layout`;
one an older groundlock made unpartitioned is used as it is) and **keeping its log**:
Delta's log cleanup (delta-rs 1.x and Spark alike run it after writing a log checkpoint,
every ``delta.checkpointInterval`` commits, 100 by default in delta-rs, when
``delta.enableExpiredLogCleanup`` is true, the default) deletes commit files older than
``delta.logRetentionDuration`` (30 days by default), and with them the chain links they
carry. So tables are created with ``delta.enableExpiredLogCleanup=false``, which stops the
automatic cleanup, and ``delta.logRetentionDuration`` of 100 years, which also stops an
explicit ``DeltaTable.cleanup_metadata()`` (delta-rs applies the retention there and
ignores the flag). The creating commit carries :data:`CHAIN_START`, as does the commit that
sets them on a table an older groundlock made: from that version on, every commit that adds
rows is one of the store's, linked, and an unlinked one is tampering, not history.

Shared by the store's write, read and upkeep halves (:mod:`groundlock.stores.delta`,
:mod:`~groundlock.stores.delta_reads`, :mod:`~groundlock.stores.delta_upkeep`). deltalake
is imported inside each function, never at module level: nothing may touch delta-rs before
a fork (see :mod:`groundlock.stores.delta`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from groundlock.contracts.audit_rows import FeedbackRow, QueryRow, TableRow, ValidationRow
from groundlock.stores.arrow import arrow_schema
from groundlock.stores.layout import PARTITION_BY, partitioned_schema, row_fields

if TYPE_CHECKING:
    from arro3.core import Field as ArrowField
    from arro3.core import Schema
    from deltalake import DeltaTable

__all__ = [
    "CHAIN_START",
    "LOG_KEPT",
    "TABLES",
    "add_new_columns",
    "keep_log",
    "log_cleanup_risk",
    "open_table",
    "schema_problem",
    "writable",
]

TABLES: tuple[type[TableRow], ...] = (ValidationRow, QueryRow, FeedbackRow)
"""Every audit table, by its row model."""

LOG_KEPT = {
    "delta.enableExpiredLogCleanup": "false",
    "delta.logRetentionDuration": "interval 36500 days",
}
"""The table configuration that keeps every commit, and so every chain link."""
CHAIN_START = "groundlock.chain.start"
"""The ``commitInfo`` key of the commit from which every append to the table is linked."""


def open_table(
    uri: str,
    row_type: type[TableRow],
    storage_options: Mapping[str, str] | None,
    *,
    create: bool = False,
) -> DeltaTable:
    """The table at ``uri``; with ``create``, made first (append-only) if it does not exist.

    A racing process may create it first: that is not a failure. When the table can be
    neither created nor opened, the reason it could not be created is raised, as it says
    more than "not found".
    """
    from deltalake import CommitProperties, DeltaTable  # noqa: PLC0415  (never before a fork)

    options = dict(storage_options) if storage_options else None
    failed: Exception | None = None
    if create and not DeltaTable.is_deltatable(uri, storage_options=options):
        try:
            DeltaTable.create(
                uri,
                partitioned_schema(row_type),  # by UTC day (stores/layout.py)
                mode="ignore",
                partition_by=list(PARTITION_BY),
                configuration={"delta.appendOnly": "true", **LOG_KEPT},
                storage_options=options,
                commit_properties=CommitProperties(custom_metadata={CHAIN_START: "2"}),
            )
        except Exception as exc:  # noqa: BLE001  (a racing process may create it first)
            failed = exc
    try:
        return DeltaTable(uri, storage_options=options)
    except Exception:
        if failed is not None:
            raise failed from None
        raise


def _fields(schema: Schema) -> list[ArrowField]:
    return [schema.field(i) for i in range(len(schema))]


def add_new_columns(table: DeltaTable, row_type: type[TableRow]) -> bool:
    """Upgrade a table an older groundlock created: add the nullable columns it lacks.

    Only a table whose every column is still a row column of the same type qualifies, so an
    unknown or retyped column stays an incompatible schema. Old rows read the new columns as
    null. Two processes upgrading at once conflict; the loser finds the columns present.
    Returns whether the table may have changed (the caller opens it again).
    """
    from deltalake.schema import Field  # noqa: PLC0415  (never imported before a fork)

    want = {f.name: f for f in _fields(arrow_schema(row_type))}
    have = row_fields(table)  # a day partition is no row column
    if any(f.name not in want or str(f.type) != str(want[f.name].type) for f in have):
        return False
    names = {f.name for f in have}
    missing = [f for name, f in want.items() if name not in names]
    if not missing or not all(f.nullable for f in missing):
        return False
    with contextlib.suppress(Exception):  # a racing process may add them first
        table.alter.add_columns([Field.from_arrow(f) for f in missing])
    return True


def keep_log(table: DeltaTable) -> bool:
    """Upgrade a table an older groundlock created to keep its log (:data:`LOG_KEPT`).

    Sets only the settings the table lacks, never one an operator set: a value of theirs is
    warned about (:func:`log_cleanup_risk`), not overwritten. Returns whether the table may
    have changed (the caller opens it again).
    """
    from deltalake import CommitProperties  # noqa: PLC0415  (never imported before a fork)

    configuration = table.metadata().configuration
    missing = {name: value for name, value in LOG_KEPT.items() if name not in configuration}
    if not missing:
        return False
    with contextlib.suppress(Exception):  # a racing process may set them first
        table.alter.set_table_properties(
            missing, commit_properties=CommitProperties(custom_metadata={CHAIN_START: "2"})
        )
    return True


def log_cleanup_risk(table: DeltaTable) -> str | None:
    """Why Delta's log cleanup may delete this table's old commits (and links), or None.

    The store warns rather than refuses: the rows are still written and durable, only the
    oldest links could go, and ``records verify`` then says so (``LOG_TRUNCATED``). Failing
    every request over a table setting would trade the trail's rows for its history.
    """
    configuration = table.metadata().configuration
    if configuration.get("delta.enableExpiredLogCleanup", "true").strip().lower() != "false":
        retention = configuration.get("delta.logRetentionDuration") or "30 days, the default"
        return (
            "has delta.enableExpiredLogCleanup set: Delta's log cleanup deletes commits older "
            f"than delta.logRetentionDuration ({retention}) at each log checkpoint, with their "
            "chain links; set it to false to keep them"
        )
    return None


def schema_problem(table: DeltaTable, row_type: type[TableRow]) -> str | None:
    """Why ``table`` cannot hold ``row_type``'s rows (its schema, not append-only), or None."""
    want = [(f.name, str(f.type), f.nullable) for f in _fields(arrow_schema(row_type))]
    have = [(f.name, str(f.type), f.nullable) for f in row_fields(table)]
    if sorted(want) != sorted(have):
        return "has an incompatible schema"
    if table.metadata().configuration.get("delta.appendOnly") != "true":
        return "is not append-only"
    return None


def writable(directory: Path) -> bool:
    """Whether a file can be written in ``directory`` (a local table's log)."""
    # os.access answers for root as if permissions did not apply: try a real write.
    probe = directory / f".groundlock-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        return False
    return True
