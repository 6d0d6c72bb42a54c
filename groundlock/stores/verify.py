"""``records verify``: recompute each audit table's hash chain from its data files.

The verifier walks a table's Delta log commit by commit (the ``_delta_log`` JSON files, read
directly, :mod:`groundlock.stores.deltalog`), reads back the rows of every file a linked
commit added, and recomputes the commit's digest (:mod:`groundlock.stores.hashchain`). What
it reports, naming table, version and file:

* ``ROW_CHANGED``: a linked commit's rows no longer hash to its digest (a row edited,
  added to or dropped from a file, or the file replaced); the file named is the one whose
  size or row count differs from what the commit recorded, else every file of the commit.
* ``FILE_MISSING`` / ``FILE_UNREADABLE``: a file a linked commit added is gone or is not
  Parquet any more (``FILE_COMPACTED_AWAY`` when a compaction removed it and a vacuum
  deleted it since, for a format-1 link: not tampering, but no longer checkable; a
  format-2 link's rows are checked through the row set instead).
* ``LIVE_ROWS_CHANGED`` (table-level, no version): the rows in the table's live files are
  not, as a multiset, the rows the chain committed (each format-2 link carries the table's
  running LtHash row set, :mod:`groundlock.stores.lthash`). This is what still finds an
  edited, inserted or dropped row after a compaction and a vacuum. It names the files of
  the smallest group that differs (the files and commits that compactions mixed), within
  it those whose size or row count differs from the log's record, and says how many rows
  were committed and are held; it cannot name the row.
* ``LOG_TRUNCATED``: the log's first commit is not version 0 (Delta's log cleanup, or
  commits deleted): the links before it cannot be checked. A signed checkpoint at a
  version the log still holds waives it (:func:`waive_covered_truncation`).
* ``UNLINKED_COMMIT``: a commit that adds rows without a link (rows committed by anything
  but the store), ``ROWS_REMOVED``: one that removes rows (``dataChange``), and
  ``COMPACTION_CHANGED_ROWS``: a commit that only moves rows but whose new files do not
  hold exactly the rows of the files it removed.
* ``PARTITION_MISMATCH``: a file whose day partition in the log is not the day of every
  row it holds (a file moved to another day in the log hides its rows from day reads; the
  chain binds rows, not the log's partition values).
* ``CHAIN_BROKEN``: a link whose ``prev`` or ``seq`` does not follow the link before it
  (a linked commit removed, replaced or inserted), ``LOG_GAP``: a log version missing,
  ``LOG_UNREADABLE``: a commit file that is not Delta log JSON, or (no version named) a
  log delta-rs cannot load that no gap explains.
* With a signed checkpoint: ``BAD_SIGNATURE``, ``TRUNCATED`` (the history ends before the
  checkpoint's version) and ``HISTORY_REWRITTEN`` (the link at that version differs).
* ``LINK_CHANGED``: a format-3 link whose fields do not hash to its digest, or whose
  running count is not the previous link's plus its rows (checked without its files).
* What changes what readers see without changing a file (an adversarial review's finds):
  ``CHECKPOINT_AHEAD`` (delta-rs loads a version from a Delta checkpoint past the last
  commit JSON), ``DELETION_VECTOR`` and ``LAYOUT_CHANGED`` (partition columns other than
  the day, column mapping). Removes are checked in linked commits too (``ROWS_REMOVED``).

Local tables and tables on any object store delta-rs opens (``s3://``, ``az://``,
``abfss://``...) are verified alike: the log and the files are read as bytes through
:mod:`groundlock.stores.objectfiles` (delta-rs's own object store, with the storage
options the store was given), an object store's log versions probed as
:mod:`groundlock.stores.deltalog` describes, and each remote data file copied to a
temporary file, read, and removed, one at a time.

Rows committed before a table was chained (before the commit that created or upgraded it
with the chain-start marker, or before its first link) are counted as *unchained*, not
reported: they are history from an older groundlock (feedback was not chained before), and
the first format-2 link binds them into its row set as they stood. A forger who inserts
rows there by renumbering the log would be seen only through that row set, or a signed
checkpoint.

What no chain can show: a writer holding the tables *and* the checkpoint key can rewrite
everything consistently; and without a checkpoint, a tail cut off cleanly.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from groundlock.stores.delta_tables import CHAIN_START
from groundlock.stores.deltalog import Commit, read_log
from groundlock.stores.hashchain import (
    Link,
    Running,
    batch_digest,
    genesis,
    link_digest,
    link_of,
    row_hash,
    rows_digest,
)
from groundlock.stores.layout import day_mismatch
from groundlock.stores.lthash import LtHash
from groundlock.stores.objectfiles import TableFiles, table_files
from groundlock.stores.readers import sql_text

if TYPE_CHECKING:
    from pathlib import Path

    from groundlock.stores.delta import DeltaAuditStore

__all__ = [
    "CHAINED_TABLES",
    "Finding",
    "TableReport",
    "check_checkpoint",
    "make_checkpoint",
    "verify_store",
    "verify_table",
    "waive_covered_truncation",
]

CHAINED_TABLES = ("validations", "queries", "feedback")
"""The tables the store links (every append of theirs carries a link)."""
_CHECKPOINT_FORMAT = "groundlock-trail-checkpoint-1"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing that shows the trail was altered (or can no longer be checked)."""

    table: str
    version: int | None
    kind: str
    detail: str
    files: tuple[str, ...] = ()

    def line(self) -> str:
        """One line naming table, version and file(s)."""
        where = self.table if self.version is None else f"{self.table} version {self.version}"
        if self.files:
            where += f" file {', '.join(self.files)}"
        return f"{self.kind}: {where}: {self.detail}"


