"""The read seam: one typed query, the same answer from the Delta store and from memory.

The tools read the trail through :class:`~groundlock.stores.sink.AuditReader`. These tests
record the same rows into a real Delta store and into :class:`MemoryAuditSink` and ask
both the same :class:`TrailQuery`: the rows that come back (and in which order) must be
the same, so a tool tested against memory behaves the same against Delta.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from groundlock.cli._replay_run import _trail
from groundlock.stores import (
    DeltaAuditStore,
    FeedbackRow,
    MemoryAuditSink,
    QueryRow,
    ValidationRow,
)
from groundlock.stores.keys import executions_of
from groundlock.stores.readers import InvalidRow
from groundlock.stores.sink import ALL_ROWS, AuditReader, TrailQuery
from tests.stores.rows import outcome, query_row, validation_row

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FAILED = {"status": "FAILED", "validation_status": "FAILED", "generation_status": "FAILED"}


def _pairs() -> list[tuple[ValidationRow, QueryRow]]:
    """Nine requests over nine hours, three policies, one failure reason with a quote."""
    pairs = []
    for hour in range(9):
        request_id = f"req-{hour}"
        moment = T0 + timedelta(hours=hour)
        policy = ("P1", "P2", "P3")[hour % 3]
        reason = ("NO_CITATIONS", "it's bad", None)[hour % 3]
        fields = FAILED if reason else {}
        digest = outcome(fields.get("status", "OK"), reason)
        pairs.append(
            (
                validation_row(
                    request_id=request_id, run_id="r", timestamp_utc=moment,
                    policy_version=policy, failure_reason=reason, outcome_sha256=digest,
                    **fields,
                ),
                query_row(
                    request_id=request_id, run_id="r", timestamp_utc=moment,
                    status=fields.get("status", "OK"), failure_reason=reason,
                    outcome_sha256=digest,
                ),
            )
        )  # fmt: skip
    # req-0 again: the same execution (dropped), then another outcome (a re-execution).
    again = pairs[0]
    pairs.append(again)
    later = T0 + timedelta(hours=10)
    pairs.append(
        (
            again[0].model_copy(update={"timestamp_utc": later, "outcome_sha256": "f" * 64}),
            again[1].model_copy(update={"timestamp_utc": later, "outcome_sha256": "f" * 64}),
        )
    )
    return pairs


@pytest.fixture(scope="module")
def readers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AuditReader]]:
    """The same requests recorded into a Delta store and into memory."""
    store = DeltaAuditStore(tmp_path_factory.mktemp("seam") / "audit", flush_interval_seconds=30)
    memory = MemoryAuditSink()
    for validation, query in _pairs():
        store.record(validation, query)
        store.flush()  # one commit per request: the second of a key meets the first
        memory.record(validation, query)
    yield {"delta": store, "memory": memory}
    store.close()


QUERIES = {
    "everything": ALL_ROWS,
    "a time range": TrailQuery(since=T0 + timedelta(hours=2), until=T0 + timedelta(hours=5)),
    "one policy": TrailQuery(policy_version="P2"),
    "a reason with a quote": TrailQuery(failure_reason="it's bad"),
    "a status": TrailQuery(status="FAILED", since=T0 + timedelta(hours=1)),
    "some requests": TrailQuery(request_ids=("req-0", "req-4", "absent")),
    "no requests": TrailQuery(request_ids=()),
    "newest three": TrailQuery(newest_first=True, limit=3),
    "a quote that would close the literal": TrailQuery(status="OK' OR '1'='1"),
}


def _keys(rows: Sequence[ValidationRow | QueryRow | InvalidRow]) -> list[tuple[str, str]]:
    assert not any(isinstance(row, InvalidRow) for row in rows)
    return [
        (row.request_id or "", row.run_id or "") for row in rows if not isinstance(row, InvalidRow)
    ]


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
@pytest.mark.parametrize("row_type", [ValidationRow, QueryRow], ids=["validations", "queries"])
def test_delta_and_memory_answer_a_query_alike(
    readers: dict[str, AuditReader], query: TrailQuery, row_type: type[ValidationRow | QueryRow]
) -> None:
    if query.filtered_columns() - set(row_type.model_fields):  # (policy_version on queries)
        for reader in readers.values():
            with pytest.raises(ValueError, match="has no column"):
                reader.rows(row_type, query)
        return
    delta = _keys(readers["delta"].rows(row_type, query))
    assert delta == _keys(readers["memory"].rows(row_type, query))


def test_the_answers_are_the_expected_rows(readers: dict[str, AuditReader]) -> None:
    """Not only alike: right (the parity test alone would pass two equal wrong readers)."""
    for reader in readers.values():
        everything = _keys(reader.rows(ValidationRow))
        # Nine requests; req-0's repeat is dropped, its other outcome is run "r~1".
        assert everything == [*((f"req-{h}", "r") for h in range(9)), ("req-0", "r~1")]
        window = QUERIES["a time range"]
        assert _keys(reader.rows(ValidationRow, window)) == [
            ("req-2", "r"),
            ("req-3", "r"),
            ("req-4", "r"),
        ]
        assert _keys(reader.rows(ValidationRow, QUERIES["a reason with a quote"])) == [
            ("req-1", "r"), ("req-4", "r"), ("req-7", "r"),
        ]  # fmt: skip
        assert _keys(reader.rows(ValidationRow, QUERIES["newest three"])) == [
            ("req-0", "r~1"), ("req-8", "r"), ("req-7", "r"),
        ]  # fmt: skip
        assert reader.rows(ValidationRow, QUERIES["a quote that would close the literal"]) == []


def test_executions_agree_and_follow_the_key_rule(readers: dict[str, AuditReader]) -> None:
    keys = [("req-0", "r"), ("req-5", "r"), ("absent", "r")]
    delta, memory = (reader.executions(keys) for reader in readers.values())
    assert {k: [row.run_id for row in v] for k, v in delta.items()} == {
        ("req-0", "r"): ["r", "r~1"],
        ("req-5", "r"): ["r"],
    }
    assert {k: [row.record_id for row in v] for k, v in delta.items()} == {
        k: [row.record_id for row in v] for k, v in memory.items()
    }


def test_replay_reads_the_trail_through_the_seam(readers: dict[str, AuditReader]) -> None:
    """A tool's read, without Delta: replay's trail lookup over the memory sink."""
    results = {name: _trail(reader, {"req-0", "req-3"}) for name, reader in readers.items()}
    for validations, queries in results.values():
        assert sorted(validations) == ["req-0", "req-3"]
        assert _keys(validations["req-0"]) == [("req-0", "r"), ("req-0", "r~1")]
        assert _keys(queries["req-0"]) == [("req-0", "r"), ("req-0", "r~1")]


def test_a_filter_the_table_lacks_is_refused(readers: dict[str, AuditReader]) -> None:
    for reader in readers.values():
        with pytest.raises(ValueError, match="feedback table has no column status"):
            reader.rows(FeedbackRow, TrailQuery(status="OK"))


def test_a_query_refuses_what_would_be_read_wrongly() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        TrailQuery(since=datetime(2026, 1, 1))
    with pytest.raises(TypeError, match="tuple of ids"):
        TrailQuery(request_ids="req-1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="negative"):
        TrailQuery(limit=-1)


def test_many_request_ids_are_read_in_chunks_and_merged_in_order(tmp_path: Path) -> None:
    """More ids than one IN list holds: every row comes back once, oldest first."""
    store = DeltaAuditStore(tmp_path / "audit", flush_interval_seconds=30)
    ids = [f"id-{n:04d}" for n in range(1_200)]
    for n, request_id in enumerate(ids):
        moment = T0 + timedelta(seconds=(n * 7919) % 1_200)  # time order is not id order
        store.record(
            validation_row(request_id=request_id, timestamp_utc=moment),
            query_row(request_id=request_id, timestamp_utc=moment),
        )
    store.close()
    wanted = tuple(ids[::2])
    rows = store.rows(ValidationRow, TrailQuery(request_ids=wanted))
    assert sorted(_keys(rows)) == sorted((i, "run-1") for i in wanted)
    moments = [row.timestamp_utc for row in rows if not isinstance(row, InvalidRow)]
    assert moments == sorted(moments)
    newest = store.rows(ValidationRow, TrailQuery(request_ids=wanted, newest_first=True, limit=5))
    assert [r.timestamp_utc for r in newest if not isinstance(r, InvalidRow)] == sorted(moments)[
        ::-1
    ][:5]


def test_executions_of_is_a_pure_function_of_the_records() -> None:
    first = validation_row(request_id="a", run_id="x", timestamp_utc=T0)
    rerun = validation_row(
        request_id="a", run_id="x~1", timestamp_utc=T0 + timedelta(1), outcome_sha256="e" * 64
    )
    other = validation_row(request_id="a", run_id="y", timestamp_utc=T0)
    found = executions_of([first, other, rerun, rerun], [("a", "x"), ("a", "z")])
    assert found == {("a", "x"): (first, rerun)}
