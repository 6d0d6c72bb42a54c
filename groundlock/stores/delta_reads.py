"""The Delta store's read half: a :class:`~groundlock.stores.sink.TrailQuery` as SQL.

:class:`~groundlock.DeltaAuditStore` answers :class:`~groundlock.stores.sink.AuditReader`
through these functions. Every value of a query reaches DataFusion as a quoted literal
(:func:`~groundlock.stores.readers.sql_text`), never as text of its own; the columns are
ours. Lookups by many keys join a ``VALUES`` list, which DataFusion plans far faster than a
long ``IN`` list.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from groundlock.contracts.audit_rows import TableRow, ValidationRow
from groundlock.stores.hashchain import row_hash
from groundlock.stores.keys import executions_of
from groundlock.stores.layout import row_fields
from groundlock.stores.readers import (
    InvalidRow,
    TrailDamaged,
    query_batches,
    read_rows,
    run_query,
    select_list,
    sql_text,
    table_row,
)
from groundlock.stores.sink import TrailQuery

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from groundlock.stores.delta import DeltaAuditStore

__all__ = [
    "LOOKUP_CHUNK",
    "executions",
    "present",
    "rows",
    "sql_time",
    "stored_row_hashes",
    "where_sql",
]

RowT = TypeVar("RowT", bound=TableRow)

LOOKUP_CHUNK = 5_000
"""Keys per lookup join."""
_IDS_CHUNK = 500
"""Request ids per ``IN`` list of a query (this long still plans quickly)."""


def sql_time(moment: datetime) -> str:
    """A SQL timestamp literal, in UTC (the tables store UTC)."""
    return f"TIMESTAMP {sql_text(moment.astimezone(UTC).replace(tzinfo=None).isoformat() + 'Z')}"


_NANOSECOND_RANGE = (
    datetime(1677, 9, 22, tzinfo=UTC),
    datetime(2262, 4, 11, tzinfo=UTC),
)
"""Where DataFusion's TIMESTAMP literals hold a moment (they count nanoseconds in 64 bits)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _time_condition(operator: str, moment: datetime) -> str:
    """``timestamp_utc <operator> moment``, for any moment a ``datetime`` holds.

    Inside DataFusion's literal range, as a TIMESTAMP literal (file statistics can skip
    files on it); outside it, on the column's integer microseconds, which hold every year a
    ``datetime`` holds: a literal there fails the read, and an open-ended window ("since
    year 1") must read as one.
    """
    low, high = _NANOSECOND_RANGE
    if low <= moment <= high:
        return f"timestamp_utc {operator} {sql_time(moment)}"
    delta = moment - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return f"CAST(timestamp_utc AS BIGINT) {operator} {micros}"


def where_sql(query: TrailQuery, ids: Sequence[str] | None = None) -> str:
    """The SQL condition of ``query``'s filters; ``ids`` stands for its request ids."""
    conditions = [
        f"{name} = {sql_text(value)}"
        for name in TrailQuery.VALUE_FILTERS
        if (value := getattr(query, name)) is not None
    ]
    if query.since is not None:
        conditions.append(_time_condition(">=", query.since))
    if query.until is not None:
        conditions.append(_time_condition("<", query.until))
    if ids is not None:
        conditions.append(f"request_id IN ({', '.join(sql_text(i) for i in ids)})")
    return " AND ".join(conditions)


def rows(
    store: DeltaAuditStore, row_type: type[RowT], query: TrailQuery
) -> list[RowT | InvalidRow]:
    """The rows ``query`` selects from one of ``store``'s tables (see ``AuditReader.rows``).

    Its time window also goes to the reader as such, which on a table laid out by day adds
    the days it covers (:func:`~groundlock.stores.layout.day_condition`): delta-rs then
    opens only those days' files.
    """
    query.check(row_type)
    order = "timestamp_utc DESC" if query.newest_first else "timestamp_utc"
    window = (query.since, query.until)
    if query.request_ids is None:
        return read_rows(
            store, row_type, where_sql(query), order_by=order, limit=query.limit, window=window
        )
    ids = sorted(set(query.request_ids))
    if not ids:
        return []
    # Many ids: one read per chunk, merged in order (the limit applies to the merge).
    found: list[RowT | InvalidRow] = []
    for start in range(0, len(ids), _IDS_CHUNK):
        chunk = ids[start : start + _IDS_CHUNK]
        condition = where_sql(query, chunk)
        found.extend(
            read_rows(store, row_type, condition, order_by=order, limit=query.limit, window=window)
        )
    if len(ids) > _IDS_CHUNK:
        found.sort(key=_moment, reverse=query.newest_first)
    return found if query.limit is None else found[: query.limit]


