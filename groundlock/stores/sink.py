"""The audit trail's seam: :class:`AuditSink` (writing), :class:`AuditReader` (reading).

The audit step of the chain (``RecordValidation``) depends on :class:`AuditSink`, not on
Delta Lake: a sink makes both rows of one request durable together, or raises
:class:`AuditUnavailable` and the request fails closed with ``AUDIT_WRITE_FAILED``.

The tools that read the trail (``records``, ``report``, ``replay``, the Spark runner's
resume) depend on :class:`AuditReader`: the rows a typed :class:`TrailQuery` selects, and
each key's executions. Reading through a typed query, not a SQL string, is what lets a
second backend answer the same questions, and what keeps a filter's value from ever
becoming query text.

:class:`~groundlock.DeltaAuditStore` is the production store and implements both halves;
:class:`MemoryAuditSink` implements both in memory, so the tools can be tested without
Delta. Both apply the trail's key rule (:mod:`groundlock.stores.keys`), the one pure
function that says which rows are records.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from groundlock.contracts.audit_rows import QueryRow, TableRow, ValidationRow
from groundlock.stores.keys import executions_of, new_rows

if TYPE_CHECKING:
    from groundlock.stores.readers import InvalidRow

__all__ = [
    "ALL_ROWS",
    "AuditReader",
    "AuditSink",
    "AuditUnavailable",
    "MemoryAuditSink",
    "TrailQuery",
]

RowT = TypeVar("RowT", bound=TableRow)


class AuditUnavailable(Exception):  # noqa: N818  (reads as the condition it reports)
    """The audit trail cannot accept a row now; the message names no path or credential."""


@runtime_checkable
class AuditSink(Protocol):
    """A durable destination for the two audit rows of each request."""

    def record(self, validation: ValidationRow, query: QueryRow) -> None:
        """Make both rows durable before returning, or raise :class:`AuditUnavailable`.

        Called once per request, from several threads at once: a sink must be thread-safe.
        """


@dataclass(frozen=True, slots=True)
class TrailQuery:
    """Which rows of one table a tool reads; every field left at its default filters nothing.

    A filter on a column the table does not have (``status`` on feedback) is refused when
    the query is run, not silently ignored.
    """

    since: datetime | None = None
    """Rows at or after this moment (timezone-aware)."""
    until: datetime | None = None
    """Rows before this moment (timezone-aware)."""
    request_ids: tuple[str, ...] | None = None
    """Only these requests (an empty tuple selects nothing)."""
    status: str | None = None
    failure_reason: str | None = None
    policy_version: str | None = None
    newest_first: bool = False
    """Order by time, newest first (oldest first by default)."""
    limit: int | None = None
    """At most this many rows, after ordering."""

    VALUE_FILTERS = ("status", "failure_reason", "policy_version")
    """The filters that compare a column with one value."""

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            moment = getattr(self, name)
            if moment is not None and moment.utcoffset() is None:
                raise ValueError(f"TrailQuery.{name} must be timezone-aware")
        if self.limit is not None and self.limit < 0:
            raise ValueError("TrailQuery.limit must not be negative")
        if isinstance(self.request_ids, str):  # a tuple of its characters, else
            raise TypeError("TrailQuery.request_ids is a tuple of ids, not one id")

    def filtered_columns(self) -> set[str]:
        """The columns the query compares with a value (the time column aside)."""
        columns = {name for name in self.VALUE_FILTERS if getattr(self, name) is not None}
        if self.request_ids is not None:
            columns.add("request_id")
        return columns

    def check(self, row_type: type[TableRow]) -> None:
        """Refuse a filter on a column ``row_type``'s table does not have."""
        missing = sorted(self.filtered_columns() - set(row_type.model_fields))
        if missing:
            raise ValueError(f"the {row_type.table} table has no column {', '.join(missing)}")

    def matches(self, row: TableRow) -> bool:
        """Whether ``row`` passes every filter (ordering and limit aside)."""
        moment = row.timestamp_utc
        if self.since is not None and moment < self.since:
            return False
        if self.until is not None and moment >= self.until:
            return False
        if self.request_ids is not None and getattr(row, "request_id", None) not in set(
            self.request_ids
        ):
            return False
        return all(
            getattr(row, name) == getattr(self, name)
            for name in self.VALUE_FILTERS
            if getattr(self, name) is not None
        )


