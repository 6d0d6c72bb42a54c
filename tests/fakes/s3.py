"""A real S3-protocol server for the object-store tests: moto's server, in a child process.

The server runs in its own interpreter (:mod:`tests.fakes.s3_server`): delta-rs keeps the
GIL while it waits on a request, so moto's server thread inside the test process would
never answer, and every call would end in a timeout (what an in-process server shows).
Each test gets its own bucket, so tests share the server and nothing else.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent.parent

ACCESS_KEY = "AKIDS3FAKE0000CANARY"
SECRET_KEY = "s3-fake-secret-canary-0000"  # noqa: S105  (a dummy moto accepts)
"""Dummy credentials (moto accepts any): canaries that no log line or message may hold."""


@dataclass(frozen=True)
class S3Server:
    """Where the server listens, and how to give delta-rs a bucket on it."""

    endpoint: str

    def storage_options(self, **extra: str) -> dict[str, str]:
        """delta-rs storage options for this server (plain http on loopback)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            **extra,
        }

    def new_bucket(self) -> str:
        """Create a bucket with a fresh name and return the name."""
        name = f"trail-{uuid.uuid4().hex[:12]}"
        self._client().create_bucket(Bucket=name)
        return name

    def delete_bucket(self, name: str) -> None:
        """Delete a bucket and every object in it."""
        client = self._client()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                client.delete_objects(Bucket=name, Delete={"Objects": keys})
        client.delete_bucket(Bucket=name)

    def delete_object(self, uri: str) -> None:
        """Delete the object ``s3://bucket/key`` (as ``DeltaTable.file_uris`` names it)."""
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        self._client().delete_object(Bucket=bucket, Key=key)

    def _client(self) -> Any:
        import boto3  # noqa: PLC0415  (test-only dependency, loaded by the tests that use it)

        return boto3.client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        )  # fmt: skip


@contextmanager
def moto_s3() -> Iterator[S3Server]:
    """Start moto's S3 server on a free loopback port; stop it on exit."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.s3_server"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        address = process.stdout.readline().strip()
        if not address:
            raise RuntimeError("moto's S3 server did not start (is moto[server] installed?)")
        yield S3Server(endpoint=f"http://{address}")
    finally:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.close()  # the server's signal to stop
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
