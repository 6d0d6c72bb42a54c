"""The audit trail's hash chain: each committed batch of rows bound to the one before it.

A table's chain is a log over its own Delta versions, as Certificate Transparency's logs
and QLDB's journal are a log over their entries: every commit the store makes to an audit
table carries, in its ``commitInfo`` (delta-rs ``custom_metadata``), a *link*::

    {"groundlock.chain": {"v": 2, "seq": 7, "prev": <hex>, "digest": <hex>,
                          "rows": 5000, "writer": <spool writer id>,
                          "total": 35000, "set": <base64 LtHash>}}

where ``digest = sha256(tag, table, prev, rows, sorted row hashes, total, set)`` and a row's
hash is the sha256 of its :func:`row_bytes`. ``seq`` counts the table's links from 1; the
first link's ``prev`` is :func:`genesis` of the table.

``total`` and ``set`` (format 2) are the table's *running* row count and row-set hash
(:class:`~groundlock.stores.lthash.LtHash`) after this commit: every row the table has been
given, the commit's included. They are what survives a compaction and a vacuum: the
verifier hashes every row in the table's live files, however they were regrouped, and
compares the multiset with the newest link's ``set`` (:mod:`groundlock.stores.verify`). They
are running sums rather than the commit's own, so that the newest link alone accounts for
every row, also once Delta's log cleanup has removed older commits. Both are inside the
digest, so neither can be swapped without breaking the chain. The first format-2 link of a
table that already held rows (written by an older groundlock, or before the table was
chained) starts its running sum from those rows: the rows before the chain are bound as
they stood then, neither vouched for nor lost track of.

Format 1 links (no ``total``, no ``set``) are read and verified as before.

Why one chain per table, over versions, and not per writer: every append already carries
the shared ``groundlock-key-guard`` txn (see :mod:`groundlock.stores.delta`), so delta-rs
refuses the second of two concurrent appends instead of rebasing it silently, and the
loser reads the table again before it retries. Each attempt reads the chain's head from
the table version it writes on, so the links are as linear as the appends are. A commit
that is not an append of ours (compaction, a schema upgrade) carries no link and the chain
skips it; a verifier checks such a commit moved rows without changing them.

The row hash is over the stored column values (not the row model), so a verifier can hash
a row it reads back even when it breaks the model: JSON with sorted keys, a timestamp as its
integer microseconds, a null column left out (a column added later, null in older rows,
does not change their hash). Rows are hashed as a sorted multiset within a batch, so the
files a write splits a batch into, and their order, do not matter.

Pure functions, except :func:`chain_head`, which reads a table's recent history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from groundlock.contracts.audit_rows import TableRow
from groundlock.stores.lthash import LtHash

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "CHAIN_KEY",
    "EMPTY",
    "Head",
    "Link",
    "Running",
    "batch_digest",
    "chain_head",
    "genesis",
    "link_digest",
    "link_of",
    "model_row_hash",
    "row_bytes",
    "row_hash",
    "rows_digest",
]

CHAIN_KEY = "groundlock.chain"
"""The ``commitInfo`` key a link is stored under."""
_FORMATS = (1, 2, 3)
_TAG = b"groundlock-chain-v1\x00"
_TAG_2 = b"groundlock-chain-v2\x00"
_TAG_3 = b"groundlock-chain-v3\x00"
_TAG_ROWS = b"groundlock-rows-v1\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Running:
    """A table's running row count and row-set hash after a commit (format 2)."""

    total: int
    """Rows the table has been given, the commit's included."""
    rowset: LtHash
    """The LtHash of those rows."""

    def plus(self, hashes: Sequence[bytes]) -> Running:
        """The running sum after a commit of rows with these hashes."""
        return Running(self.total + len(hashes), self.rowset + LtHash.of(hashes))


EMPTY = Running(0, LtHash())
"""Where a new table's running sum starts."""


@dataclass(frozen=True, slots=True)
class Link:
    """One commit's link in its table's chain, as recorded in the commit."""

    seq: int
    """Position in the table's chain, from 1: a gap is a link lost."""
    prev: str
    """The previous link's digest (hex), or the table's genesis."""
    digest: str
    """This commit's digest (hex), over ``prev`` and its rows."""
    rows: int
    """How many rows the commit added."""
    writer: str
    """The spool writer that committed it (for the operator; not part of the digest)."""
    running: Running | None = None
    """The table's running count and row set after it (format 2 on); None in format 1."""
    own: str | None = None
    """The digest of the commit's own rows, :func:`rows_digest` (format 3 on).

    With it the link's digest is recomputed from the link alone (:func:`link_digest`), so
    a link whose files a compaction and a vacuum removed cannot have its running sum
    rewritten unseen (in format 2 the digest needed the commit's rows to recompute)."""

    @property
    def version(self) -> int:
        """The link's format."""
        return 1 if self.running is None else 2 if self.own is None else 3

    def metadata(self) -> dict[str, Any]:
        """The ``custom_metadata`` entry that records this link in its commit."""
        entry: dict[str, Any] = {
            "v": self.version,
            "seq": self.seq,
            "prev": self.prev,
            "digest": self.digest,
            "rows": self.rows,
            "writer": self.writer,
        }
        if self.running is not None:
            entry["total"] = self.running.total
            entry["set"] = self.running.rowset.text()
        if self.own is not None:
            entry["own"] = self.own
        return {CHAIN_KEY: entry}


