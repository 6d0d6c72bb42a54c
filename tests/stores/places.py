"""Where a trail test keeps its trail, and how it tampers with it there.

Each place is real storage: a local folder, a bucket on the moto S3 server, or a container
on Azurite. A test tampers as anyone with write access to that storage could, object by
object (read, write, delete a key under the store's root), never through groundlock.
Another backend is one more class here and one more entry in ``PLACES``
(``tests/stores/conftest.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from groundlock.stores import DeltaAuditStore
from tests.fakes.azurite import AzuriteServer
from tests.fakes.s3 import ACCESS_KEY, SECRET_KEY, S3Server


class Place(Protocol):
    """A trail's storage: its location, delta-rs's options for it, and raw access to keys."""

    root: str
    """The store's location as ``DeltaAuditStore`` takes it (a path or a URI)."""
    options: dict[str, str]
    """delta-rs storage options for ``root`` (empty on the local filesystem)."""

    def store(self, **settings: Any) -> DeltaAuditStore:
        """A store on this place (flushes only when told to, unless ``settings`` say)."""
        ...

    def read(self, key: str) -> bytes:
        """The bytes at ``key`` (a path relative to ``root``)."""
        ...

    def write(self, key: str, data: bytes) -> None:
        """Put ``data`` at ``key``, replacing what is there."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``."""
        ...


@dataclass
class LocalPlace:
    """A trail in a local folder, tampered with through the filesystem."""

    base: Path
    options: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> str:
        return str(self.base)

    def store(self, **settings: Any) -> DeltaAuditStore:
        return DeltaAuditStore(self.base, **{"flush_interval_seconds": 30, **settings})

    def read(self, key: str) -> bytes:
        return (self.base / key).read_bytes()

    def write(self, key: str, data: bytes) -> None:
        (self.base / key).write_bytes(data)

    def delete(self, key: str) -> None:
        (self.base / key).unlink()


class _ObjectPlace:
    """What a bucket and a container have in common: the store's root under a scheme, the
    server's storage options, and a store that spools to a local folder."""

    scheme: str
    server: S3Server | AzuriteServer
    spool_dir: Path
    prefix: str

    @property
    def _where(self) -> str:
        raise NotImplementedError

    @property
    def root(self) -> str:
        return f"{self.scheme}://{self._where}/{self.prefix}"

    @property
    def options(self) -> dict[str, str]:
        return self.server.storage_options()

    def store(self, **settings: Any) -> DeltaAuditStore:
        return DeltaAuditStore(
            self.root, self.options,
            **{"spool_dir": self.spool_dir, "flush_interval_seconds": 30, **settings},
        )  # fmt: skip


@dataclass
class S3Place(_ObjectPlace):
    """A trail in a fresh bucket on the moto S3 server, tampered with through boto3."""

    server: S3Server
    bucket: str
    spool_dir: Path
    prefix: str = "audit"
    scheme = "s3"

    @property
    def _where(self) -> str:
        return self.bucket

    def read(self, key: str) -> bytes:
        body = self._client().get_object(Bucket=self.bucket, Key=f"{self.prefix}/{key}")["Body"]
        return bytes(body.read())

    def write(self, key: str, data: bytes) -> None:
        self._client().put_object(Bucket=self.bucket, Key=f"{self.prefix}/{key}", Body=data)

    def delete(self, key: str) -> None:
        self._client().delete_object(Bucket=self.bucket, Key=f"{self.prefix}/{key}")

    def _client(self) -> Any:
        import boto3  # noqa: PLC0415  (test-only dependency, loaded by the tests that use it)

        return boto3.client(
            "s3", endpoint_url=self.server.endpoint, region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        )  # fmt: skip


@dataclass
class AzurePlace(_ObjectPlace):
    """A trail in a fresh container on Azurite, tampered with through the Blob REST API."""

    server: AzuriteServer
    container: str
    spool_dir: Path
    prefix: str = "audit"
    scheme = "az"

    @property
    def _where(self) -> str:
        return self.container

    def read(self, key: str) -> bytes:
        return self.server.read_blob(self.container, f"{self.prefix}/{key}")

    def write(self, key: str, data: bytes) -> None:
        self.server.write_blob(self.container, f"{self.prefix}/{key}", data)

    def delete(self, key: str) -> None:
        self.server.delete_blob(f"az://{self.container}/{self.prefix}/{key}")
