"""``DeltaAuditStore``: the durable audit trail on Delta Lake (delta-rs).

Three append-only tables under one root: ``validations`` (one row per request and run),
``queries`` (the query log) and ``feedback``. The write path is built around three facts
about delta-rs (see ``reliability-notes`` §3):

* **A commit per request is too slow and makes tiny files**, so a request's rows are made
  durable in a local fsynced spool (:mod:`groundlock.stores.spool`) and a flusher thread
  commits whole spool segments, by size or interval.
* **delta-rs does not make appends idempotent.** Every commit records a ``txn`` action
  ``(writer id, segment number)``; before committing, the flusher skips segments the table
  already records, which covers a commit that landed although its writer never saw the
  answer. Within what is left, rows whose ``(request_id, run_id)`` is already in the table,
  or earlier in the batch, are dropped: the first row of a key is the record. Every append
  also bumps one shared ``txn``, so two writers whose lookups overlapped cannot both
  append: delta-rs refuses the second commit, whose writer looks again.
* **delta-rs is not fork-safe.** Nothing here touches delta-rs until a process first
  records or reads; the per-process state (spool writer, flusher) is rebuilt after a fork.

A request whose rows cannot be made durable raises :class:`AuditUnavailable`, and the
chain fails closed. So does a request while the tables cannot be opened, created, written,
or have an incompatible schema: the store checks them before it accepts the first row of a
process, and again after a commit fails for any reason other than a conflict.

Every append, feedback's included, carries its table's chain link
(:mod:`groundlock.stores.hashchain`), read from the version it writes on and serialised by
the shared key guard, so each table's chain stays linear however many processes write.

This module is the store's write half. Reading (:mod:`~groundlock.stores.delta_reads`),
upkeep (:mod:`~groundlock.stores.delta_upkeep`) and the tables themselves
(:mod:`~groundlock.stores.delta_tables`) live beside it; the class's read and upkeep
methods delegate to them.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import random
import threading
import time
import uuid
import weakref
from asyncio import CancelledError
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from groundlock.contracts.audit_rows import FeedbackRow, QueryRow, TableRow, ValidationRow
from groundlock.stores.causes import store_error_cause as _reason
from groundlock.stores.delta_reads import present as held_keys
from groundlock.stores.delta_reads import stored_row_hashes
from groundlock.stores.delta_tables import (
    TABLES,
    add_new_columns,
    keep_log,
    log_cleanup_risk,
    open_table,
    schema_problem,
    writable,
)
from groundlock.stores.hashchain import (
    EMPTY,
    Link,
    Running,
    chain_head,
    link_digest,
    model_row_hash,
    rows_digest,
)
from groundlock.stores.keys import family_index, new_rows
from groundlock.stores.layout import table_rows
from groundlock.stores.location import delta_location, is_local, unsafe_commit_setting
from groundlock.stores.lthash import LtHash
from groundlock.stores.readers import InvalidRow, sql_text
from groundlock.stores.sink import ALL_ROWS, AuditUnavailable, TrailQuery
from groundlock.stores.spool import (
    SpoolError,
    SpoolWriter,
    abandoned_writers,
    adopted,
    encode_line,
    read_segment,
    segments_of,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from deltalake import DeltaTable

__all__ = ["TABLES", "AuditUnavailable", "DeltaAuditStore", "SpoolEntry", "sql_text"]

logger = logging.getLogger("groundlock.audit")

RowT = TypeVar("RowT", bound=TableRow)

_KEY_GUARD = "groundlock-key-guard"
"""The txn every append carries, so a key lookup and the append after it are serialised
across writers: delta-rs refuses the second of two concurrent commits with the same app id."""
_RECOVER_EVERY = 30.0
"""Seconds between looks for dead writers' segments, after the one at flusher start."""
_RETRY = 5.0
"""Seconds between checks of an unavailable store (requests fail closed meanwhile)."""


