"""The trail laid out by UTC day: a window read skips other days' files, and says the same.

Every test writes a real trail through ``DeltaAuditStore`` over several days (the rows'
``timestamp_utc`` set by hand), then reads it as the command line does. Files a read opens
are counted by DataFusion itself (``files_opened`` in ``EXPLAIN ANALYZE`` of the SQL the
reader ran). Reads go through the store's read seam (``rows`` with a ``TrailQuery``), as
the command line's do. A trail an earlier groundlock created (unpartitioned) is made the
way its store made it, and must keep taking and giving rows.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from groundlock.cli import main
from groundlock.stores import DeltaAuditStore, ValidationRow
from groundlock.stores import readers as readers_module
from groundlock.stores.arrow import arrow_schema
from groundlock.stores.delta import TABLES
from groundlock.stores.layout import (
    DAY_COLUMN,
    day_condition,
    day_mismatch,
    files_scanned,
)
from groundlock.stores.sink import TrailQuery
from groundlock.stores.verify import CHAINED_TABLES, verify_table
from tests.stores.rows import query_row, validation_row

FIRST = datetime(2026, 11, 1, tzinfo=UTC)
DAYS = 5
FLUSHES_PER_DAY = 2
"""Each flush of one day's rows commits one file per table: ten files in all."""
_TICK = timedelta(microseconds=1)


def _moments(day: int, flush: int) -> list[datetime]:
    """Times of one flush's rows; the first and last flush of a day touch its edges."""
    start = FIRST + timedelta(days=day)
    if flush == 0:
        return [start, start + timedelta(hours=6)]
    return [start + timedelta(hours=18), start + timedelta(days=1) - _TICK]


def _record(store: DeltaAuditStore) -> None:
    for day in range(DAYS):
        for flush in range(FLUSHES_PER_DAY):
            for number, at in enumerate(_moments(day, flush)):
                request_id = f"d{day}-f{flush}-{number}"
                store.record(
                    validation_row(request_id=request_id, timestamp_utc=at),
                    query_row(request_id=request_id, timestamp_utc=at),
                )
            store.flush()


def _earlier_groundlock_tables(root: Path) -> None:
    """The tables as a groundlock before the day layout created them: unpartitioned."""
    for row_type in TABLES:
        DeltaTable.create(
            str(root / row_type.table),
            arrow_schema(row_type),
            configuration={"delta.appendOnly": "true"},
        )