@dataclass
class TableReport:
    """What verifying one table found."""

    table: str
    first_version: int = -1
    last_version: int = -1
    links: int = 0
    rows: int = 0
    head: tuple[int, int, str] | None = None
    """``(version, seq, digest)`` of the newest link, as recomputed."""
    heads: dict[int, tuple[int, str]] = field(default_factory=dict)
    """Every link's ``(seq, digest)`` by version, for a checkpoint to compare against."""
    findings: list[Finding] = field(default_factory=list)
    unchained_rows: int = 0
    """Rows of commits from before the table was chained (not checked, not findings)."""
    live_rows: int | None = None
    """Rows in the table's live files when their row set matched the chain's (else None)."""
    moved_links: int = 0
    """Format-2 links whose files a compaction replaced and a vacuum deleted."""
    notes: list[str] = field(default_factory=list)
    """What an operator should know that is not a finding (a waived log truncation...)."""

    def summary(self) -> str:
        """One line: what was checked, and its verdict."""
        if self.last_version < 0:
            return f"{self.table}: no table"
        verdict = "verified" if not self.findings else f"{len(self.findings)} problem(s)"
        head = ""
        if self.head is not None:
            version, seq, digest = self.head
            head = f"; head: link {seq} at version {version}, digest {digest[:16]}"
        return (
            f"{self.table}: versions {self.first_version}-{self.last_version}, "
            f"{self.links} linked commit(s), {self.rows:,} row(s): {verdict}{head}"
            + "".join(f"; {note}" for note in self._notes())
        )

    def _notes(self) -> list[str]:
        notes = []
        if self.live_rows is not None:
            notes.append(f"row set: the {self.live_rows:,} live row(s) are the chain's")
        if self.moved_links and self.live_rows is None:
            notes.append(
                f"{self.moved_links} link(s) compacted and vacuumed, not checked (--since; a "
                "full verify checks them through the row set)"
            )
        if self.unchained_rows:
            notes.append(
                f"{self.unchained_rows:,} row(s) unchained (written before the chain existed)"
            )
        return notes + self.notes