class SpoolEntry(BaseModel):
    """One spool line: both rows of one request, made durable together."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    validation: ValidationRow
    query: QueryRow


@dataclass
class _ProcessState:
    """What one process holds: rebuilt after a fork, never inherited."""

    pid: int
    spool: SpoolWriter | None = None
    flusher: threading.Thread | None = None
    wake: threading.Event = field(default_factory=threading.Event)
    stopping: bool = False
    problem: str | None = None
    """Why the store refuses rows now (None when it accepts them)."""
    checked_at: float = 0.0


class DeltaAuditStore:
    """The audit trail: a local path by default, or any object-store URI delta-rs opens.

    ``storage_options`` go to delta-rs unchanged (credentials, endpoints, timeouts). The
    spool lives in ``spool_dir``: by default ``<root>/_spool`` for a local root, and a
    per-URI directory under ``$GROUNDLOCK_SPOOL_DIR`` (or ``~/.local/state/groundlock/spool``)
    for an object store. It must be local, durable storage. A segment is committed when it
    holds ``flush_rows`` requests or is ``flush_interval_seconds`` old.

    Creating a store touches nothing; the first row recorded in a process opens (or
    creates) the tables and starts that process's flusher.
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        storage_options: Mapping[str, str] | None = None,
        *,
        spool_dir: str | os.PathLike[str] | None = None,
        flush_rows: int = 5_000,
        flush_interval_seconds: float = 1.0,
        min_vacuum_retention_hours: int | None = None,
        commit_attempts: int = 10,
    ) -> None:
        self.uri = delta_location(uri)
        self.local = is_local(self.uri)
        self.storage_options = dict(storage_options or {})
        unsafe = unsafe_commit_setting(self.uri, self.storage_options)
        if unsafe is not None:  # refused now, not after a commit is lost
            raise ValueError(f"the audit trail refuses an unsafe S3 setting: {unsafe}")
        if spool_dir is not None:
            self.spool_dir = Path(spool_dir).absolute()
        elif self.local:
            self.spool_dir = Path(self.uri) / "_spool"
        else:
            base = os.environ.get("GROUNDLOCK_SPOOL_DIR") or Path.home() / ".local/state"
            digest = hashlib.sha256(self.uri.encode()).hexdigest()[:16]
            self.spool_dir = Path(base) / "groundlock" / "spool" / digest
        if flush_rows < 1 or flush_interval_seconds <= 0 or commit_attempts < 1:
            raise ValueError("flush_rows, flush_interval_seconds and commit_attempts must be > 0")
        self.flush_rows = flush_rows
        self.flush_interval_seconds = flush_interval_seconds
        if min_vacuum_retention_hours is None:
            # Configuration, read when the store is made (before any work), and named when
            # bad: int()'s own message names neither the variable nor what it wants.
            raw = os.environ.get("GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS") or "168"
            try:
                min_vacuum_retention_hours = int(raw)
            except ValueError:
                min_vacuum_retention_hours = -1
            if not 0 <= min_vacuum_retention_hours <= 1_000_000:
                shown = raw if len(raw) <= 40 else raw[:39] + "…"
                raise ValueError(
                    "GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS must be a whole number of hours from "
                    f"0 to 1,000,000, not {shown!r}"
                )
        self.min_vacuum_retention_hours = min_vacuum_retention_hours
        self.commit_attempts = commit_attempts
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        """One flush at a time per process: the flusher thread, ``flush()`` or ``close()``."""
        self._state = _ProcessState(pid=-1)
        _STORES.add(self)

    def __repr__(self) -> str:
        return f"DeltaAuditStore({self.uri!r})" if self.local else "DeltaAuditStore(<object store>)"

    def table_uri(self, row_type: type[TableRow]) -> str:
        """Where ``row_type``'s table lives."""
        return f"{self.uri}/{row_type.table}"

    # -- the hot path -----------------------------------------------------------------------

    def record(self, validation: ValidationRow, query: QueryRow) -> None:
        """Make both rows of one request durable, or raise :class:`AuditUnavailable`."""
        state = self._process_state()
        if state.problem is not None:
            raise AuditUnavailable(state.problem)
        assert state.spool is not None  # noqa: S101  (set whenever problem is None)
        entry = SpoolEntry(validation=validation, query=query)
        try:
            state.spool.append(encode_line(entry.model_dump_json()), entry)
        except SpoolError as exc:
            if not state.spool.directory.is_dir():
                # Gone, not failing: the next check after _RETRY starts a new writer.
                state.problem = "the audit spool directory is missing"
                state.checked_at = time.monotonic()
            raise AuditUnavailable("the audit spool cannot be written") from exc
        if state.spool.pending_lines >= self.flush_rows:
            state.wake.set()

    def _process_state(self) -> _ProcessState:
        state = self._state
        if state.pid == os.getpid():
            flusher = state.flusher
            if state.problem is None and flusher is not None and flusher.is_alive():
                return state
            if state.problem is not None and time.monotonic() - state.checked_at < _RETRY:
                return state
        with self._lock:
            if self._state.pid != os.getpid():
                self._state = _ProcessState(pid=os.getpid())
            state = self._state
            if state.problem is not None and time.monotonic() - state.checked_at < _RETRY:
                return state  # another request checked while this one waited for the lock
            if state.problem is not None or state.flusher is None or not state.flusher.is_alive():
                self._start(state)  # first use, a fault to re-check, or a flusher that died
            return state

    def _start(self, state: _ProcessState) -> None:
        state.problem = self.problem() or self._spool_problem()
        state.checked_at = time.monotonic()  # after the check: a slow one is not repeated
        if state.problem is not None:
            logger.error("audit store unavailable: %s", state.problem)
            return
        if state.spool is not None and not state.spool.directory.is_dir():
            state.spool.release()  # its directory is gone: start a new writer
            state.spool = None
        if state.spool is None:
            try:
                state.spool = SpoolWriter(self.spool_dir)
            except OSError as exc:
                state.problem = f"the audit spool cannot be created ({type(exc).__name__})"
                logger.error("audit store unavailable: %s", state.problem)  # noqa: TRY400  (no paths)
                return
        if state.flusher is None or not state.flusher.is_alive():
            flusher = threading.Thread(
                target=self._flush_loop, args=(state,), name="groundlock-audit-flusher",
                daemon=True,
            )  # fmt: skip
            try:
                flusher.start()
            except RuntimeError as exc:  # no thread can be started: nothing would commit
                state.problem = f"the audit flusher cannot start ({type(exc).__name__})"
                logger.error("audit store unavailable: %s", state.problem)  # noqa: TRY400
                return
            state.flusher = flusher

    def _spool_problem(self) -> str | None:
        """Refuse a spool directory that holds another store's segments.

        Recovery commits whatever it finds in the directory, so two stores sharing one
        would commit each other's rows into the wrong tables.
        """
        marker = self.spool_dir / "STORE"
        claim = hashlib.sha256(self.uri.encode()).hexdigest() + "\n"
        try:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
            if not marker.exists():
                # Written whole, then linked into place: a process starting at the same
                # moment never reads a marker that exists but is still empty.
                draft = self.spool_dir / f".STORE.{os.getpid()}.{threading.get_ident()}"
                draft.write_text(claim, encoding="ascii")
                try:
                    os.link(draft, marker)
                except FileExistsError:
                    pass  # another process claimed it first; its claim is read below
                finally:
                    draft.unlink(missing_ok=True)
            if marker.read_text(encoding="ascii") != claim:
                return "the audit spool directory belongs to another store"
        except OSError as exc:
            return f"the audit spool cannot be created ({_kind(exc)})"
        return None

    def problem(self) -> str | None:
        """Why the tables cannot take rows now, or None; opens or creates them as needed.

        The text is safe to show: it names the table and the kind of fault, never a path,
        a URI or a credential.
        """
        for row_type in TABLES:
            try:
                table = self._open(row_type, create=True)
            except BaseException as exc:  # noqa: BLE001  (any failure means: not available)
                _reraise_interrupt(exc)  # delta-rs panics (BaseException) after a fork
                return f"the {row_type.table} table cannot be opened ({_kind(exc)}: {_reason(exc)})"
            mismatch = schema_problem(table, row_type)
            if mismatch and add_new_columns(table, row_type):
                mismatch = schema_problem(self._open(row_type), row_type)
            if mismatch:
                return f"the {row_type.table} table {mismatch}"
            if keep_log(table):
                table = self._open(row_type)
            risk = log_cleanup_risk(table)
            if risk is not None:
                logger.warning("audit: the %s table %s", row_type.table, risk)
            if self.local and not writable(Path(self.table_uri(row_type)) / "_delta_log"):
                return f"the {row_type.table} table is not writable"
        return None

    # -- tables -----------------------------------------------------------------------------

    def _open(self, row_type: type[TableRow], *, create: bool = False) -> DeltaTable:
        return open_table(self.table_uri(row_type), row_type, self.storage_options, create=create)

    # -- the flusher ------------------------------------------------------------------------

    def _flush_loop(self, state: _ProcessState) -> None:
        recovered_at = -_RECOVER_EVERY
        while not state.stopping and state.pid == os.getpid():
            # Dead writers' segments: at start, then now and then (a sibling may die while
            # this process lives on).
            if time.monotonic() - recovered_at >= _RECOVER_EVERY:
                self._guarded(self._recover, state)
                recovered_at = time.monotonic()
            state.wake.wait(self.flush_interval_seconds)
            state.wake.clear()
            if state.pid == os.getpid():
                self._guarded(self._flush_own, state)

    def _guarded(self, work: Callable[[_ProcessState], None], state: _ProcessState) -> None:
        """Run one flusher step; a fault is logged by kind and the loop goes on.

        The rows stay in the spool. A dead flusher would leave requests acknowledged and
        nothing committed.
        """
        with self._flush_lock:
            try:
                work(state)
            except BaseException as exc:  # noqa: BLE001
                _reraise_interrupt(exc)
                logger.error(  # noqa: TRY400
                    "audit flusher step failed (%s: %s)", _kind(exc), _reason(exc)
                )

    def _flush_own(self, state: _ProcessState) -> None:
        spool = state.spool
        if spool is None:
            return
        try:
            spool.rotate()
        except OSError:
            logger.exception("audit spool rotation failed")
        closed = [
            s for s in segments_of(self.spool_dir, spool.writer_id) if s.seq < spool.current_seq
        ]
        if closed:
            self._commit(state, spool.writer_id, closed)

    def _recover(self, state: _ProcessState) -> None:
        """Commit what dead writers (earlier runs, killed processes) left in the spool."""
        own = state.spool.writer_id if state.spool else ""
        for writer_id in abandoned_writers(self.spool_dir, exclude=own):
            try:
                with adopted(self.spool_dir, writer_id) as segments:
                    if segments:
                        self._commit(state, writer_id, segments)
            except OSError as exc:  # one unreadable writer must not block the others
                logger.error("audit recovery skipped a writer (%s)", _kind(exc))  # noqa: TRY400

    def flush(self, *, strict: bool = False) -> None:
        """Commit everything this process has spooled so far (blocks until done or failed).

        A failed commit is logged and its rows stay in the spool for the flusher to retry.
        With ``strict``, it raises :class:`AuditUnavailable` instead: a batch job (the Spark
        runner) must not report a task done while its rows sit on a disk that may vanish
        with the executor; the task fails, and its retry re-records under the same keys.
        """
        state = self._state
        if state.pid != os.getpid() or state.spool is None:
            return
        self._guarded(self._flush_own, state)
        spool = state.spool
        if strict and any(
            s.seq < spool.current_seq for s in segments_of(self.spool_dir, spool.writer_id)
        ):
            raise AuditUnavailable("the audit trail did not commit this process's rows")

    def recover(self) -> None:
        """Commit the spool segments of writers that are no longer running."""
        state = self._process_state()
        self._guarded(self._recover, state)

    def close(self) -> None:
        """Stop this process's flusher after a final flush; later records start it again."""
        with self._lock:  # one closer: a second caller (atexit, a shutdown hook) returns
            state, self._state = self._state, _ProcessState(pid=-1)
        if state.pid != os.getpid() or state.spool is None:
            return
        state.stopping = True
        state.wake.set()
        if state.flusher is not None and state.flusher is not threading.current_thread():
            state.flusher.join()
        spool = state.spool
        for _ in range(3):  # a commit may lose to other writers' conflicts: try again
            self._guarded(self._flush_own, state)
            if not segments_of(self.spool_dir, spool.writer_id):
                break
        # Segments still left are durable; without the lock, the next store to start (in
        # any process) adopts and commits them.
        spool.release()

    def _commit(self, state: _ProcessState, writer_id: str, segments: Sequence[Any]) -> None:
        own = state.spool if state.spool and state.spool.writer_id == writer_id else None
        entries: dict[int, list[SpoolEntry]] = {}
        quarantine = set()
        app_id = f"groundlock-spool-{writer_id}"
        try:
            for segment in segments:
                kept = own.items(segment.seq) if own else None
                if kept is not None:
                    entries[segment.seq] = [e for e in kept if isinstance(e, SpoolEntry)]
                    continue
                entries[segment.seq], unreadable = _entries(segment.path)
                if unreadable:
                    quarantine.add(segment.seq)
            for row_type, pick in (
                (ValidationRow, lambda e: e.validation),
                (QueryRow, lambda e: e.query),
            ):
                self._append_segments(row_type, app_id, entries, pick)
        except BaseException as exc:  # noqa: BLE001  (rows stay in the spool; retried next time)
            _reraise_interrupt(exc)
            # The class only: delta-rs messages quote URIs, and a URI may carry a credential.
            logger.error(  # noqa: TRY400
                "audit commit failed, rows kept in the spool (%s: %s)", _kind(exc), _reason(exc)
            )
            state.problem = self.problem()
            state.checked_at = time.monotonic()
            return
        for segment in segments:
            with contextlib.suppress(FileNotFoundError):
                if segment.seq in quarantine:
                    # Lines that checksum but do not validate (a spool from another version?)
                    # are kept aside for a person to look at, never silently dropped.
                    segment.path.rename(segment.path.with_suffix(".bad"))
                else:
                    segment.path.unlink()
            if own:
                own.forget(segment.seq)

    def _append_segments(
        self,
        row_type: type[RowT],
        app_id: str,
        entries: Mapping[int, Sequence[SpoolEntry]],
        pick: Callable[[SpoolEntry], RowT],
    ) -> None:
        from deltalake import CommitProperties, Transaction, write_deltalake  # noqa: PLC0415
        from deltalake.exceptions import CommitFailedError  # noqa: PLC0415

        for attempt in range(1, self.commit_attempts + 1):
            table = self._open(row_type)
            done = table.transaction_version(app_id)
            guard = table.transaction_version(_KEY_GUARD) or 0
            todo = [seq for seq in sorted(entries) if done is None or seq > done]
            if not todo:
                return
            rows = self._absent(table, [pick(e) for seq in todo for e in entries[seq]])
            if not rows:
                return  # nothing new; the segments are already recorded
            link = _link(table, row_type, rows, app_id.removeprefix("groundlock-spool-"))
            try:
                write_deltalake(
                    table,
                    table_rows(table, row_type, rows),
                    mode="append",
                    commit_properties=CommitProperties(
                        app_transactions=[
                            Transaction(app_id, todo[-1]),
                            # Every keyed append bumps one shared txn: two writers whose
                            # lookups overlapped conflict, and the loser looks again.
                            Transaction(_KEY_GUARD, guard + 1),
                        ],
                        custom_metadata={"groundlock.rows": str(len(rows)), **link},
                    ),
                )
            except CommitFailedError:
                if attempt == self.commit_attempts:
                    raise
                # Counted by whoever watches contention (benchmarks/audit.py, the
                # many-writer tests); routine with several writers, so not a warning.
                logger.debug("audit commit conflict on the %s table; retrying", row_type.table)
                # Conflicts with other writers: back off with jitter, then look again (the
                # commit may even have landed).
                time.sleep(min(2.0, 0.01 * 2**attempt) * random.uniform(0.5, 1.5))  # noqa: S311
                continue
            return

    def _absent(self, table: DeltaTable, rows: list[RowT]) -> list[RowT]:
        """The first row of each execution the table does not hold yet (unkeyed rows always).

        The key rule is :func:`groundlock.stores.keys.new_rows`. Query rows follow the
        validations table (committed first): an execution it holds under a derived run id
        goes under the same one here, so two writers committing in another order in the two
        tables cannot pair one request's query row with another's validation row.
        """
        keys = {key for key in (row.key() for row in rows) if key is not None}
        if not keys:
            return rows
        ids = sorted({request_id for request_id, _ in keys})
        present = held_keys(table, ids, rows[0].outcome_fields)
        placed = None
        if isinstance(rows[0], QueryRow):
            first = self._open(ValidationRow)
            placed = family_index(held_keys(first, ids, ValidationRow.outcome_fields))
        kept = []
        for row, rerun in new_rows(rows, present, _rerun, placed):  # in spool order
            if rerun:
                _report_other_outcome(row.key() or ("", ""))
            kept.append(row)
        return kept

    # -- reads and maintenance ----------------------------------------------------------------

    def rows(self, row_type: type[RowT], query: TrailQuery = ALL_ROWS) -> list[RowT | InvalidRow]:
        """The records ``query`` selects from one table (``AuditReader.rows``).

        A table from an older groundlock, not yet upgraded by a writer, lacks the newer
        (nullable) columns: they read as null, so a read-only auditor can still read it.
        """
        from groundlock.stores import delta_reads  # noqa: PLC0415

        return delta_reads.rows(self, row_type, query)

    def select(
        self, row_type: type[RowT], where: str = "", *, order_by: str = "timestamp_utc",
        limit: int | None = None,
    ) -> list[RowT]:  # fmt: skip
        """Rows of one table as row models, oldest first, selected by a SQL condition.

        ``where`` is a SQL condition over the table's columns, with values quoted by
        :func:`sql_text`; :meth:`rows` takes a typed query instead and is what the tools
        use. Raises :class:`~groundlock.stores.readers.TrailDamaged` (one line, no path)
        when a data file cannot be read or a row breaks its model.
        """
        from groundlock.stores.readers import read_rows, valid_rows  # noqa: PLC0415

        return valid_rows(read_rows(self, row_type, where, order_by=order_by, limit=limit))

    def executions(
        self, keys: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[ValidationRow, ...]]:
        """Every recorded execution of each of ``keys``: its record first, then re-executions.

        ``keys`` are ``(request_id, run_id)`` pairs (``""`` for no run id); a key the trail
        does not hold is absent (a trail not yet created holds none). What a batch job reads
        to resume (:func:`groundlock.stores.keys.executions_of`).
        """
        from groundlock.stores import delta_reads  # noqa: PLC0415

        return delta_reads.executions(self, keys)

    def add_feedback(self, request_id: str, rating: int, comment: str | None = None) -> FeedbackRow:
        """Append one feedback row: a direct commit (feedback is rare and interactive), linked.

        Chained as the spool's appends are (:func:`_link`), and under the same key guard, so
        two processes adding feedback at once cannot both link to one head: delta-rs refuses
        the second commit, which reads the new head and tries again.
        """
        from deltalake import CommitProperties, Transaction, write_deltalake  # noqa: PLC0415
        from deltalake.exceptions import CommitFailedError  # noqa: PLC0415

        row = FeedbackRow.model_validate(
            {
                "record_id": uuid.uuid4().hex,
                "timestamp_utc": datetime.now(UTC),
                "request_id": request_id,
                "rating": rating,
                "comment": comment,
            }
        )
        problem = self.problem()
        if problem:
            raise AuditUnavailable(problem)
        for attempt in range(1, self.commit_attempts + 1):
            table = self._open(FeedbackRow)
            guard = table.transaction_version(_KEY_GUARD) or 0
            link = _link(table, FeedbackRow, [row], f"feedback-{os.getpid()}")
            try:
                write_deltalake(
                    table,
                    table_rows(table, FeedbackRow, [row]),
                    mode="append",
                    commit_properties=CommitProperties(
                        app_transactions=[Transaction(_KEY_GUARD, guard + 1)],
                        custom_metadata={"groundlock.rows": "1", **link},
                    ),
                )
            except CommitFailedError:
                if attempt == self.commit_attempts:
                    raise
                time.sleep(min(2.0, 0.01 * 2**attempt) * random.uniform(0.5, 1.5))  # noqa: S311
                continue
            break
        return row

    def compact(self) -> dict[str, dict[str, Any]]:
        """Merge small files in every table (:func:`groundlock.stores.delta_upkeep.compact`)."""
        from groundlock.stores import delta_upkeep  # noqa: PLC0415

        return delta_upkeep.compact(self)

    def vacuum(self, retention_hours: int, *, dry_run: bool = True) -> dict[str, list[str]]:
        """Delete unreferenced old files (:func:`groundlock.stores.delta_upkeep.vacuum`)."""
        from groundlock.stores import delta_upkeep  # noqa: PLC0415

        return delta_upkeep.vacuum(self, retention_hours, dry_run=dry_run)


