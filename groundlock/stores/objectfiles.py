"""The files of one Delta table, read by path relative to its root: a local folder or any store.

``records verify`` reads a table's ``_delta_log`` JSON and data files as bytes, which the
``DeltaTable`` API does not offer. On the local filesystem that is plain file IO; on an
object store (``s3://``, ``az://``, ``abfss://``, any URI delta-rs opens) it goes through
delta-rs's own object store, so the URI, the storage options and the ``AWS_*`` / ``AZURE_*``
environment mean exactly what they mean to the store that wrote the table.

delta-rs exposes that object store as ``deltalake.fs.DeltaStorageHandler``, a pyarrow
filesystem handler that imports pyarrow, which groundlock does not depend on. So the class
beneath it, ``deltalake._internal.DeltaFileSystemHandler``, is used here and only here:
its constructor (``table_uri``, ``options``), ``open_input_file(path)`` returning an object
with ``size()`` and ``read(nbytes)``, and ``FileNotFoundError`` for a missing object. Its
listing methods build pyarrow objects, so the log is probed version by version instead
(:mod:`groundlock.stores.deltalog`). ``tests/stores/test_objectfiles.py`` pins that shape, so
a deltalake release that changes it fails one named test instead of every remote verify.

A store error other than a missing object (credentials, a missing bucket, an unreachable
endpoint) is raised as :class:`~groundlock.stores.sink.AuditUnavailable` naming the table
and the cause in fixed words (:mod:`~groundlock.stores.causes`), never the URI or a
credential, which delta-rs's messages quote.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from groundlock.stores.causes import store_error_cause
from groundlock.stores.location import is_local
from groundlock.stores.sink import AuditUnavailable

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

__all__ = ["LocalFiles", "ObjectStoreFiles", "TableFiles", "table_files"]

_CHUNK = 8 * 1024 * 1024
"""Bytes per ranged read when a data file is copied to local disk: memory stays bounded
however large the file."""


class TableFiles(Protocol):
    """A Delta table's files, each named by its path relative to the table's root (decoded)."""

    def read(self, relative: str) -> bytes:
        """The whole file (a log commit: small); ``FileNotFoundError`` when there is none."""
        ...

    def size(self, relative: str) -> int | None:
        """The file's size in bytes, or None when there is no such file."""
        ...

    def local_copy(self, relative: str) -> AbstractContextManager[Path]:
        """The file as a local path for the time of the ``with`` block.

        A local table's file is its own path; an object is copied to a temporary file,
        removed afterwards. ``FileNotFoundError`` when there is no such file.
        """
        ...

    def log_versions(self) -> list[int] | None:
        """Every commit version in ``_delta_log``, when the store can list it; else None."""
        ...


class LocalFiles:
    """A table in a local folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, relative: str) -> bytes:
        """The file's bytes (``FileNotFoundError`` when it is not a file)."""
        return (self.root / relative).read_bytes()

    def size(self, relative: str) -> int | None:
        """The file's size, or None when it is not a file."""
        path = self.root / relative
        return path.stat().st_size if path.is_file() else None

    @contextlib.contextmanager
    def local_copy(self, relative: str) -> Iterator[Path]:
        """The file's own path: nothing to copy."""
        path = self.root / relative
        if not path.is_file():
            raise FileNotFoundError(relative)
        yield path

    def log_versions(self) -> list[int] | None:
        """The versions of the ``_delta_log/*.json`` files (listing a folder is cheap)."""
        log = self.root / "_delta_log"
        if not log.is_dir():
            return []
        return sorted(int(path.stem) for path in log.glob("*.json") if path.stem.isdigit())


class ObjectStoreFiles:
    """A table on an object store, read through delta-rs's object store for its URI."""

    def __init__(self, uri: str, storage_options: Mapping[str, str], *, label: str) -> None:
        from deltalake._internal import DeltaFileSystemHandler  # noqa: PLC0415  (see module doc)

        self.label = label
        """The table's name, for messages (never the URI)."""
        self._handler = DeltaFileSystemHandler(table_uri=uri, options=dict(storage_options) or None)

    def read(self, relative: str) -> bytes:
        """The object's bytes, in one request."""
        with self._errors_named():
            source = self._handler.open_input_file(relative)
            return bytes(source.read(int(source.size())))

    def size(self, relative: str) -> int | None:
        """The object's size (a HEAD request), or None when there is no such object."""
        try:
            with self._errors_named():
                return int(self._handler.open_input_file(relative).size())
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def local_copy(self, relative: str) -> Iterator[Path]:
        """The object copied to a temporary file in ranged reads, removed after the block."""
        with self._errors_named():
            source = self._handler.open_input_file(relative)
            remaining = int(source.size())
        descriptor, name = tempfile.mkstemp(prefix="groundlock-verify-", suffix=".parquet")
        path = Path(name)
        try:
            with os.fdopen(descriptor, "wb") as target:
                while remaining > 0:
                    with self._errors_named():
                        chunk = bytes(source.read(min(_CHUNK, remaining)))
                    if not chunk:
                        break  # the object shrank under us: the reader sees what arrived
                    target.write(chunk)
                    remaining -= len(chunk)
            yield path
        finally:
            path.unlink(missing_ok=True)

    def log_versions(self) -> list[int] | None:
        """None: delta-rs lists an object store only through pyarrow, so the log is probed."""
        return None

    @contextlib.contextmanager
    def _errors_named(self) -> Iterator[None]:
        """A missing object stays ``FileNotFoundError``; any other store error is named."""
        try:
            yield
        except FileNotFoundError:
            raise FileNotFoundError("no such object") from None
        except OSError as exc:
            raise AuditUnavailable(
                f"the {self.label} table's files cannot be read "
                f"({type(exc).__name__}: {store_error_cause(exc)})"
            ) from None


def table_files(
    location: str | os.PathLike[str], storage_options: Mapping[str, str] | None, *, label: str
) -> TableFiles:
    """The files of the table at ``location`` (a local path or ``file://`` URL, or a URI)."""
    text = os.fspath(location)
    if is_local(text):
        return LocalFiles(Path(text.removeprefix("file://")))
    return ObjectStoreFiles(text, storage_options or {}, label=label)
