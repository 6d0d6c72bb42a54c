"""The audit spool: where a request's rows become durable before any Delta commit.

A Delta commit per request would put a log write, a parquet file and an object-store round
trip on every answer's path, and leave a table of tiny files. Instead each process appends
its rows to a local, append-only spool file and fsyncs it; a background flusher later
commits whole spool segments to Delta (see :mod:`groundlock.stores.delta`).

Layout: one *writer* per process, named by a random id, owns ``<id>.lock`` (held with
``flock`` for the process's life) and its segments ``<id>.<seq>.spool``. A segment is
closed when the flusher rotates it; only closed segments are committed, in ``seq`` order,
and deleted once committed. A writer whose lock can be taken is dead (the kernel releases
``flock`` when a process dies, SIGKILL included): any process may adopt its segments.

Each line is ``<crc32 hex> <json>`` and a newline. A request returns only after its line is
written and fsynced, so a line cut short by a crash belongs to a request that never
returned: readers skip it (and any other line whose checksum fails) and count it.

Concurrent requests share fsyncs (group commit): whoever finds no write in progress writes
every pending line with one ``write`` and one ``fsync``, and wakes the others.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import threading
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Segment", "SpoolError", "SpoolWriter", "abandoned_writers", "read_segment"]

logger = logging.getLogger("groundlock.audit")

_SEGMENT_RE = re.compile(r"(?P<writer>[0-9a-f]{32})\.(?P<seq>[0-9]{12})\.spool")


class SpoolError(OSError):
    """A line could not be made durable; the request that wrote it must fail closed."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One closed spool file of one writer."""

    writer_id: str
    seq: int
    path: Path


def _segment_path(directory: Path, writer_id: str, seq: int) -> Path:
    return directory / f"{writer_id}.{seq:012d}.spool"


def segments_of(directory: Path, writer_id: str) -> list[Segment]:
    """The writer's segments on disk, in ``seq`` order."""
    found = []
    for path in directory.glob(f"{writer_id}.*.spool"):
        match = _SEGMENT_RE.fullmatch(path.name)
        if match:
            found.append(Segment(writer_id, int(match["seq"]), path))
    return sorted(found, key=lambda segment: segment.seq)


def encode_line(payload: str) -> bytes:
    """One spool line: the payload's CRC-32, a space, the payload, a newline."""
    data = payload.encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(data), data)


def read_segment(path: Path) -> tuple[list[str], int]:
    """The intact payloads of a segment, and how many lines were torn or corrupt."""
    payloads: list[str] = []
    bad = 0
    with path.open("rb") as handle:
        for line in handle:
            crc, _, data = line.rstrip(b"\n").partition(b" ")
            if not line.endswith(b"\n") or len(crc) != 8 or b"%08x" % zlib.crc32(data) != crc:
                bad += 1
                continue
            payloads.append(data.decode("utf-8"))
    return payloads, bad