def _entries(path: Path) -> tuple[list[SpoolEntry], int]:
    """A segment's entries, and how many checksummed lines failed validation."""
    payloads, torn = read_segment(path)
    entries = []
    unreadable = 0
    for payload in payloads:
        try:
            entries.append(SpoolEntry.model_validate_json(payload))
        except ValidationError:
            unreadable += 1
    if torn or unreadable:
        logger.warning(
            "audit spool: %d torn and %d invalid line(s) in one segment", torn, unreadable
        )
    return entries, unreadable


def _link(
    table: DeltaTable, row_type: type[TableRow], rows: Sequence[TableRow], writer: str
) -> dict[str, Any]:
    """The chain link this append records (:mod:`groundlock.stores.hashchain`).

    Read from the version this attempt writes on: the key guard makes a concurrent append
    fail rather than rebase, so a retry reads the new head and links to it. The link's
    running row set continues the head's; a table whose head has none (new, written by an
    older groundlock, or never chained) starts it from every row it holds now.
    """
    head = chain_head(table, row_type.table)
    hashes = [model_row_hash(row) for row in rows]
    running = (head.running or _rows_held(table, row_type)).plus(hashes)
    own = rows_digest(hashes)
    digest = link_digest(row_type.table, head.digest, len(rows), own, running)
    return Link(head.seq + 1, head.digest, digest, len(rows), writer, running, own).metadata()


