"""The audit trail's hash chain: each committed batch of rows bound to the one before it.

A table's chain is a log over its own Delta versions, as Certificate Transparency's logs
and QLDB's journal are a log over their entries: every commit the store makes to an audit
table carries, in its ``commitInfo`` (delta-rs ``custom_metadata``), a *link*::

    {"groundlock.chain": {"v": 1, "seq": 7, "prev": <hex>, "digest": <hex>,
                          "rows": 5000, "writer": <spool writer id>}}

where ``digest = sha256(tag, table, prev, rows, sorted row hashes)`` and a row's hash is
the sha256 of its :func:`row_bytes`. ``seq`` counts the table's links from 1; the first
link's ``prev`` is :func:`genesis` of the table.

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from groundlock.contracts.audit_rows import TableRow

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "CHAIN_KEY",
    "Link",
    "batch_digest",
    "chain_head",
    "genesis",
    "link_of",
    "model_row_hash",
    "row_bytes",
    "row_hash",
]

CHAIN_KEY = "groundlock.chain"
"""The ``commitInfo`` key a link is stored under."""
_FORMAT = 1
_TAG = b"groundlock-chain-v1\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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

    def metadata(self) -> dict[str, Any]:
        """The ``custom_metadata`` entry that records this link in its commit."""
        return {
            CHAIN_KEY: {
                "v": _FORMAT,
                "seq": self.seq,
                "prev": self.prev,
                "digest": self.digest,
                "rows": self.rows,
                "writer": self.writer,
            }
        }


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


def batch_digest(table: str, prev: str, hashes: Iterable[bytes]) -> str:
    """A commit's digest: its table, the previous digest and its rows' hashes, as a multiset."""
    ordered = sorted(hashes)
    digest = hashlib.sha256(_TAG)
    digest.update(table.encode() + b"\x00" + bytes.fromhex(prev))
    digest.update(len(ordered).to_bytes(8, "big"))
    for item in ordered:
        digest.update(item)
    return digest.hexdigest()


def link_of(commit_info: Mapping[str, Any]) -> Link | None:
    """The link a commit records, or None (no link, or one this version cannot read)."""
    raw = commit_info.get(CHAIN_KEY)
    if not isinstance(raw, Mapping) or raw.get("v") != _FORMAT:
        return None
    try:
        return Link(
            seq=int(raw["seq"]),
            prev=str(raw["prev"]),
            digest=str(raw["digest"]),
            rows=int(raw["rows"]),
            writer=str(raw.get("writer", "")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def chain_head(table: DeltaTable, name: str) -> tuple[str, int]:
    """The digest and seq of the newest link at ``table``'s loaded version.

    Reads the newest commits only, widening the look until a link is found: the commits
    between two of our appends are few (a compaction, a schema upgrade). A table with no
    link yet (new, or written before the chain) starts at its genesis, seq 0.
    """
    for limit in (8, 128, None):
        history = table.history(limit)
        for commit in history:  # newest first
            link = link_of(commit)
            if link is not None:
                return link.digest, link.seq
        if limit is None or len(history) < limit:
            break
    return genesis(name), 0
