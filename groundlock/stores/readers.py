"""What every reader of the audit tables shares: bad rows kept and flagged, damage named.

A reader (``records``, ``report``, ``replay``) must neither stop at one row that breaks its
model (a negative or NaN latency, a null where a value belongs, a timestamp past the years
Python holds) nor hide it: :func:`read_rows` returns such a row as an :class:`InvalidRow`,
its values as stored and every rule it breaks, for the reader to show and flag.
:meth:`~groundlock.stores.delta.DeltaAuditStore.select` keeps its contract (row models
only) and refuses such a row with a one-line :class:`TrailDamaged` instead.

A data file that is gone or cannot be read stops a read with :class:`TrailDamaged`, whose
message names the table and the file by its name inside the table. delta-rs's own message
is never shown: it quotes paths and URIs, and a URI may carry a credential. The lakehouse's
readers (the evaluation log, the index) read through the same helpers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from groundlock.contracts.audit_rows import TableRow
from groundlock.stores.causes import store_error_cause
from groundlock.stores.layout import day_condition, is_partitioned
from groundlock.stores.sink import AuditUnavailable

if TYPE_CHECKING:
    from arro3.core import RecordBatch
    from deltalake import DeltaTable

    from groundlock.stores.delta import DeltaAuditStore

__all__ = [
    "InvalidRow",
    "TrailDamaged",
    "check_files",
    "damaged",
    "damaged_file",
    "missing_file",
    "query_batches",
    "query_dicts",
    "read_rows",
    "read_table",
    "run_query",
    "select_list",
    "sql_text",
    "table_row",
    "valid_rows",
]

RowT = TypeVar("RowT", bound=TableRow)


def sql_text(value: str) -> str:
    """``value`` as a SQL string literal (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


_TIMESTAMP = "timestamp_utc"
"""Read as its integer microseconds and converted here: one value past the years Python
holds would otherwise fail the conversion of the whole column, and with it the read. So is
every other timestamp column a table holds."""
_TIMESTAMP_TYPES = frozenset({"timestamp", "timestamp_ntz"})


class TrailDamaged(AuditUnavailable):
    """A table cannot be read: a data file is missing or unreadable, or a row breaks its model.

    The message is one line that names the table (and the file or the row), never a path
    or a URI.
    """


@dataclass(frozen=True, slots=True)
class InvalidRow:
    """A stored row that breaks its row model: its values as read, and what it breaks."""

    table: str
    """The table's name (``validations``, ``queries``, ``feedback``, ``evidence``)."""
    values: Mapping[str, Any]
    """Every column as read; a timestamp Python cannot hold is a text saying so."""
    problems: tuple[str, ...]
    """Each rule broken, as ``field: rule`` (``row: rule`` for a rule across fields);
    pydantic's wording, never the value."""

    @property
    def fields(self) -> frozenset[str]:
        """The columns at fault."""
        return frozenset(problem.split(":", 1)[0].split(".", 1)[0] for problem in self.problems)

    def get(self, name: str) -> Any:  # noqa: ANN401  (a column's value, of its column's type)
        """The value of column ``name`` as read (a list as a tuple, as the row model has it)."""
        value = self.values.get(name)
        return tuple(value) if isinstance(value, list) else value

    def describe(self) -> str:
        """One line: which row (record, request, run) and every rule it breaks."""
        return (
            f"the {self.table} table holds a row that breaks its model (record "
            f"{self.get('record_id') or '-'}, request {self.get('request_id') or '-'}, "
            f"run {self.get('run_id') or '-'}): {'; '.join(self.problems)}"
        )


def valid_rows(rows: Sequence[RowT | InvalidRow]) -> list[RowT]:
    """``rows`` as row models, or :class:`TrailDamaged` naming the first that breaks its model."""
    for row in rows:
        if isinstance(row, InvalidRow):
            raise TrailDamaged(row.describe())
    return [row for row in rows if not isinstance(row, InvalidRow)]


def read_rows(
    store: DeltaAuditStore,
    row_type: type[RowT],
    where: str = "",
    *,
    order_by: str = "timestamp_utc",
    limit: int | None = None,
    window: tuple[datetime | None, datetime | None] = (None, None),
) -> list[RowT | InvalidRow]:
    """The rows of one of ``store``'s tables, oldest first, a row that breaks its model kept.

    As :meth:`~groundlock.stores.delta.DeltaAuditStore.select`, except that such a row is
    returned as an :class:`InvalidRow` in its place instead of failing the read, and that
    ``window`` lets a table laid out by day skip files (see :func:`read_table`). Raises
    :class:`AuditUnavailable` when the table does not exist and :class:`TrailDamaged` when
    it cannot be opened or one of its data files cannot be read.
    """
    from deltalake.exceptions import TableNotFoundError  # noqa: PLC0415  (never before a fork)

    try:
        table = store._open(row_type)
    except TableNotFoundError:
        raise AuditUnavailable(f"the {row_type.table} table does not exist") from None
    except Exception as exc:  # noqa: BLE001  (a damaged log: named by kind, never by path)
        raise TrailDamaged(
            f"the {row_type.table} table cannot be opened "
            f"({type(exc).__name__}: {store_error_cause(exc)})"
        ) from None
    return read_table(table, row_type, where, order_by=order_by, limit=limit, window=window)


def read_table(
    table: DeltaTable,
    row_type: type[RowT],
    where: str = "",
    *,
    order_by: str = "timestamp_utc",
    limit: int | None = None,
    label: str | None = None,
    window: tuple[datetime | None, datetime | None] = (None, None),
) -> list[RowT | InvalidRow]:
    """The rows of ``table`` (of ``row_type``'s model), as :func:`read_rows` returns them.

    ``label`` is how an error names the table (default ``the <table> table``). A column the
    table lacks (written by an older groundlock, not yet upgraded) reads as null.
    ``window`` is the ``(since, until)`` that ``where`` selects ``timestamp_utc`` by: on a
    table laid out by day, the partition predicate of those days is added
    (:func:`~groundlock.stores.layout.day_condition`), so delta-rs opens only their files;
    ``where`` still picks the rows.
    """
    fields = table.schema().fields
    present = {field.name for field in fields}
    columns = list(row_type.model_fields)
    # Every timestamp column, not only timestamp_utc: one value past the years Python holds
    # (a review's time in the evaluation log, say) must not make the whole table unreadable.
    timestamps = [
        field.name
        for field in fields
        if getattr(field.type, "type", None) in _TIMESTAMP_TYPES and field.name in columns
    ]
    selected = select_list(columns, present, timestamps=timestamps)
    sql = f"SELECT {selected} FROM t"  # noqa: S608  (column names are ours)
    days = day_condition(*window) if is_partitioned(table) else ""
    if where or days:
        sql += f" WHERE {' AND '.join(f'({c})' for c in (where, days) if c)}"
    sql += f" ORDER BY {order_by}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    label = label or f"the {row_type.table} table"
    return [
        table_row(row_type, dict(zip(columns, values, strict=True)), timestamps=timestamps)
        for values in run_query(table, sql, label)
    ]


def select_list(
    columns: Sequence[str],
    present: set[str],
    prefix: str = "",
    *,
    timestamps: Collection[str] = (_TIMESTAMP,),
) -> str:
    """The SELECT list of ``columns``: absent ones as null, ``timestamps`` as microseconds."""
    selected = []
    for name in columns:
        if name not in present:
            selected.append(f"NULL AS {name}")
        elif name in timestamps:
            # Under a name of its own: DataFusion takes ``t.<name>`` beside an alias ``<name>``
            # for an ambiguous column.
            selected.append(f"CAST({prefix}{name} AS BIGINT) AS {name}_micros")
        else:
            selected.append(f"{prefix}{name}")
    return ", ".join(selected)


def table_row(
    row_type: type[RowT],
    values: dict[str, Any],
    *,
    timestamps: Collection[str] = (_TIMESTAMP,),
) -> RowT | InvalidRow:
    """The row model of one row as :func:`select_list` read it, or what it breaks."""
    problems: tuple[str, ...] = ()
    unheld: dict[str, datetime] = {}
    for name in timestamps:
        if isinstance(values.get(name), int):
            moment = _moment(values[name])
            values[name] = moment
            if isinstance(moment, str):  # the rest of the row is still checked
                problems += (f"{name}: outside the years 1 to 9999",)
                unheld[name] = _EPOCH
    checked = {**values, **unheld} if unheld else values
    try:
        row = row_type.model_validate(checked, strict=False)
    except ValidationError as exc:
        problems += tuple(
            f"{'.'.join(map(str, error['loc'])) or 'row'}: {error['msg']}"
            for error in exc.errors(include_url=False, include_input=False)
        )
    else:
        if not problems:
            return row
    return InvalidRow(row_type.table, values, problems)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _moment(microseconds: int) -> datetime | str:
    """Stored microseconds since 1970 as a UTC datetime; a text when Python cannot hold it."""
    seconds, fraction = divmod(microseconds, 1_000_000)
    try:
        return datetime.fromtimestamp(seconds, UTC).replace(microsecond=fraction)
    except (OverflowError, ValueError, OSError):
        return f"{microseconds} microseconds since 1970"


def run_query(table: DeltaTable, sql: str, label: str) -> list[tuple[Any, ...]]:
    """The rows ``sql`` selects from ``table`` (registered as ``t``), as tuples.

    Reads go through delta-rs's own query engine, never pyarrow (which can abort at
    interpreter exit after a read). A read that fails raises :func:`damaged`'s error.
    """
    return _query(table, sql, label)[1]


def query_dicts(table: DeltaTable, sql: str, label: str) -> list[dict[str, Any]]:
    """As :func:`run_query`, each row a dict from the selected columns' names to values."""
    names, rows = _query(table, sql, label)
    return [dict(zip(names, row, strict=True)) for row in rows]


def query_batches(table: DeltaTable, sql: str, label: str) -> Iterator[RecordBatch]:
    """The record batches ``sql`` selects from ``table``, streamed (memory of one batch).

    A batch that cannot be read (a data file gone mid-scan) raises :func:`damaged`'s error;
    what the caller does with a batch raises as itself.
    """
    from deltalake import QueryBuilder  # noqa: PLC0415  (never imported before a fork)

    try:
        batches = iter(QueryBuilder().register("t", table).execute(sql))
    except Exception as exc:  # noqa: BLE001  (delta-rs raises plain Exception)
        raise damaged(table, exc, label) from None
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001
            raise damaged(table, exc, label) from None
        yield batch


def _query(table: DeltaTable, sql: str, label: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    from deltalake import QueryBuilder  # noqa: PLC0415  (never imported before a fork)

    try:
        result = QueryBuilder().register("t", table).execute(sql).read_all()
        names = list(result.schema.names)
        columns = [column.to_pylist() for column in result.columns]
    except Exception as exc:  # noqa: BLE001  (delta-rs raises plain Exception)
        raise damaged(table, exc, label) from None
    return names, list(zip(*columns, strict=True)) if columns else []


def damaged(table: DeltaTable, exc: BaseException, label: str) -> TrailDamaged:
    """The error for a read of ``table`` that failed with ``exc``: the table, and the file.

    The file is named as :func:`damaged_file` finds it; without one, the table and the
    kind of fault.
    """
    found = damaged_file(table, exc)
    if found is None:
        return TrailDamaged(f"{label} cannot be read ({type(exc).__name__})")
    return _file_damaged(label, *found)


def check_files(table: DeltaTable, label: str) -> None:
    """Raise :class:`TrailDamaged` if a data file ``table``'s log references is gone.

    Only a local table is looked at (one ``stat`` a file; an object store is not asked):
    a reader that opens a table once and reads it later can name the missing file when
    it opens it, rather than fail somewhere in a later read.
    """
    gone = missing_file(table)
    if gone is not None:
        raise _file_damaged(label, gone, "missing")


def _file_damaged(label: str, name: str, state: str) -> TrailDamaged:
    return TrailDamaged(f"{label} cannot be read: its data file {name} is {state}")


def damaged_file(table: DeltaTable, exc: BaseException) -> tuple[str, str] | None:
    """The data file of ``table`` that ``exc`` failed on, and ``missing`` or ``unreadable``.

    The one delta-rs's message names, or, for a local table, one no longer on disk; named
    by its name inside the table, never by its path or URI. None if no file is at fault.
    """
    text = str(exc)
    try:
        uris = list(table.file_uris())
    except Exception:  # noqa: BLE001  (no list of files: no file is named)
        return None
    named = next((uri for uri in uris if _file_name(uri) in text), None)
    if named is not None:
        gone = "not found" in text.lower() or _gone(named)
        return _file_name(named), "missing" if gone else "unreadable"
    missing = next((_file_name(uri) for uri in uris if _gone(uri)), None)
    return None if missing is None else (missing, "missing")


def missing_file(table: DeltaTable) -> str | None:
    """The name of a data file ``table``'s log references that is gone from a local disk.

    None when every file is there, the table is not local, or its files cannot be listed.
    """
    try:
        uris = list(table.file_uris())
    except Exception:  # noqa: BLE001  (no list of files: no file is named)
        return None
    return next((_file_name(uri) for uri in uris if _gone(uri)), None)


def _file_name(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _gone(uri: str) -> bool:
    """Whether a local data file is no longer on disk (an object store is not asked)."""
    if "://" in uri and not uri.startswith("file://"):
        return False
    return not Path(uri.removeprefix("file://")).exists()
