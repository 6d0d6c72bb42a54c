"""The object-store fixtures: one moto S3 server per session, a fresh bucket per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.s3 import S3Server, moto_s3


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


@pytest.fixture
def s3(s3_server: S3Server) -> tuple[S3Server, str]:
    """The server and a new, empty bucket on it."""
    return s3_server, s3_server.new_bucket()
