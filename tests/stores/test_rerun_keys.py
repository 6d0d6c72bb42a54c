"""The key rule against a client that plants re-execution keys (issue 27, item 5).

A re-execution's run id was ``<run_id>~<the first 16 hex digits of its outcome hash>``: a
client could compute it, plant it first with another outcome, and a later answer under the
plain key was then taken for a duplicate of the planted row and dropped, delivered with no
record. Now the derived id is the next free number of the key's family, and a row is left
out only when its own outcome is already recorded there. Real Delta tables throughout, on
local disk, moto's S3 and Azurite (the ``location`` fixture).
"""

from __future__ import annotations

from typing import Any

import pytest

from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.keys import new_rows, rerun_of
from tests.stores.backends import Location
from tests.stores.rows import outcome, query_row, validation_row

FAILED = {"status": "FAILED", "validation_status": "FAILED", "generation_status": "FAILED"}


def _pair(run_id: str, reason: str | None) -> tuple[ValidationRow, QueryRow]:
    """The two rows of request ``planted`` under ``run_id`` with one of three outcomes."""
    if reason is None:
        return (
            validation_row(request_id="planted", run_id=run_id),
            query_row(request_id="planted", run_id=run_id),
        )
    digest = outcome("FAILED", reason)
    return (
        validation_row(
            request_id="planted", run_id=run_id, failure_reason=reason,
            outcome_sha256=digest, **FAILED,
        ),
        query_row(
            request_id="planted", run_id=run_id, status="FAILED", failure_reason=reason,
            outcome_sha256=digest,
        ),
    )  # fmt: skip


def _recorded(store: DeltaAuditStore) -> dict[str, set[tuple[str | None, str | None]]]:
    store.flush()
    return {
        row_type.table: {(r.run_id, r.failure_reason) for r in store.select(row_type)}
        for row_type in (ValidationRow, QueryRow)
    }


@pytest.mark.parametrize(
    "planted_suffix",
    [f"~{outcome('OK', None)[:16]}", "~1", "~2"],
    ids=["the-old-hash-form", "the-next-number", "a-later-number"],
)
def test_a_planted_key_cannot_hide_a_later_answer(location: Location, planted_suffix: str) -> None:
    store = location.store(flush_interval_seconds=1000)
    # The client plants the derived key of the answer it will get, with another outcome.
    store.record(*_pair(f"tech-9:x{planted_suffix}", "UNCITED_FACTUAL_STATEMENT"))
    store.record(*_pair("tech-9:x", "EMPTY_ANSWER"))  # its first execution
    store.flush()
    store.record(*_pair("tech-9:x", None))  # an OK answer, delivered: it must be recorded
    recorded = _recorded(store)
    assert recorded[ValidationRow.table] == recorded[QueryRow.table]
    assert ("tech-9:x", "EMPTY_ANSWER") in recorded[ValidationRow.table]
    answers = [run for run, reason in recorded[ValidationRow.table] if reason is None]
    assert len(answers) == 1, recorded
    assert rerun_of(answers[0]) == "tech-9:x"
    assert answers[0] != f"tech-9:x{planted_suffix}"
    # The same answer again is that execution again: recorded once.
    store.record(*_pair("tech-9:x", None))
    assert _recorded(store) == recorded
    store.close()


def test_re_executions_read_back_in_both_forms(location: Location) -> None:
    store = location.store(flush_interval_seconds=1000)
    legacy = f"run-1~{outcome('FAILED', 'EMPTY_ANSWER')[:16]}"
    store.record(*_pair("run-1", None))
    store.record(*_pair(legacy, "EMPTY_ANSWER"))  # written by the earlier form
    store.flush()
    store.record(*_pair("run-1", "UNCITED_FACTUAL_STATEMENT"))
    store.flush()
    executions = store.executions([("planted", "run-1")])[("planted", "run-1")]
    assert [(r.run_id, r.failure_reason) for r in executions] == [
        ("run-1", None),
        (legacy, "EMPTY_ANSWER"),
        ("run-1~1", "UNCITED_FACTUAL_STATEMENT"),
    ]
    store.close()


class _Row:
    def __init__(self, run_id: str, result: str) -> None:
        self.run_id, self.result = run_id, result

    def key(self) -> tuple[str, str]:
        return ("r", self.run_id)

    def outcome(self) -> tuple[object, ...]:
        return (self.result,)


def _renamed(row: _Row, run_id: str) -> _Row:
    return _Row(run_id, row.result)


def test_the_key_rule_in_one_commit() -> None:
    present: dict[tuple[str, str], tuple[Any, ...]] = {
        ("r", "a"): ("one",),
        ("r", "a~1"): ("two",),
        ("r", "a~7"): ("planted",),
        ("r", "a~x"): ("not-a-rerun",),
    }
    rows = [_Row("a", "one"), _Row("a", "two"), _Row("a", "three"), _Row("a", "three"),
            _Row("a", "four"), _Row("b", "one"), _Row("b", "five")]  # fmt: skip
    kept = [(row.run_id, row.result, rerun) for row, rerun in new_rows(rows, present, _renamed)]
    assert kept == [
        ("a~8", "three", True),
        ("a~9", "four", True),
        ("b", "one", False),
        ("b~1", "five", True),
    ]
    assert rerun_of("a~0") is None
    assert rerun_of("a~01") is None
    assert rerun_of("a~12") == "a"
    assert rerun_of("a~b~3") == "a~b"
    assert rerun_of("plain") is None


def test_both_tables_number_re_executions_alike_whatever_order_writers_commit_in(
    location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two writers (two serve workers) record the same key with three outcomes; writer 1's
    # queries commit fails once (a transient storage error: its rows stay in its spool),
    # so the tables see the executions in another order. Numbered per table, one request's
    # query row was paired with another execution's validations row.
    # Two writers on one host share the spool directory, each its own segments in it.
    first = location.store(flush_interval_seconds=1000)
    second = location.store(flush_interval_seconds=1000)
    first.record(*_pair("a:K", None))
    first.flush()
    first.record(*_pair("a:K", "EMPTY_ANSWER"))
    second.record(*_pair("a:K", "UNCITED_FACTUAL_STATEMENT"))
    real = first._append_segments
    failed: list[int] = []

    def flaky(row_type: type[Any], *args: Any, **kwargs: Any) -> None:
        if row_type is QueryRow and not failed:
            failed.append(1)
            raise OSError("transient storage error")
        real(row_type, *args, **kwargs)

    monkeypatch.setattr(first, "_append_segments", flaky)
    first.flush()  # validations in; queries kept in the spool
    second.flush()  # both tables
    first.flush()  # the queries again
    validations = {r.run_id: r.outcome_sha256 for r in first.select(ValidationRow)}
    queries = {r.run_id: r.outcome_sha256 for r in first.select(QueryRow)}
    assert failed
    assert len(validations) == 3
    assert queries == validations
    first.close()
    second.close()