ALL_ROWS = TrailQuery()
"""The query that filters nothing: every row, oldest first."""


@runtime_checkable
class AuditReader(Protocol):
    """What the tools read from a trail."""

    def rows(self, row_type: type[RowT], query: TrailQuery = ALL_ROWS) -> list[RowT | InvalidRow]:
        """The records of ``row_type``'s table that ``query`` selects, ordered by time.

        A stored row that breaks its model comes back as an
        :class:`~groundlock.stores.readers.InvalidRow` in its place, for the tool to show
        and flag. Raises :class:`AuditUnavailable` when the table does not exist.
        """

    def executions(
        self, keys: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[ValidationRow, ...]]:
        """Each key's record, then its re-executions (:func:`~.keys.executions_of`).

        A key the trail does not hold is absent.
        """


class MemoryAuditSink:
    """Rows kept in lists: for tests, and for trying the chain and the tools without a store.

    ``validations`` and ``queries`` hold every row as it was recorded, in order. Reading
    (:class:`AuditReader`) applies the key rule as the Delta store does at commit time:
    the first row of a key is its record, the same execution again is not a second one,
    and one that ended otherwise is a re-execution under a derived run id. Nothing is
    durable; ``fail`` makes every ``record`` raise, as a sink that has lost its storage
    would.
    """

    def __init__(self) -> None:
        self.validations: list[ValidationRow] = []
        self.queries: list[QueryRow] = []
        self.feedback: list[TableRow] = []
        self.fail = False
        self._lock = threading.Lock()

    def record(self, validation: ValidationRow, query: QueryRow) -> None:
        """Keep both rows, or raise :class:`AuditUnavailable` when ``fail`` is set."""
        if self.fail:
            raise AuditUnavailable("the in-memory sink is set to fail")
        with self._lock:
            self.validations.append(validation)
            self.queries.append(query)

    def rows(self, row_type: type[RowT], query: TrailQuery = ALL_ROWS) -> list[RowT | InvalidRow]:
        """The records ``query`` selects (:class:`AuditReader`)."""
        query.check(row_type)
        records: Sequence[TableRow] = self._records(row_type)
        picked = sorted(
            (row for row in records if isinstance(row, row_type) and query.matches(row)),
            key=lambda row: row.timestamp_utc,
            reverse=query.newest_first,
        )
        return list(picked if query.limit is None else picked[: query.limit])

    def executions(
        self, keys: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[ValidationRow, ...]]:
        """Each key's record and re-executions (:class:`AuditReader`)."""
        records = sorted(
            (row for row in self._records(ValidationRow) if isinstance(row, ValidationRow)),
            key=lambda row: row.timestamp_utc,
        )
        return executions_of(records, keys)

    def _records(self, row_type: type[TableRow]) -> list[TableRow]:
        with self._lock:
            if row_type is ValidationRow:
                stored: list[TableRow] = list(self.validations)
            elif row_type is QueryRow:
                stored = list(self.queries)
            else:
                stored = list(self.feedback)
        if not row_type.key_fields:
            return stored
        placed = None
        if row_type is QueryRow:  # as the store does: the query row follows its validation
            from groundlock.stores.keys import family_index  # noqa: PLC0415

            placed = family_index(
                {
                    key: row.outcome()
                    for row in self._records(ValidationRow)
                    if (key := row.key()) is not None
                }
            )
        return [row for row, _ in new_rows(stored, {}, _rerun, placed)]


def _rerun(row: TableRow, run_id: str) -> TableRow:
    return row.model_copy(update={"run_id": run_id})