def _file_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of one Parquet file as stored, a timestamp as integer microseconds.

    Read through delta-rs's DataFusion (a one-file external table), never pyarrow.
    """
    from arro3.core import DataType  # noqa: PLC0415
    from deltalake import QueryBuilder  # noqa: PLC0415

    builder = QueryBuilder()
    builder.execute(
        f"CREATE EXTERNAL TABLE f STORED AS PARQUET LOCATION {sql_text(str(path))}"
    ).read_all()
    schema = builder.execute("SELECT * FROM f LIMIT 0").read_all().schema
    selected = []
    for index in range(len(schema)):
        column = schema.field(index)
        quoted = '"' + column.name.replace('"', '""') + '"'
        if DataType.is_timestamp(column.type):
            selected.append(f"CAST({quoted} AS BIGINT) AS {quoted}")
        else:
            selected.append(quoted)
    result = builder.execute(f"SELECT {', '.join(selected)} FROM f").read_all()  # noqa: S608
    names = list(result.schema.names)
    columns = [column.to_pylist() for column in result.columns]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


class _Files:
    """Reads a table's data files once each, and says why one cannot be read."""

    def __init__(self, files: TableFiles, compacted_away: set[str]) -> None:
        self.files = files
        self.compacted_away = compacted_away
        self._hashes: dict[str, list[bytes] | str] = {}
        self.timestamps: dict[str, list[object]] = {}
        """Each file's ``timestamp_utc`` values as read, for :func:`_check_days`."""

    def hashes(self, relative: str) -> list[bytes] | str:
        """The file's row hashes, or why there are none (``FILE_MISSING``, ...)."""
        if relative not in self._hashes:
            self._hashes[relative] = self._read(relative)
        return self._hashes[relative]

    def _read(self, relative: str) -> list[bytes] | str:
        try:
            with self.files.local_copy(unquote(relative)) as path:
                try:
                    rows = _file_rows(path)
                    self.timestamps[relative] = [row.get("timestamp_utc") for row in rows]
                    return [row_hash(row) for row in rows]
                except Exception:  # noqa: BLE001  (any failure to read is the finding)
                    return "FILE_UNREADABLE"
        except FileNotFoundError:
            return "FILE_COMPACTED_AWAY" if relative in self.compacted_away else "FILE_MISSING"

    def size(self, relative: str) -> int | None:
        """The file's size now, or None when it is gone."""
        return self.files.size(unquote(relative))


_WHY = {
    "FILE_MISSING": "a data file the commit added is gone",
    "FILE_UNREADABLE": "a data file the commit added cannot be read as Parquet",
    "FILE_COMPACTED_AWAY": (
        "a compaction replaced the file and a vacuum deleted it: its rows cannot be checked "
        "against this link any more"
    ),
}


def verify_table(
    location: str | os.PathLike[str],
    name: str,
    *,
    since: int = 0,
    storage_options: Mapping[str, str] | None = None,
) -> TableReport:
    """Recompute the chain of the table at ``location``, reading the files of versions >= ``since``.

    ``location`` is a local path or any URI delta-rs opens, with its ``storage_options``
    (delta-rs reads the environment behind them). Links before ``since`` are taken as
    recorded (their digests anchor the rest). A store error other than a missing file is
    :class:`~groundlock.stores.sink.AuditUnavailable`, naming ``name`` and the cause.
    """
    report = TableReport(name)
    files = table_files(location, storage_options, label=name)
    log = read_log(files, os.fspath(location), storage_options, label=name)
    commits = log.commits
    present = sorted([commit.version for commit in commits] + log.unreadable)
    if not present:
        return report
    report.first_version, report.last_version = present[0], present[-1]
    report.findings.extend(
        Finding(name, v, "LOG_GAP", "this version's commit is missing from the log")
        for v in log.gaps
    )
    report.findings.extend(
        Finding(name, v, "LOG_UNREADABLE", "this version's commit file is not Delta log JSON")
        for v in log.unreadable
    )
    if log.unloadable is not None:
        report.findings.append(
            Finding(
                name, None, "LOG_UNREADABLE",
                f"delta-rs cannot load this table's log ({log.unloadable}); no missing or "
                "unreadable commit was found to explain it",
            )
        )  # fmt: skip
    compacted_away = {
        remove["path"]
        for commit in commits
        for remove in commit.removes
        if not remove.get("dataChange", True)
    }
    data = _Files(files, compacted_away)
    head, seq = genesis(name), 0
    if present[0] > 0:
        head = ""  # history before it was cleaned from the log: take its first link's prev
        report.findings.insert(0, _truncated(name, present[0]))
    start = _chain_start(name, commits)
    prior: Link | None = None
    for commit in commits:
        _check_reader_view(report, commit)
        link = link_of(commit.info)
        if link is not None:
            report.links += 1
            _link_altered(report, commit, link, prior)
            prior = link
            if head and (link.prev != head or link.seq != seq + 1):
                report.findings.append(
                    Finding(
                        name, commit.version, "CHAIN_BROKEN",
                        f"link {link.seq} does not follow link {seq} (a linked commit was "
                        "removed, replaced or inserted before it)",
                    )
                )  # fmt: skip
            if commit.version >= since:
                _check_link(report, data, commit, link)
                _check_days(report, data, commit)
            head, seq = link.digest, link.seq
            report.head = (commit.version, seq, head)
            report.heads[commit.version] = (seq, head)
        elif commit.version < start:
            report.unchained_rows += _rows_added(commit)
        elif commit.version >= since:
            _check_unlinked(report, data, commit)
            _check_days(report, data, commit)
    last = max(present)
    if log.loaded is not None and log.loaded > last:
        report.findings.append(
            Finding(
                name, log.loaded, "CHECKPOINT_AHEAD",
                f"delta-rs reads this version from a Delta checkpoint, past the last commit in "
                f"the log ({last}): what readers see was never in a commit this check could read",
            )
        )  # fmt: skip
    if commits and since <= commits[0].version:
        live = _live_files(os.fspath(location), commits[-1].version, storage_options)
        _check_row_set(report, data, commits, live)
    return report