class SpoolWriter:
    """This process's spool: durable appends, group-committed, and segment rotation."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.writer_id = uuid.uuid4().hex
        self._lock_fd = _new_lock(directory, self.writer_id)
        self._cond = threading.Condition()
        self._seq = 0
        self._fd: int | None = None
        """The open segment, created by its first write (a process that never records
        leaves no file)."""
        self._lines_in_segment = 0
        self._size = 0
        """Bytes durably written to the open segment."""
        self._pending: list[tuple[bytes, object]] = []
        self._items: dict[int, list[object]] = {}
        """What each line stands for, per segment, for lines written by this process: the
        flusher commits these instead of parsing its own files again."""
        self._next_ticket = 1
        self._durable = 0
        """Every ticket up to this one is on disk (or failed: see ``_failed``)."""
        self._failed: list[tuple[int, int]] = []
        """Ticket ranges whose write or fsync failed (rare; kept for the writer's life, since
        a waiter may look its ticket up long after the failure)."""
        self._writing = False
        self.closed = False

    def _open(self, seq: int) -> int:
        path = _segment_path(self.directory, self.writer_id, seq)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        # The open segment is locked while it is written: even if this writer's lock file
        # were deleted, a recovery could not take the segment it is still appending to.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _fsync_directory(self.directory)  # the new file's name is durable too
        return fd

    @property
    def pending_lines(self) -> int:
        """Lines in the open segment: what the next rotation will hand the flusher."""
        return self._lines_in_segment

    def append(self, line: bytes, item: object = None) -> None:
        """Write ``line`` and return once it is fsynced; raise :class:`SpoolError` if not.

        ``item`` (what the line encodes) is kept with the segment the line lands in, for
        :meth:`items`.
        """
        with self._cond:
            if self.closed:
                raise SpoolError("the spool writer is closed")
            ticket = self._next_ticket
            self._next_ticket += 1
            self._pending.append((line, item))
            while self._durable < ticket:
                if self.closed:
                    raise SpoolError("the audit spool is not writable")
                if self._writing:
                    self._cond.wait()
                    continue
                self._write_pending()
            if any(first <= ticket <= last for first, last in self._failed):
                raise SpoolError("the audit spool could not be written")

    def _write_pending(self) -> None:
        # Called with the condition held; releases it around the I/O.
        batch, self._pending = self._pending, []
        last = self._next_ticket - 1
        first = last - len(batch) + 1
        seq = self._seq  # rotation waits for this write: the batch lands in this segment
        error: BaseException | None = None
        data = b""
        released = False
        self._writing = True
        try:
            self._cond.release()
            released = True
            data = b"".join(line for line, _ in batch)
            if self._fd is None:
                self._fd = self._open(self._seq)
                self._size = 0
            _write_all(self._fd, data)
            os.fsync(self._fd)
        except BaseException as exc:  # noqa: BLE001  (settled below, then re-raised if not I/O)
            error = exc
            if self._fd is not None:
                # Those requests fail closed: their lines must not be committed later by a
                # recovery that reads this file, so they are cut off again (best effort).
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
        else:
            self._size += len(data)
        finally:
            if released:
                self._cond.acquire()
            self._writing = False
        if error is not None:
            self._failed.append((first, last))
            logger.error("audit spool write failed (%s)", type(error).__name__)
            # Had the cut failed, the file could end in a partial line that would swallow
            # the next one: later lines go to a new segment either way.
            self._lines_in_segment += 1
            self._next_segment()
        else:
            self._lines_in_segment += len(batch)
            self._items.setdefault(seq, []).extend(item for _, item in batch)
        self._durable = last
        self._cond.notify_all()
        if error is not None and not isinstance(error, OSError):
            raise error  # the batch is settled as failed; an interrupt still propagates

    def items(self, seq: int) -> list[object] | None:
        """The items of segment ``seq`` written by this writer (None if it wrote none)."""
        with self._cond:
            return self._items.get(seq)

    def forget(self, seq: int) -> None:
        """Drop segment ``seq``'s items once it is committed."""
        with self._cond:
            self._items.pop(seq, None)

    @property
    def current_seq(self) -> int:
        """The open segment's number: every segment below it is closed."""
        return self._seq

    def rotate(self) -> bool:
        """Close the open segment if it holds anything and start the next; whether it did."""
        with self._cond:
            while self._writing:
                self._cond.wait()
            if self.closed or self._lines_in_segment == 0:
                return False
            self._next_segment()
            return True

    def _next_segment(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self._seq += 1
        self._lines_in_segment = 0

    def close(self) -> None:
        """Close the open segment's file; it stays on disk for the flusher or a recovery."""
        with self._cond:
            while self._writing:
                self._cond.wait()
            if self.closed:
                return
            self.closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def release(self) -> None:
        """Drop the writer's lock and lock file; segments left become adoptable. Idempotent."""
        self.close()
        with self._cond:
            fd, self._lock_fd = self._lock_fd, -1
        if fd < 0:
            return
        with contextlib.suppress(OSError):
            (self.directory / f"{self.writer_id}.lock").unlink()
        _release_lock(fd)

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's segment descriptor without touching files.

        Its lock descriptor is closed by this module's own after-fork hook, with every other
        lock descriptor the parent held.
        """
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self._lock_fd = -1
        self.closed = True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_LOCK_FDS: set[int] = set()
"""Every lock descriptor this process holds: a forked child must not keep them open, or a
dead writer would look alive for as long as the child lives."""
_LOCK_FDS_GUARD = threading.Lock()


def _close_inherited_locks() -> None:
    global _LOCK_FDS_GUARD  # noqa: PLW0603  (a lock held at fork time is unusable in the child)
    _LOCK_FDS_GUARD = threading.Lock()
    for fd in list(_LOCK_FDS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCK_FDS.clear()


os.register_at_fork(after_in_child=_close_inherited_locks)


def _release_lock(fd: int) -> None:
    with _LOCK_FDS_GUARD:
        _LOCK_FDS.discard(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


def _hold_lock(path: Path, *, create: bool = True) -> int | None:
    """An fd holding an exclusive ``flock`` on ``path``, or None if it is not ours to hold.

    None when another process holds it, or when the file was replaced while we locked it.
    """
    flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    with _LOCK_FDS_GUARD:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            return None
        _LOCK_FDS.add(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != os.stat(path).st_ino:
            _release_lock(fd)
            return None
    except (BlockingIOError, FileNotFoundError):
        _release_lock(fd)
        return None
    except BaseException:
        _release_lock(fd)
        raise
    return fd


def _new_lock(directory: Path, writer_id: str) -> int:
    """A new writer's lock, locked *before* its name appears.

    A recovery listing the directory can then never take a live writer's fresh, still
    unlocked, lock file for a dead writer's.
    """
    hidden = directory / f"{writer_id}.locking"
    with _LOCK_FDS_GUARD:
        fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        _LOCK_FDS.add(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(hidden, directory / f"{writer_id}.lock")
    except BaseException:
        _release_lock(fd)
        with contextlib.suppress(OSError):
            hidden.unlink()
        raise
    return fd


@contextlib.contextmanager
def adopted(directory: Path, writer_id: str) -> Iterator[list[Segment] | None]:
    """Hold a dead writer's lock while its segments are committed; None if it is alive.

    On a clean exit from the block the lock file is removed: the writer is gone for good.
    """
    lock_path = directory / f"{writer_id}.lock"
    fd = _hold_lock(lock_path)
    if fd is None:
        yield None
        return
    held: list[int] = []
    try:
        # Only the segments nobody is writing, and only up to the first one somebody is
        # (commits record the highest segment number: a later one must not go first).
        segments = []
        for segment in segments_of(directory, writer_id):
            segment_fd = _hold_lock(segment.path, create=False)
            if segment_fd is None:
                break
            held.append(segment_fd)
            segments.append(segment)
        yield segments
        if not segments_of(directory, writer_id):
            with contextlib.suppress(OSError):
                lock_path.unlink()
    finally:
        for segment_fd in held:
            _release_lock(segment_fd)
        _release_lock(fd)


def abandoned_writers(directory: Path, exclude: str) -> list[str]:
    """Writer ids with segments or a lock file in ``directory``, other than ``exclude``."""
    if not directory.is_dir():
        return []
    ids = set()
    for path in directory.iterdir():
        writer_id = path.name.split(".", 1)[0]
        if writer_id != exclude and len(writer_id) == 32 and path.suffix in {".spool", ".lock"}:
            ids.add(writer_id)
    return sorted(ids)