def _moment(row: TableRow | InvalidRow) -> tuple[int, str]:
    """A sort key by time that an invalid row (its time unreadable) also has."""
    value = row.get("timestamp_utc") if isinstance(row, InvalidRow) else row.timestamp_utc
    if isinstance(value, datetime):
        return (1, value.isoformat())
    return (0, str(value))


def present(
    table: DeltaTable, ids: Sequence[str], outcome_fields: Sequence[str]
) -> dict[tuple[str, str], tuple[object, ...]]:
    """Every key ``table`` holds for ``ids``, with its outcome (the first row's)."""
    found: dict[tuple[str, str], tuple[object, ...]] = {}
    columns = "".join(f", t.{name}" for name in outcome_fields)
    for start in range(0, len(ids), LOOKUP_CHUNK):
        values = ",".join(f"({sql_text(i)})" for i in ids[start : start + LOOKUP_CHUNK])
        sql = (
            f"SELECT t.request_id, t.run_id{columns} FROM t "  # noqa: S608  (quoted)
            f"JOIN (VALUES {values}) AS k(id) ON t.request_id = k.id"
        )
        for request_id, run_id, *outcome in query(table, sql):
            found.setdefault((request_id, run_id or ""), tuple(outcome))
    return found


def query(table: DeltaTable, sql: str) -> list[tuple[Any, ...]]:
    """``sql`` over ``table``; a failed read names its table and data file, never a path."""
    name = table.table_uri.rstrip("/").rsplit("/", 1)[-1]
    return run_query(table, sql, f"the {name} table")


def executions(
    store: DeltaAuditStore, keys: Collection[tuple[str, str]]
) -> dict[tuple[str, str], tuple[ValidationRow, ...]]:
    """Each key's record and re-executions (see ``AuditReader.executions``).

    One join per chunk of keys on the request id, filtered to the key's run id or its
    derived form: the other runs of the same request ids are joined and dropped, not
    returned. Which row is the record and which are re-executions is the key rule's
    (:func:`~groundlock.stores.keys.executions_of`).
    """
    from deltalake import DeltaTable  # noqa: PLC0415  (never imported before a fork)

    uri = store.table_uri(ValidationRow)
    wanted = sorted(set(keys))
    options = store.storage_options or None
    if not wanted or not DeltaTable.is_deltatable(uri, storage_options=options):
        return {}
    table = store._open(ValidationRow)
    fields = {field.name for field in table.schema().fields}
    columns = list(ValidationRow.model_fields)
    selected = select_list(columns, fields, prefix="t.")
    read: list[ValidationRow] = []
    for start in range(0, len(wanted), LOOKUP_CHUNK):
        chunk = wanted[start : start + LOOKUP_CHUNK]
        values = ",".join(f"({sql_text(i)}, {sql_text(r)})" for i, r in chunk)
        sql = (
            f"SELECT {selected} FROM t JOIN (VALUES {values}) AS k(id, run) "  # noqa: S608
            "ON t.request_id = k.id WHERE COALESCE(t.run_id, '') = k.run "
            "OR starts_with(t.run_id, concat(k.run, '~')) ORDER BY t.timestamp_utc"
        )
        for row_values in query(table, sql):
            row = table_row(ValidationRow, dict(zip(columns, row_values, strict=True)))
            if isinstance(row, InvalidRow):  # never resumed from: the job fails, named
                raise TrailDamaged(row.describe())
            read.append(row)
    if len(wanted) > LOOKUP_CHUNK:
        read.sort(key=lambda row: row.timestamp_utc)
    return executions_of(read, wanted)


def stored_row_hashes(table: DeltaTable) -> list[bytes]:
    """The :func:`~groundlock.stores.hashchain.row_hash` of every row ``table`` holds.

    Values as stored, as the verifier reads them from a data file: a timestamp as integer
    microseconds, a column a row's file lacks as null. What the first format-2 link of a
    table that already holds rows starts its running row set from; read once per table.
    """
    from arro3.core import DataType  # noqa: PLC0415  (never imported before a fork)

    selected = []
    for column in row_fields(table):  # a day partition is in the log, not the rows' bytes
        quoted = '"' + column.name.replace('"', '""') + '"'
        if DataType.is_timestamp(column.type):
            selected.append(f"CAST({quoted} AS BIGINT) AS {quoted}")
        else:
            selected.append(quoted)
    name = table.table_uri.rstrip("/").rsplit("/", 1)[-1]
    hashes: list[bytes] = []
    for batch in query_batches(table, f"SELECT {', '.join(selected)} FROM t", f"the {name} table"):  # noqa: S608  (our columns)
        names = list(batch.schema.names)
        columns = [column.to_pylist() for column in batch.columns]
        hashes.extend(
            row_hash(dict(zip(names, values, strict=True))) for values in zip(*columns, strict=True)
        )
    return hashes