def verify_store(store: DeltaAuditStore, *, since: int = 0) -> list[TableReport]:
    """Verify each chained table of ``store``, wherever it lives, with its storage options."""
    return [
        verify_table(
            f"{store.uri}/{name}", name, since=since, storage_options=store.storage_options
        )
        for name in CHAINED_TABLES
    ]


_LAYOUTS = ((), ("day_utc",))
"""The partition columns an audit table may have: none (tables from before the day
layout) or the UTC day. Any other makes the log, not the files, say what a column holds."""


def _check_reader_view(report: TableReport, commit: Commit) -> None:
    """Log actions that change what readers see of the files without changing the files.

    The chain hashes the rows stored in the data files; a reader sees them as delta-rs
    assembles them from the log. A deletion vector hides rows, a partition column's value
    comes from the log and not the file, and column mapping can rename one column to
    another: none of them is anything the store writes, so each is reported.
    """
    vectors = [add for add in commit.adds if add.get("deletionVector")]
    if vectors:
        report.findings.append(
            Finding(
                report.table, commit.version, "DELETION_VECTOR",
                "a deletion vector hides rows of a data file from readers",
                tuple(_name(add) for add in vectors),
            )
        )  # fmt: skip
    metadata = commit.metadata
    if metadata is None:
        return
    columns = metadata.get("partitionColumns") or []
    configuration = metadata.get("configuration") or {}
    mapping = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    why = None
    if not isinstance(columns, list) or tuple(columns) not in _LAYOUTS:
        why = f"it partitions the table by {columns!r}: readers take those values from the log"
    elif mapping != "none":
        why = f"it turns on column mapping ({mapping}): the log can rename a column to another"
    if why is not None:
        report.findings.append(Finding(report.table, commit.version, "LAYOUT_CHANGED", why))


def _link_altered(report: TableReport, commit: Commit, link: Link, prior: Link | None) -> bool:
    """Whether a format-3 link's own fields contradict its digest or the link before it.

    Needs no row: a link whose files a compaction and a vacuum removed is still checked, so
    its running count and row set cannot be rewritten unseen (they are what the live rows
    are checked against).
    """
    if link.own is None or link.running is None:
        return False
    why = None
    if link_digest(report.table, link.prev, link.rows, link.own, link.running) != link.digest:
        why = "its fields do not hash to its digest (the link was edited)"
    elif (
        prior is not None
        and prior.running is not None
        and prior.seq + 1 == link.seq
        and link.running.total != prior.running.total + link.rows
    ):
        why = (
            f"its running row count {link.running.total} is not the previous link's "
            f"{prior.running.total} plus its {link.rows} row(s)"
        )
    if why is None:
        return False
    report.findings.append(Finding(report.table, commit.version, "LINK_CHANGED", why))
    return True


def _check_link(report: TableReport, files: _Files, commit: Commit, link: Link) -> None:
    _check_removes(report, files, commit)  # a linked commit must not remove rows either
    hashes: list[bytes] = []
    adds = [add for add in commit.adds if add.get("dataChange", True)]
    for add in adds:
        found = files.hashes(add["path"])
        if found == "FILE_COMPACTED_AWAY" and link.running is not None:
            report.moved_links += 1  # its rows are checked in the row set (_check_row_set)
            return
        if isinstance(found, str):
            report.findings.append(
                Finding(report.table, commit.version, found, _WHY[found], (_name(add),))
            )
            return
        hashes.extend(found)
    report.rows += len(hashes)
    if link.own is not None:
        matches = rows_digest(hashes) == link.own
    else:
        matches = batch_digest(report.table, link.prev, hashes, link.running) == link.digest
    if len(hashes) == link.rows and matches:
        return
    suspects = tuple(_name(add) for add in adds if _looks_changed(files, add)) or tuple(
        _name(add) for add in adds
    )
    report.findings.append(
        Finding(
            report.table, commit.version, "ROW_CHANGED",
            f"its rows do not hash to its link ({len(hashes)} row(s) read, {link.rows} committed): "
            "a row was edited, inserted or dropped, or the file replaced",
            suspects,
        )
    )  # fmt: skip


