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
  deleted it since: not tampering, but no longer checkable, see the README).
* ``UNLINKED_COMMIT``: a commit that adds rows without a link (rows committed by anything
  but the store), ``ROWS_REMOVED``: one that removes rows (``dataChange``), and
  ``COMPACTION_CHANGED_ROWS``: a commit that only moves rows but whose new files do not
  hold exactly the rows of the files it removed.
* ``CHAIN_BROKEN``: a link whose ``prev`` or ``seq`` does not follow the link before it
  (a linked commit removed, replaced or inserted), ``LOG_GAP``: a log version missing,
  ``LOG_UNREADABLE``: a commit file that is not Delta log JSON, or (no version named) a
  log delta-rs cannot load that no gap explains.
* With a signed checkpoint: ``BAD_SIGNATURE``, ``TRUNCATED`` (the history ends before the
  checkpoint's version) and ``HISTORY_REWRITTEN`` (the link at that version differs).

Local tables and tables on any object store delta-rs opens (``s3://``, ``az://``,
``abfss://``...) are verified alike: the log and the files are read as bytes through
:mod:`groundlock.stores.objectfiles` (delta-rs's own object store, with the storage
options the store was given), an object store's log versions probed as
:mod:`groundlock.stores.deltalog` describes, and each remote data file copied to a
temporary file, read, and removed, one at a time.

What no chain can show: a writer holding the tables *and* the checkpoint key can rewrite
everything consistently; and without a checkpoint, a tail cut off cleanly.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from groundlock.stores.deltalog import Commit, read_log
from groundlock.stores.hashchain import Link, batch_digest, genesis, link_of, row_hash
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
]

CHAINED_TABLES = ("validations", "queries")
"""The tables the store links (feedback is committed directly and not linked yet)."""
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
        )


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

    def hashes(self, relative: str) -> list[bytes] | str:
        """The file's row hashes, or why there are none (``FILE_MISSING``, ...)."""
        if relative not in self._hashes:
            self._hashes[relative] = self._read(relative)
        return self._hashes[relative]

    def _read(self, relative: str) -> list[bytes] | str:
        try:
            with self.files.local_copy(unquote(relative)) as path:
                try:
                    return [row_hash(row) for row in _file_rows(path)]
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
    for commit in commits:
        link = link_of(commit.info)
        if link is not None:
            report.links += 1
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
            head, seq = link.digest, link.seq
            report.head = (commit.version, seq, head)
            report.heads[commit.version] = (seq, head)
        elif commit.version >= since:
            _check_unlinked(report, data, commit)
    return report


def verify_store(store: DeltaAuditStore, *, since: int = 0) -> list[TableReport]:
    """Verify each chained table of ``store``, wherever it lives, with its storage options."""
    return [
        verify_table(
            f"{store.uri}/{name}", name, since=since, storage_options=store.storage_options
        )
        for name in CHAINED_TABLES
    ]


def _check_link(report: TableReport, files: _Files, commit: Commit, link: Link) -> None:
    hashes: list[bytes] = []
    adds = [add for add in commit.adds if add.get("dataChange", True)]
    for add in adds:
        found = files.hashes(add["path"])
        if isinstance(found, str):
            report.findings.append(
                Finding(report.table, commit.version, found, _WHY[found], (_name(add),))
            )
            return
        hashes.extend(found)
    report.rows += len(hashes)
    if len(hashes) == link.rows and batch_digest(report.table, link.prev, hashes) == link.digest:
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
    data_removes = [remove for remove in commit.removes if remove.get("dataChange", True)]
    if data_adds:
        report.findings.append(
            Finding(
                report.table, commit.version, "UNLINKED_COMMIT",
                f"a {commit.info.get('operation', 'commit')} adds rows that no chain link "
                "covers (committed by something other than the audit store)",
                tuple(_name(add) for add in data_adds),
            )
        )  # fmt: skip
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


def _name(action: Mapping[str, Any]) -> str:
    return unquote(str(action["path"])).rsplit("/", 1)[-1]


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
