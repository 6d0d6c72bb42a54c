"""One audit trail on an object store, as the many-writer tests need it, whatever the store.

A backend fixture (``object_trail`` in ``tests/stores/conftest.py``) gives a URI, the
storage options delta-rs opens it with, and a way to copy the trail's files to a local
directory: :func:`groundlock.stores.verify.verify_table` reads local tables only, so the
hash chain is recomputed on that copy, from the very files the writers committed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from groundlock.stores import DeltaAuditStore
from groundlock.stores.verify import CHAINED_TABLES, TableReport, verify_table


@dataclass(frozen=True)
class ObjectTrail:
    """Where a trail on an object store lives, and how a process or a verifier reaches it."""

    backend: str
    uri: str
    storage_options: dict[str, str]
    copy_to: Callable[[Path], int]
    """Copies the trail's objects to a local directory (tables at its top); returns how many."""

    def environment(self, spool_dir: Path) -> dict[str, str]:
        """A writer process's environment: the store's settings and its own local spool.

        delta-rs reads the same option names from the environment as from
        ``storage_options``, which is how ``groundlock serve`` is configured.
        """
        return {**os.environ, **self.storage_options, "GROUNDLOCK_SPOOL_DIR": str(spool_dir)}

    def store(self, spool_base: Path) -> DeltaAuditStore:
        """A store on this trail in the test process, spooling where a writer process run
        with :meth:`environment` of ``spool_base`` does (so its ``recover`` adopts theirs)."""
        with mock.patch.dict(os.environ, {"GROUNDLOCK_SPOOL_DIR": str(spool_base)}):
            return DeltaAuditStore(self.uri, self.storage_options)

    def verify(self, scratch: Path) -> dict[str, TableReport]:
        """Each chained table's verification, recomputed on a local copy made under ``scratch``."""
        copy = scratch / "trail-copy"
        assert self.copy_to(copy) > 0, "nothing to copy: the trail is empty"
        return {name: verify_table(copy / name, name) for name in CHAINED_TABLES}
