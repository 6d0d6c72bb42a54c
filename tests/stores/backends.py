"""Where a test's trail lives: a local directory, a bucket on moto's S3, or Azurite's Blob.

The tests about the trail's behaviour (recording, dedup, recovery, upgrades, reading a
damaged trail) run on each backend through :func:`open_location`, so a store that behaves
on local disk but not on an object store cannot pass. A :class:`Location` is what a test
needs of a backend: the root URI and delta-rs's storage options, a cleanup, and the two
ways the damage tests reach past delta-rs (a spool directory of the test's own, the
deletion of one data file). The servers are the session's (``s3_server``,
``azurite_server`` in ``tests/stores/conftest.py``), started only when a test asks for
their backend; each location is a fresh bucket or container.

To run another test module on every backend, take the ``location`` fixture, or
parametrize a fixture of your own scope with :data:`BACKENDS` and open the location with
:func:`open_location`; ``s3`` and ``azure`` carry the ``objectstore`` marker.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groundlock.stores import DeltaAuditStore

BACKENDS = [
    pytest.param("local"),
    pytest.param("s3", marks=pytest.mark.objectstore),
    pytest.param("azure", marks=pytest.mark.objectstore),
]
"""Fixture params: the backends, the object stores marked as the marker says."""


@dataclass(frozen=True)
class Location:
    """One test's trail root on one backend."""

    backend: str
    """``local``, ``s3`` or ``azure``."""
    uri: str
    """The trail's root: a local path, ``s3://bucket/trail`` or ``az://container/trail``."""
    storage_options: dict[str, str] = field(repr=False)
    """What delta-rs needs to open ``uri`` (empty for a local path)."""
    cleanup: Callable[[], None] = field(repr=False)
    """Remove everything under the location (the fixture calls it at teardown)."""
    scratch: Path = field(repr=False)
    """A local directory of the test's own, for spools."""
    delete_file: Callable[[str], None] = field(repr=False)
    """Delete one file by the URI ``DeltaTable.file_uris`` gives it (damage tests)."""
    stores: list[DeltaAuditStore] = field(default_factory=list, repr=False)
    """The stores :meth:`store` made, closed before the location is removed."""

    def store(self, **kwargs: Any) -> DeltaAuditStore:
        """A store on this location; its spool in ``scratch`` unless the location is local.

        A local store keeps its default spool (``<root>/_spool``), as a local trail does.
        Closed when the location is: a store left open would flush at interpreter exit,
        to a server gone by then, and wait out delta-rs's retries.
        """
        if self.backend != "local":
            kwargs.setdefault("spool_dir", self.scratch / "spool")
        store = DeltaAuditStore(self.uri, self.storage_options, **kwargs)
        self.stores.append(store)
        return store

    def table(self, name: str) -> str:
        """The URI of one table under the root."""
        return f"{self.uri}/{name}"

    @property
    def name_in_logs(self) -> str:
        """What no log line or message may show: the local path, the bucket or container."""
        return self.uri if self.backend == "local" else self.uri.split("/")[2]


@contextmanager
def open_location(
    backend: str, request: pytest.FixtureRequest, scratch: Path
) -> Iterator[Location]:
    """A fresh location on ``backend``; cleaned up on exit."""
    scratch.mkdir(parents=True, exist_ok=True)
    if backend == "local":
        root = scratch / "trail"
        location = Location(
            backend, str(root), {}, lambda: shutil.rmtree(root, ignore_errors=True), scratch,
            lambda uri: Path(uri.removeprefix("file://")).unlink(),
        )  # fmt: skip
    elif backend == "s3":
        s3 = request.getfixturevalue("s3_server")
        bucket = s3.new_bucket()
        location = Location(
            backend, f"s3://{bucket}/trail", s3.storage_options(),
            lambda: s3.delete_bucket(bucket), scratch, s3.delete_object,
        )  # fmt: skip
    elif backend == "azure":
        azure = request.getfixturevalue("azurite_server")
        container = azure.new_container()
        location = Location(
            backend, f"az://{container}/trail", azure.storage_options(),
            lambda: azure.delete_container(container), scratch, azure.delete_blob,
        )  # fmt: skip
    else:
        raise ValueError(f"no such backend: {backend}")
    try:
        yield location
    finally:
        for store in location.stores:
            store.close()
        location.cleanup()