def _looks_changed(files: _Files, add: Mapping[str, Any]) -> bool:
    if files.size(add["path"]) != add.get("size"):
        return True
    try:
        recorded = json.loads(add.get("stats") or "{}").get("numRecords")
    except ValueError:
        return True
    found = files.hashes(add["path"])
    return recorded is not None and not isinstance(found, str) and len(found) != recorded


def _check_unlinked(report: TableReport, files: _Files, commit: Commit) -> None:
    data_adds = [add for add in commit.adds if add.get("dataChange", True)]
    if data_adds:
        report.findings.append(
            Finding(
                report.table, commit.version, "UNLINKED_COMMIT",
                f"a {commit.info.get('operation', 'commit')} adds rows that no chain link "
                "covers (committed by something other than the audit store)",
                tuple(_name(add) for add in data_adds),
            )
        )  # fmt: skip
    _check_removes(report, files, commit)


def _check_removes(report: TableReport, files: _Files, commit: Commit) -> None:
    """A commit, linked or not, may remove rows only to move them (a compaction)."""
    data_removes = [remove for remove in commit.removes if remove.get("dataChange", True)]
    if data_removes:
        report.findings.append(
            Finding(
                report.table, commit.version, "ROWS_REMOVED",
                f"a {commit.info.get('operation', 'commit')} removes rows from the table",
                tuple(_name(remove) for remove in data_removes),
            )
        )  # fmt: skip
    moved_in = [add for add in commit.adds if not add.get("dataChange", True)]
    moved_out = [remove for remove in commit.removes if not remove.get("dataChange", True)]
    if moved_in or moved_out:
        _check_compaction(report, files, commit, moved_in, moved_out)


def _check_compaction(
    report: TableReport,
    files: _Files,
    commit: Commit,
    moved_in: Sequence[Mapping[str, Any]],
    moved_out: Sequence[Mapping[str, Any]],
) -> None:
    """A commit that only moves rows must hold, in its new files, exactly the old ones' rows."""
    sides: list[list[bytes]] = []
    for actions in (moved_out, moved_in):
        hashes: list[bytes] = []
        for action in actions:
            found = files.hashes(action["path"])
            if isinstance(found, str):
                if action in moved_out and found == "FILE_COMPACTED_AWAY":
                    return  # the files it replaced are vacuumed: checked at their links
                why = "a file it wrote is gone or unreadable" if action in moved_in else _WHY[found]
                report.findings.append(
                    Finding(report.table, commit.version, found, why, (_name(action),))
                )
                return
            hashes.extend(found)
        sides.append(sorted(hashes))
    if sides[0] != sides[1]:
        report.findings.append(
            Finding(
                report.table, commit.version, "COMPACTION_CHANGED_ROWS",
                f"a commit that only moves rows wrote {len(sides[1])} row(s) that differ from "
                f"the {len(sides[0])} it replaced",
                tuple(_name(add) for add in moved_in),
            )
        )  # fmt: skip


def _check_days(report: TableReport, files: _Files, commit: Commit) -> None:
    """Every file the commit added must hold only rows of the day the log files it under.

    A link binds a commit's rows, not where the log puts them: a file moved to another day
    partition (its ``add`` edited, or removed and added again as if compacted) would still
    verify, and reads of its rows' day would skip it.
    """
    for add in commit.adds:
        if not add.get("partitionValues") or isinstance(files.hashes(add["path"]), str):
            continue  # not laid out by day, or unreadable (reported as such elsewhere)
        wrong = day_mismatch(add["partitionValues"], files.timestamps.get(add["path"], ()))
        if wrong is not None:
            report.findings.append(
                Finding(report.table, commit.version, "PARTITION_MISMATCH", wrong, (_name(add),))
            )


def _name(action: Mapping[str, Any]) -> str:
    return unquote(str(action["path"])).rsplit("/", 1)[-1]


# -- the log's start, and rows before the chain -----------------------------------------------


def _truncated(name: str, first: int) -> Finding:
    return Finding(
        name, first, "LOG_TRUNCATED",
        "the log's commits before this version are gone (Delta's log cleanup, or deleted): "
        "the links before it cannot be checked, and the chain is verified from the oldest "
        "link left; a signed checkpoint at or after this version vouches for what came before",
    )  # fmt: skip


