"""How the audit tables are laid out on disk: one Delta partition per UTC day.

A read of a day or a week (``records list --since``, ``report``) must not scan a trail of
months. Each audit table is partitioned by ``day_utc``, the UTC date of the row's
``timestamp_utc``, and a read of a time window adds the days it covers to its SQL
(:func:`day_condition`), so delta-rs selects the window's files from the log by their
partition value, exactly, before it opens any. (Statistics on ``timestamp_utc`` skip files
too, but only while each file spans a short time; a partition keeps every file to one day
whatever the order of commits, and through compaction, which never merges two partitions.)

``day_utc`` is derived when rows are written, never a field of the row models (the audit
contract): Delta keeps a partition value in the log, not in the Parquet file, so a data
file holds exactly the row model's columns and the hash chain's row bytes are unchanged.
What the log claims about a file's day is checked by ``records verify`` against the rows
the file holds (:func:`day_mismatch`): a file moved to another day in the log would hide
its rows from that day's reads.

A table created by an earlier groundlock is not partitioned, and stays so: Delta cannot
partition a table without rewriting it, and a rewrite removes and re-adds every row, which
no chain link vouches for. Such a table is written and read as before; its window reads
still skip files by the statistics on ``timestamp_utc``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from arro3.core import Array, DataType, Field, Schema, Table

from groundlock.contracts.audit_rows import TableRow
from groundlock.stores.arrow import arrow_schema, to_arrow

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "DAY_COLUMN",
    "PARTITION_BY",
    "compact_by_day",
    "day_condition",
    "day_mismatch",
    "files_scanned",
    "is_partitioned",
    "partitioned_schema",
    "row_fields",
    "table_rows",
]

DAY_COLUMN = "day_utc"
"""The partition column: the UTC date of ``timestamp_utc``."""
PARTITION_BY = (DAY_COLUMN,)
"""What a new audit table is partitioned by."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1)
_DAY_MICROS = 86_400_000_000
_DAY_TYPE = DataType.date32()


def partitioned_schema(row_type: type[TableRow]) -> Schema:
    """A new table's schema: the row model's columns, then ``day_utc``."""
    schema = arrow_schema(row_type)
    fields = [schema.field(i) for i in range(len(schema))]
    return Schema([*fields, Field(DAY_COLUMN, _DAY_TYPE, nullable=False)])


def is_partitioned(table: DeltaTable) -> bool:
    """Whether ``table`` is laid out by day (an earlier groundlock's table is not)."""
    return DAY_COLUMN in table.metadata().partition_columns


def row_fields(table: DeltaTable) -> list[Field]:
    """``table``'s columns that hold row fields: every one but a ``day_utc`` partition.

    A ``day_utc`` that is not a DATE partition column is kept, so that the schema check
    refuses it as a column no row model has.
    """
    schema = table.schema().to_arrow()
    fields = [schema.field(i) for i in range(len(schema))]
    if not is_partitioned(table):
        return fields
    return [f for f in fields if f.name != DAY_COLUMN or str(f.type) != str(_DAY_TYPE)]


def table_rows(table: DeltaTable, row_type: type[TableRow], rows: Sequence[TableRow]) -> Table:
    """``rows`` as the Arrow table to append to ``table``: with ``day_utc`` if it has one."""
    data = to_arrow(row_type, rows)
    if not is_partitioned(table):
        return data
    # timedelta.days floors, so an instant before 1970 still falls on its own day.
    days = Array([(row.timestamp_utc - _EPOCH).days for row in rows], DataType.int32())
    return data.append_column(Field(DAY_COLUMN, _DAY_TYPE, nullable=False), days.cast(_DAY_TYPE))


def day_condition(since: datetime | None, until: datetime | None) -> str:
    """The partition predicate of rows with ``since <= timestamp_utc < until`` (UTC).

    It admits every day such a row can fall on and no other, so delta-rs reads only those
    days' files; the condition on ``timestamp_utc`` still picks the rows. Only for a
    partitioned table (:func:`is_partitioned`); empty when the window is open at both ends.
    """
    conditions = []
    if since is not None:
        conditions.append(f"{DAY_COLUMN} >= DATE '{since.astimezone(UTC).date().isoformat()}'")
    if until is not None:  # exclusive: its last day is that of the microsecond before it
        last = (until.astimezone(UTC) - timedelta(microseconds=1)).date()
        conditions.append(f"{DAY_COLUMN} <= DATE '{last.isoformat()}'")
    return " AND ".join(conditions)


def day_mismatch(
    partition_values: Mapping[str, object], timestamps: Iterable[object]
) -> str | None:
    """What is wrong with a data file's day partition, given its rows' stored timestamps.

    ``partition_values`` is the file's ``add`` action's, ``timestamps`` the file's
    ``timestamp_utc`` values as stored (integer microseconds). None when the file is not
    partitioned by day or every row falls on its day; else one line saying what differs.
    """
    if DAY_COLUMN not in partition_values:
        return None
    claimed = partition_values[DAY_COLUMN]
    try:
        day = (date.fromisoformat(str(claimed)) - _EPOCH_DAY).days
    except ValueError:
        return f"its day partition {claimed!r} is not a date"
    stored = list(timestamps)
    others = sorted({t // _DAY_MICROS for t in stored if isinstance(t, int)} - {day})
    unset = sum(1 for t in stored if not isinstance(t, int))
    if not others and not unset:
        return None
    if not others:
        return f"the file in day {claimed} holds {unset} row(s) with no timestamp"
    return (
        f"the log puts the file in day {claimed} but it holds rows of {len(others)} other "
        f"day(s) (first: {_day_text(others[0])}): reads of a day would miss them"
    )


def _day_text(day: int) -> str:
    try:
        return (_EPOCH_DAY + timedelta(days=day)).isoformat()
    except OverflowError:
        return f"day {day} since 1970"


def files_scanned(table: DeltaTable, sql: str) -> int:
    """How many data files of ``table`` (registered as ``t``) running ``sql`` opens.

    DataFusion's own count (``files_opened`` in ``EXPLAIN ANALYZE``, summed over the
    plan's scans), after delta-rs has chosen the files from the log. The query runs again,
    with DataFusion's splitting of a large file into byte ranges off (so that a file counts
    once; which files are read does not change). For benchmarks and tests, which show that
    a read skips files; not for the hot path.
    """
    import re  # noqa: PLC0415

    from deltalake import QueryBuilder  # noqa: PLC0415  (never imported before a fork)

    builder = QueryBuilder().register("t", table)
    builder.execute("SET datafusion.optimizer.repartition_file_scans = false").read_all()
    result = builder.execute(f"EXPLAIN ANALYZE {sql}").read_all()
    plan = "\n".join(str(line) for column in result.columns for line in column.to_pylist())
    counts = re.findall(r"\bfiles_opened=(\d+)", plan)
    if not counts and "DataSourceExec" not in plan:
        return 0  # no file to scan (an empty table, or every file skipped)
    if not counts:
        raise ValueError("the plan reports no files_opened metric (another DataFusion?)")
    return sum(int(count) for count in counts)


def compact_by_day(table: DeltaTable) -> dict[str, Any]:
    """Merge ``table``'s small files, a commit per day: no merged file holds two days.

    delta-rs never bins files of two partitions together; a commit per partition keeps
    each compaction commit (which ``records verify`` reads back whole) to one day's files.
    An unpartitioned table is one partition: its files are merged in insertion order, so
    each merged file still spans a short stretch of time. Returns delta-rs's metrics.
    """
    return table.optimize.compact(min_commit_interval=timedelta(0))
