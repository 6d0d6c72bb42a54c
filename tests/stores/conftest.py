"""The object-store fixtures: one moto S3 server per session, a fresh bucket per test.

``place`` runs a test once per storage a trail can live on (:mod:`tests.stores.places`):
the local filesystem, and S3 (marked ``objectstore``). Another backend is one more entry
in ``PLACES``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.s3 import S3Server, moto_s3
from tests.stores.places import LocalPlace, Place, S3Place


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


@pytest.fixture
def s3(s3_server: S3Server) -> tuple[S3Server, str]:
    """The server and a new, empty bucket on it."""
    return s3_server, s3_server.new_bucket()


def _s3_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    server: S3Server = request.getfixturevalue("s3_server")
    return S3Place(server, server.new_bucket(), tmp_path / "spool")


PLACES: dict[str, Callable[[pytest.FixtureRequest, Path], Place]] = {
    "local": lambda _request, tmp_path: LocalPlace(tmp_path / "audit"),
    "s3": _s3_place,
}
"""How to make each place a trail can live on, by the name its tests are run under."""


@pytest.fixture(
    params=["local", pytest.param("s3", marks=pytest.mark.objectstore)],
)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """An empty place for a trail: each test runs on every backend."""
    return PLACES[request.param](request, tmp_path)


OBJECT_STORES = [pytest.param("s3", marks=pytest.mark.objectstore)]
"""The places on an object store, by their ``PLACES`` name: the many-writer tests
(tests/stores/test_many_writers.py) run on each. Azurite joins with one more param."""


@pytest.fixture(params=OBJECT_STORES)
def object_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """An empty place for a trail on each object store in turn."""
    return PLACES[request.param](request, tmp_path)