def _chain_start(name: str, commits: Sequence[Any]) -> float:
    """The version from which every commit adding rows must be linked.

    The table's creation or upgrade by a chaining groundlock (``CHAIN_START`` in its
    ``commitInfo``), or its first link; the log's first version when the chain began before
    it (a link after the first, in a truncated log). Commits before it are history written
    before the chain existed. A table with neither is all history (never chained yet).
    """
    starts: list[float] = [c.version for c in commits if CHAIN_START in c.info]
    for commit in commits:
        link = link_of(commit.info)
        if link is not None:
            first = link.seq == 1 and link.prev == genesis(name)
            starts.append(commit.version if first else commits[0].version)
            break
    return min(starts, default=float("inf"))


def _rows_added(commit: Any) -> int:  # noqa: ANN401  (a log commit)
    """Rows a commit added, by the counts its log records (files are not read)."""
    total = 0
    for add in commit.adds:
        if add.get("dataChange", True):
            with contextlib.suppress(TypeError, ValueError):
                total += int(json.loads(add.get("stats") or "{}").get("numRecords") or 0)
    return total


# -- the row set: what survives a compaction and a vacuum ------------------------------------


@dataclass
class _Group:
    """Files and commits whose rows can only be told apart as a whole (a compaction's)."""

    versions: set[int] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    committed: Running = field(default_factory=lambda: Running(0, LtHash()))