@dataclass(frozen=True, slots=True)
class Head:
    """Where a table's chain stands at a version: what the next link follows."""

    digest: str
    seq: int
    running: Running | None
    """The newest link's running sum; None when it is format 1 or there is no link."""


def genesis(table: str) -> str:
    """The ``prev`` of a table's first link: its name, so no link moves between tables."""
    return hashlib.sha256(_TAG + b"genesis\x00" + table.encode()).hexdigest()


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, tuple):
        return list(value)
    return value


def row_bytes(values: Mapping[str, object]) -> bytes:
    """A row's canonical bytes: its non-null columns as sorted-key JSON (ASCII).

    ``values`` as stored: a timestamp as integer microseconds (a ``datetime`` is converted),
    a list column as a list. Floats keep Python's shortest round-trip form; NaN and
    infinity, which a row model forbids but a forged file may hold, are written as JSON
    extensions rather than refused (the verifier must hash what it finds).
    """
    plain = {name: _plain(value) for name, value in values.items() if value is not None}
    return json.dumps(plain, sort_keys=True, separators=(",", ":")).encode()


def row_hash(values: Mapping[str, object]) -> bytes:
    """The sha256 of :func:`row_bytes`."""
    return hashlib.sha256(row_bytes(values)).digest()


def model_row_hash(row: TableRow) -> bytes:
    """:func:`row_hash` of a row model: its fields are exactly its table's columns."""
    return row_hash(row.__dict__)


def batch_digest(
    table: str, prev: str, hashes: Iterable[bytes], running: Running | None = None
) -> str:
    """A commit's digest: its table, the previous digest and its rows' hashes, as a multiset.

    With ``running`` (format 2), the table's running count and row set are bound too.
    """
    ordered = sorted(hashes)
    digest = hashlib.sha256(_TAG if running is None else _TAG_2)
    digest.update(table.encode() + b"\x00" + bytes.fromhex(prev))
    digest.update(len(ordered).to_bytes(8, "big"))
    for item in ordered:
        digest.update(item)
    if running is not None:
        digest.update(running.total.to_bytes(8, "big") + running.rowset.digest())
    return digest.hexdigest()


def rows_digest(hashes: Iterable[bytes]) -> str:
    """A commit's own rows as one digest (hex): their hashes as a multiset, counted."""
    ordered = sorted(hashes)
    digest = hashlib.sha256(_TAG_ROWS + len(ordered).to_bytes(8, "big"))
    for item in ordered:
        digest.update(item)
    return digest.hexdigest()


def link_digest(table: str, prev: str, rows: int, own: str, running: Running) -> str:
    """A format-3 link's digest, from the link's own fields alone (no row needed)."""
    digest = hashlib.sha256(_TAG_3)
    digest.update(table.encode() + b"\x00" + bytes.fromhex(prev))
    digest.update(rows.to_bytes(8, "big") + bytes.fromhex(own))
    digest.update(running.total.to_bytes(8, "big") + running.rowset.digest())
    return digest.hexdigest()


def link_of(commit_info: Mapping[str, Any]) -> Link | None:
    """The link a commit records, or None (no link, or one this version cannot read)."""
    raw = commit_info.get(CHAIN_KEY)
    if not isinstance(raw, Mapping) or raw.get("v") not in _FORMATS:
        return None
    try:
        running = own = None
        if raw["v"] >= 2:
            running = Running(int(raw["total"]), LtHash.from_text(str(raw["set"])))
        if raw["v"] >= 3:
            own = str(raw["own"])
            bytes.fromhex(own)  # (a ValueError, like any malformed field: no link)
        return Link(
            seq=int(raw["seq"]),
            prev=str(raw["prev"]),
            digest=str(raw["digest"]),
            rows=int(raw["rows"]),
            writer=str(raw.get("writer", "")),
            running=running,
            own=own,
        )
    except (KeyError, TypeError, ValueError):
        return None


def chain_head(table: DeltaTable, name: str) -> Head:
    """Where the chain stands at ``table``'s loaded version: its newest link.

    Reads the newest commits only, widening the look until a link is found: the commits
    between two of our appends are few (a compaction, a schema upgrade). A table with no
    link yet (new, or written before the chain) starts at its genesis, seq 0.
    """
    for limit in (8, 128, None):
        history = table.history(limit)
        for commit in history:  # newest first
            link = link_of(commit)
            if link is not None:
                return Head(link.digest, link.seq, link.running)
        if limit is None or len(history) < limit:
            break
    return Head(genesis(name), 0, None)