def _trail(root: Path, *, earlier: bool = False) -> DeltaAuditStore:
    if earlier:
        _earlier_groundlock_tables(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    _record(store)
    store.close()
    return store


@pytest.fixture
def trail(tmp_path: Path) -> DeltaAuditStore:
    return _trail(tmp_path / "audit")


@pytest.fixture(scope="module")
def trails(tmp_path_factory: pytest.TempPathFactory) -> dict[str, DeltaAuditStore]:
    """One trail per layout, for the tests that only read."""
    root = tmp_path_factory.mktemp("trails")
    return {
        "by day": _trail(root / "by-day"),
        "earlier groundlock": _trail(root / "earlier", earlier=True),
    }


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[tuple[DeltaTable, str]]:
    """Every ``(table, sql)`` the readers run, in order."""
    seen: list[tuple[DeltaTable, str]] = []
    real = readers_module.run_query

    def spy(table: DeltaTable, sql: str, label: str) -> list[tuple[Any, ...]]:
        seen.append((table, sql))
        return real(table, sql, label)

    monkeypatch.setattr(readers_module, "run_query", spy)
    return seen


def _verified(root: Path) -> list[str]:
    """Every finding of ``records verify`` on the chained tables, one line each."""
    return [
        finding.line()
        for name in CHAINED_TABLES
        for finding in verify_table(root / name, name).findings
    ]


def _ids(rows: list[Any]) -> list[str]:
    return sorted(row.request_id for row in rows)


def _day(number: int) -> datetime:
    return FIRST + timedelta(days=number)


def _add_actions(table_dir: Path) -> list[dict[str, Any]]:
    """The ``add`` actions of the table's current files, from its log."""
    table = DeltaTable(str(table_dir))
    current = {Path(uri).name for uri in table.file_uris()}
    adds = []
    for log in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "add" in action and Path(action["add"]["path"]).name in current:
                adds.append(action["add"])
    return adds


def test_a_new_trail_is_partitioned_by_utc_day_and_its_files_hold_only_row_columns(
    trail: DeltaAuditStore,
) -> None:
    root = Path(trail.uri)
    expected = {_day(number).date().isoformat() for number in range(DAYS)}
    for row_type in TABLES[:2]:  # (no feedback was given)
        table = DeltaTable(str(root / row_type.table))
        assert table.metadata().partition_columns == [DAY_COLUMN]
        assert {part[DAY_COLUMN] for part in table.partitions()} == expected
    # The day is the log's, not the file's: a data file holds the row model's columns, so
    # the chain (over stored columns) is what the writer hashed.
    from deltalake import QueryBuilder  # noqa: PLC0415

    builder = QueryBuilder()
    first = DeltaTable(str(root / "validations")).file_uris()[0]
    builder.execute(f"CREATE EXTERNAL TABLE f STORED AS PARQUET LOCATION '{first}'").read_all()
    stored = builder.execute("SELECT * FROM f LIMIT 0").read_all().schema.names
    assert list(stored) == list(ValidationRow.model_fields)
    assert _verified(root) == []
    assert len(trail.select(ValidationRow)) == DAYS * FLUSHES_PER_DAY * 2


WINDOWS = {
    "one day": (_day(2), _day(3)),
    "across midnight": (_day(1) + timedelta(hours=12), _day(2) + timedelta(hours=12)),
    "the last microsecond of a day only": (_day(3) - _TICK, _day(3)),
    "since only": (_day(3), None),
    "until only": (None, _day(1)),
    "nothing": (_day(DAYS + 3), _day(DAYS + 4)),
}


@pytest.mark.parametrize("layout", ["by day", "earlier groundlock"])
@pytest.mark.parametrize("window", list(WINDOWS), ids=list(WINDOWS))
def test_a_window_read_returns_the_rows_a_full_scan_filtered_after_returns(
    trails: dict[str, DeltaAuditStore], window: str, layout: str
) -> None:
    store = trails[layout]
    since, until = WINDOWS[window]
    everything = store.rows(ValidationRow)
    assert len(everything) == DAYS * FLUSHES_PER_DAY * 2
    filtered = [
        row
        for row in everything
        if (since is None or row.timestamp_utc >= since)
        and (until is None or row.timestamp_utc < until)
    ]
    read = store.rows(ValidationRow, TrailQuery(since=since, until=until))
    assert _ids(read) == _ids(filtered)
    assert [r.timestamp_utc for r in read] == sorted(r.timestamp_utc for r in filtered)


def test_a_day_read_opens_only_that_days_files(
    trail: DeltaAuditStore,
    queries: list[tuple[DeltaTable, str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    since, until = _day(2).date().isoformat(), _day(3).date().isoformat()
    code = main(["records", "list", "--store", trail.uri, "--since", since, "--until", until])
    assert code == 0
    assert f"{FLUSHES_PER_DAY * 2} row(s)" in capsys.readouterr().out
    ((table, sql),) = queries
    total = len(table.file_uris())
    assert total == DAYS * FLUSHES_PER_DAY
    assert DAY_COLUMN in sql  # the reader added the partition predicate
    assert files_scanned(table, sql) == FLUSHES_PER_DAY  # that day's, of ten


def test_a_report_of_one_day_reads_that_days_files(
    trail: DeltaAuditStore, queries: list[tuple[DeltaTable, str]], tmp_path: Path
) -> None:
    trail.add_feedback("d2-f0-0", 4)  # given now: not in the window's day, so skipped
    out = tmp_path / "report.html"
    since, until = _day(2).isoformat(), _day(3).isoformat()
    argv = ["report", "--store", trail.uri, "--since", since, "--until", until, "--out", str(out)]
    assert main(argv) == 0
    (validations, _), (feedback, _) = queries
    assert files_scanned(validations, queries[0][1]) == FLUSHES_PER_DAY
    assert files_scanned(feedback, queries[1][1]) == 0
    assert len(feedback.file_uris()) == 1


def test_an_earlier_groundlocks_unpartitioned_trail_still_takes_and_gives_rows(
    tmp_path: Path, queries: list[tuple[DeltaTable, str]]
) -> None:
    root = tmp_path / "audit"
    store = _trail(root, earlier=True)  # written through today's store
    for row_type in TABLES:
        assert DeltaTable(str(root / row_type.table)).metadata().partition_columns == []
    assert _verified(root) == []
    queries.clear()  # (the store's own key lookups while it wrote)
    day = store.rows(ValidationRow, TrailQuery(since=_day(2), until=_day(3)))
    assert _ids(day) == [f"d2-f{flush}-{n}" for flush in range(FLUSHES_PER_DAY) for n in (0, 1)]
    # No day column to prune on: the reader did not name one, and delta-rs still skips
    # files by their timestamp_utc statistics (each file here holds a few hours).
    ((table, sql),) = queries
    assert DAY_COLUMN not in sql
    assert files_scanned(table, sql) == FLUSHES_PER_DAY < len(table.file_uris())
    # Compaction merges its files in order, into one here: a day read opens all there is.
    store.compact()
    assert _verified(root) == []
    queries.clear()
    assert _ids(store.rows(ValidationRow, TrailQuery(since=_day(2), until=_day(3)))) == _ids(day)
    ((table, sql),) = queries
    assert files_scanned(table, sql) == len(table.file_uris()) == 1


@pytest.mark.parametrize(("layout", "opened"), [("by day", 0), ("earlier groundlock", 1)])
def test_a_commit_spanning_days_is_opened_by_reads_of_the_days_between_unless_split(
    tmp_path: Path, queries: list[tuple[DeltaTable, str]], layout: str, opened: int
) -> None:
    # One flush holding a row of day 0 and one of day 4 (a dead writer's spool committed
    # late, say): unpartitioned, it is one file whose statistics span days 0-4.
    root = tmp_path / "audit"
    if layout == "earlier groundlock":
        _earlier_groundlock_tables(root)
    store = DeltaAuditStore(root, flush_interval_seconds=30)
    for number, at in enumerate((_day(0), _day(4))):
        store.record(
            validation_row(request_id=f"r{number}", timestamp_utc=at),
            query_row(request_id=f"r{number}", timestamp_utc=at),
        )
    store.close()
    queries.clear()
    assert store.rows(ValidationRow, TrailQuery(since=_day(2), until=_day(3))) == []
    ((table, sql),) = queries
    assert files_scanned(table, sql) == opened


def test_compaction_keeps_days_apart_and_the_chain_verifies(trail: DeltaAuditStore) -> None:
    root = Path(trail.uri)
    before = {
        n: _ids(trail.rows(ValidationRow, TrailQuery(since=_day(n), until=_day(n + 1))))
        for n in range(DAYS)
    }
    compacted = trail.compact()
    assert compacted["validations"]["numFilesRemoved"] == DAYS * FLUSHES_PER_DAY
    assert compacted["validations"]["numFilesAdded"] == DAYS
    for name in ("validations", "queries"):  # (no feedback was given)
        adds = _add_actions(root / name)
        assert sorted(add["partitionValues"][DAY_COLUMN] for add in adds) == [
            _day(n).date().isoformat() for n in range(DAYS)
        ]  # one file a day
    assert _verified(root) == []  # rows unchanged, and each file's rows on its own day
    table = DeltaTable(str(root / "validations"))
    sql = f"SELECT request_id FROM t WHERE {day_condition(_day(2), _day(3))}"  # noqa: S608
    assert files_scanned(table, sql) == 1  # of five
    after = {
        n: _ids(trail.rows(ValidationRow, TrailQuery(since=_day(n), until=_day(n + 1))))
        for n in range(DAYS)
    }
    assert after == before


def test_a_file_moved_to_another_day_in_the_log_is_found(trail: DeltaAuditStore) -> None:
    # The chain binds rows, not where the log files them: moving a file to another day
    # leaves every digest intact, and hides its rows from their own day's reads.
    root = Path(trail.uri)
    log = root / "validations" / "_delta_log" / f"{1:020d}.json"  # day 0's first flush
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    (add,) = [action["add"] for action in actions if "add" in action]
    assert add["partitionValues"] == {DAY_COLUMN: "2026-11-01"}
    add["partitionValues"] = {DAY_COLUMN: "2026-11-04"}
    log.write_text("".join(json.dumps(action) + "\n" for action in actions))
    assert _ids(trail.rows(ValidationRow, TrailQuery(since=_day(0), until=_day(1)))) == [
        "d0-f1-0", "d0-f1-1",
    ]  # fmt: skip
    (finding,) = verify_table(root / "validations", "validations").findings
    assert finding.kind == "PARTITION_MISMATCH"
    assert finding.version == 1
    assert finding.files == (Path(add["path"]).name,)
    assert "in day 2026-11-04 but it holds rows of 1 other day(s) (first: 2026-11-01)" in (
        finding.detail
    )


@pytest.mark.parametrize(
    ("since", "until", "condition"),
    [
        (_day(2), _day(3), "day_utc >= DATE '2026-11-03' AND day_utc <= DATE '2026-11-03'"),
        (_day(2), _day(3) + _TICK, "day_utc >= DATE '2026-11-03' AND day_utc <= DATE '2026-11-04'"),
        # 01:00 at UTC+2 is 23:00 UTC the day before: the day is UTC's.
        (
            datetime.fromisoformat("2026-11-03T01:00:00+02:00"), None,
            "day_utc >= DATE '2026-11-02'",
        ),
        (None, None, ""),
    ],
)  # fmt: skip
def test_the_day_condition_admits_every_utc_day_the_window_touches(
    since: datetime | None, until: datetime | None, condition: str
) -> None:
    assert day_condition(since, until) == condition


def test_a_files_day_is_checked_against_each_rows_timestamp() -> None:
    day = 86_400_000_000
    on_the_day = [20_000 * day, 20_001 * day - 1]  # 2024-10-04, first and last microsecond
    assert day_mismatch({DAY_COLUMN: "2024-10-04"}, on_the_day) is None
    assert day_mismatch({}, on_the_day) is None  # an unpartitioned file: nothing claimed
    assert day_mismatch({DAY_COLUMN: "1969-12-31"}, [-1]) is None  # floors before 1970
    late = day_mismatch({DAY_COLUMN: "2024-10-04"}, [*on_the_day, 20_001 * day])
    assert late is not None
    assert "holds rows of 1 other day(s) (first: 2024-10-05)" in late
    assert "no timestamp" in (day_mismatch({DAY_COLUMN: "2024-10-04"}, [None]) or "")
    assert "not a date" in (day_mismatch({DAY_COLUMN: None}, on_the_day) or "")