class _Groups:
    """Union-find over file paths and commit versions."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, node: str) -> str:
        self.parent.setdefault(node, node)
        while self.parent[node] != node:
            self.parent[node] = self.parent[self.parent[node]]
            node = self.parent[node]
        return node

    def join(self, *nodes: str) -> None:
        roots = [self.find(node) for node in nodes]
        for root in roots[1:]:
            self.parent[root] = roots[0]


def _live_files(
    location: str, version: int, storage_options: Mapping[str, str] | None = None
) -> dict[str, Mapping[str, Any]] | None:
    """The live data files at ``version`` as delta-rs reads the table (path, size, rows).

    What a reader of the table sees, Delta checkpoint included: the rows to account for.
    None when delta-rs cannot load the table (the log findings say why).
    """
    from deltalake import DeltaTable  # noqa: PLC0415

    try:
        table = DeltaTable(
            location, version=version, storage_options=dict(storage_options or {}) or None
        )
        actions = table.get_add_actions(flatten=True)
        columns = {name: actions.column(name).to_pylist() for name in actions.schema.names}
    except Exception:  # noqa: BLE001  (an unloadable log is reported from the log itself)
        return None
    return {
        unquote(str(path)): {"path": path, "size": size, "numRecords": records}
        for path, size, records in zip(
            columns["path"], columns["size_bytes"], columns["num_records"], strict=True
        )
    }


def _check_row_set(
    report: TableReport,
    files: _Files,
    commits: Sequence[Any],
    live: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    """The rows in the table's live files must be, as a multiset, the rows the chain holds.

    Each format-2 link carries the table's running row set (:mod:`~groundlock.stores.lthash`),
    so what is checked needs neither the commit's own files nor its log entry: a compaction
    may have regrouped the rows and a vacuum deleted the originals. Where the check fails,
    the files are narrowed to the *group* whose rows differ: the files and linked commits
    that compactions mixed together (a group's rows can only be compared as a whole), and
    within it the files whose size or row count differs from what the log recorded. Which
    row changed cannot be named: a multiset hash says only that the rows differ, and the
    counts whether rows were added or dropped. A group whose commits already have a finding
    is not reported twice.
    """
    found = _groups(commits, live) if live is not None else None
    if found is None or live is None:
        return
    # Findings that explain rows differing; a vacuumed file or a cleaned log explains none.
    explaining = [f for f in report.findings if f.kind not in _UNCHECKABLE]
    reported: set[object] = {f.version for f in explaining}
    reported |= {name for f in explaining for name in f.files}
    matched, clean = 0, True
    for group in found:
        held = _held(report, files, live, group, reported)
        if held is not None and held == group.committed:
            matched += held.total
            continue
        clean = False
        if held is not None and not group.versions & reported:
            report.findings.append(_changed(report.table, files, live, group, held))
    if clean:
        report.live_rows = matched


def _ranges(versions: Sequence[int]) -> str:
    """``0-4, 7, 9-12``: a group's versions, short however many commits it mixed."""
    spans: list[list[int]] = []
    for version in versions:
        if spans and version == spans[-1][1] + 1:
            spans[-1][1] = version
        else:
            spans.append([version, version])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


_UNCHECKABLE = frozenset({"FILE_COMPACTED_AWAY", "LOG_TRUNCATED"})


def _groups(
    commits: Sequence[Any], live: Mapping[str, Mapping[str, Any]] | None
) -> list[_Group] | None:
    """The table's groups, each with the rows the chain committed to it; None: no row set.

    Everything up to the first format-2 link (older links, rows from before the chain,
    files the log's cleaned commits added) is one group, the *base*, whose rows that link's
    running sum holds. After it, each format-2 link adds the difference between its running
    sum and the one before to the group of its files; a compaction joins the groups of the
    files it removed and added, and so does any other commit (an unlinked one adds nothing:
    its rows are not the chain's, and make its group differ).
    """
    linked = [c.version for c in commits if (link := link_of(c.info)) and link.running]
    if not linked or live is None:
        return None
    groups = _Groups()
    contributions: dict[str, Running] = {}
    previous: Running | None = None
    waiting: list[str] = []  # a format-1 link after format 2: its rows join the next link's
    for commit in commits:
        node = f"v{commit.version}"
        actions = [*commit.adds, *commit.removes]
        groups.join(node, *(f"f:{unquote(str(a['path']))}" for a in actions))
        link = link_of(commit.info)
        running = link.running if link is not None else None
        if commit.version <= linked[0]:
            groups.join("base", node)
            if running is not None:
                contributions[node] = previous = running
        elif running is not None and previous is not None:
            contributions[node] = Running(
                running.total - previous.total, running.rowset - previous.rowset
            )
            groups.join(node, *waiting)
            waiting, previous = [], running
        elif link is not None:
            waiting.append(node)
    added = {unquote(str(add["path"])) for commit in commits for add in commit.adds}
    for path in live:
        groups.join(f"f:{path}")
        if path not in added:
            groups.join("base", f"f:{path}")  # added before the log's first commit
    found: dict[str, _Group] = {}
    for node in list(groups.parent):
        group = found.setdefault(groups.find(node), _Group())
        if node.startswith("v"):
            group.versions.add(int(node[1:]))
        elif node.startswith("f:") and node[2:] in live:
            group.paths.add(node[2:])
    for node, running in contributions.items():
        group = found[groups.find(node)]
        group.committed = Running(
            group.committed.total + running.total, group.committed.rowset + running.rowset
        )
    return list(found.values())


def _held(
    report: TableReport,
    files: _Files,
    live: Mapping[str, Mapping[str, Any]],
    group: _Group,
    reported: set[object],
) -> Running | None:
    """The running sum of the rows in ``group``'s live files; None if one cannot be read."""
    held = Running(0, LtHash())
    for path in sorted(group.paths):
        found = files.hashes(str(live[path]["path"]))
        if isinstance(found, str):
            name = path.rsplit("/", 1)[-1]
            if name not in reported:
                report.findings.append(
                    Finding(
                        report.table, None, found, f"a live data file is {_GONE[found]}", (name,)
                    )
                )
            return None
        held = held.plus(found)
    return held


_GONE = {
    "FILE_MISSING": "gone",
    "FILE_COMPACTED_AWAY": "gone",
    "FILE_UNREADABLE": "not readable as Parquet",
}


def _changed(
    table: str,
    files: _Files,
    live: Mapping[str, Mapping[str, Any]],
    group: _Group,
    held: Running,
) -> Finding:
    committed = group.committed.total
    if held.total > committed:
        what = f"{held.total - committed} row(s) inserted"
    elif held.total < committed:
        what = f"{committed - held.total} row(s) dropped"
    else:
        what = "a row edited (or as many rows inserted as dropped)"
    names = sorted(path.rsplit("/", 1)[-1] for path in group.paths)
    suspects = sorted(
        path.rsplit("/", 1)[-1]
        for path in group.paths
        if _looks_changed(files, {"path": live[path]["path"], "size": live[path]["size"],
                                  "stats": json.dumps({"numRecords": live[path]["numRecords"]})})
    )  # fmt: skip
    versions = _ranges(sorted(group.versions)) or "none in the log"
    where = "in no live file" if not names else f"in {len(names)} live file(s)"
    return Finding(
        table, None, "LIVE_ROWS_CHANGED",
        f"the {held.total} row(s) {where} are not the {committed} row(s) the chain committed "
        f"to them (commits at versions {versions}, regrouped by compaction): {what}",
        tuple(suspects or names),
    )  # fmt: skip


# -- signed checkpoints -----------------------------------------------------------------------


def _mac(key: bytes, body: Mapping[str, Any]) -> str:
    payload = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def make_checkpoint(reports: Sequence[TableReport], key: bytes) -> dict[str, Any]:
    """A checkpoint of each table's verified head, signed with HMAC-SHA256 under ``key``.

    Refuses a table with findings: a checkpoint vouches for what was recomputed, and signing
    a trail already altered would make the alteration look vouched for.
    """
    bad = [report.table for report in reports if report.findings]
    if bad:
        raise ValueError(f"not signing: {', '.join(bad)} did not verify")
    body: dict[str, Any] = {
        "format": _CHECKPOINT_FORMAT,
        "signed_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "tables": {
            report.table: {"version": v, "seq": s, "digest": d}
            for report in reports
            if report.head is not None
            for v, s, d in (report.head,)
        },
    }
    return {**body, "hmac_sha256": _mac(key, body)}