def _rows_held(table: DeltaTable, row_type: type[TableRow]) -> Running:
    """The running sum of the rows ``table`` holds before its first format-2 link."""
    if not table.file_uris():
        return EMPTY
    hashes = stored_row_hashes(table)
    logger.info(
        "audit: the %s table's row set starts from the %d row(s) it held before",
        row_type.table,
        len(hashes),
    )
    return Running(len(hashes), LtHash.of(hashes))


def _rerun(row: RowT, run_id: str) -> RowT:
    """``row`` under the derived run id of a re-execution (:mod:`groundlock.stores.keys`)."""
    return row.model_copy(update={"run_id": run_id})


def _report_other_outcome(key: tuple[str, str]) -> None:
    # One row per (request_id, run_id) is the table's contract; a later execution that
    # answered differently is a record of its own, under a derived run id.
    logger.warning(
        "audit: request %s was executed again with another outcome; recorded as run %s",
        key[0],
        key[1],
    )


def _reraise_interrupt(exc: BaseException) -> None:
    """Re-raise what stops the program.

    Anything else, delta-rs's ``PanicException`` (a ``BaseException``) included, is a fault
    of the store, to fail closed on.
    """
    if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit | CancelledError):
        raise exc


def _kind(exc: BaseException) -> str:
    """The exception's class, not its text: delta-rs messages quote paths and URIs."""
    return type(exc).__name__


_STORES: weakref.WeakSet[DeltaAuditStore] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # The parent's threads do not exist here and its descriptors are shared: forget them,
    # without closing the parent's segments or releasing its lock.
    for store in list(_STORES):
        state = store._state
        if state.spool is not None:
            state.spool.forget_after_fork()
        store._state = _ProcessState(pid=-1)
        store._lock = threading.Lock()
        store._flush_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _at_exit() -> None:
    for store in list(_STORES):
        with contextlib.suppress(Exception):
            store.close()


atexit.register(_at_exit)