def check_checkpoint(
    checkpoint: Mapping[str, Any], key: bytes, reports: Sequence[TableReport]
) -> list[Finding]:
    """What a signed checkpoint shows about the tables' histories now."""
    body = {name: value for name, value in checkpoint.items() if name != "hmac_sha256"}
    signature = str(checkpoint.get("hmac_sha256", ""))
    if body.get("format") != _CHECKPOINT_FORMAT or not hmac.compare_digest(
        _mac(key, body), signature
    ):
        return [
            Finding(
                "checkpoint", None, "BAD_SIGNATURE",
                "the checkpoint is not one this key signed (wrong key, or the file was edited)",
            )
        ]  # fmt: skip
    findings = []
    by_name = {report.table: report for report in reports}
    for name, entry in dict(body.get("tables") or {}).items():
        report = by_name.get(name)
        version, digest = int(entry["version"]), str(entry["digest"])
        if report is None or report.last_version < version:
            ends = (
                "no table"
                if report is None or report.last_version < 0
                else (f"version {report.last_version}")
            )
            findings.append(
                Finding(
                    name, version, "TRUNCATED",
                    f"the history ends at {ends}, before the signed checkpoint's version",
                )
            )  # fmt: skip
        elif version < report.first_version:
            findings.append(
                Finding(
                    name, version, "UNCHECKABLE",
                    "the log no longer holds the checkpoint's version (Delta log cleanup)",
                )
            )  # fmt: skip
        elif report.heads.get(version, (0, ""))[1] != digest:
            findings.append(
                Finding(
                    name, version, "HISTORY_REWRITTEN",
                    "the link at the signed checkpoint's version is not the one signed",
                )
            )  # fmt: skip
    return findings


def waive_covered_truncation(
    checkpoint: Mapping[str, Any], key: bytes, reports: Sequence[TableReport]
) -> None:
    """Clear ``LOG_TRUNCATED`` from each report whose cleaned history a checkpoint vouches for.

    A checkpoint signed under ``key`` at a version the log still holds, whose link there is
    the one signed, was made when the history before it verified (a checkpoint is never
    signed over findings), and the links since chain back to it: the commits cleaned away
    were checked then. The report keeps a note saying so. A checkpoint older than the
    log's first version covers nothing (``check_checkpoint`` says ``UNCHECKABLE``).
    """
    body = {name: value for name, value in checkpoint.items() if name != "hmac_sha256"}
    if body.get("format") != _CHECKPOINT_FORMAT or not hmac.compare_digest(
        _mac(key, body), str(checkpoint.get("hmac_sha256", ""))
    ):
        return
    by_name = {report.table: report for report in reports}
    for name, entry in dict(body.get("tables") or {}).items():
        report = by_name.get(name)
        if report is None:
            continue
        version, digest = int(entry["version"]), str(entry["digest"])
        cut = [f for f in report.findings if f.kind == "LOG_TRUNCATED"]
        if (
            cut
            and report.first_version <= version
            and report.heads.get(version, (0, ""))[1] == digest
        ):
            report.findings = [f for f in report.findings if f.kind != "LOG_TRUNCATED"]
            report.notes.append(
                f"log cleaned before version {report.first_version}, covered by the signed "
                f"checkpoint at version {version}"
            )
