"""The object-store fixtures: one moto S3 server and one Azurite per session, started when a
test first needs it, and a fresh bucket or container per test.

Two fixtures run a test once per storage a trail can live on, the local filesystem, S3 and
Azure (the object stores marked ``objectstore``): ``place`` (:mod:`tests.stores.places`),
for the tests that tamper with a trail object by object, and ``location``
(:mod:`tests.stores.backends`), a trail root with a cleanup, for the tests of the store's
behaviour; ``object_place``, the object stores alone, for the many-writer tests. Another
backend is one more entry in ``PLACES`` and ``BACKENDS``.

Azurite's tests skip where it is not installed (``npm ci --prefix tests/azurite``), unless
``GROUNDLOCK_REQUIRE_AZURITE=1`` (``.ci/run`` sets it): then a missing Azurite fails them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.azurite import AzuriteServer, azurite, azurite_missing
from tests.fakes.s3 import S3Server, moto_s3
from tests.stores.backends import BACKENDS, Location, open_location
from tests.stores.places import AzurePlace, LocalPlace, Place, S3Place


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    with moto_s3() as server:
        yield server


@pytest.fixture
def s3(s3_server: S3Server) -> tuple[S3Server, str]:
    """The server and a new, empty bucket on it."""
    return s3_server, s3_server.new_bucket()


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteServer]:
    missing = azurite_missing()
    if missing:
        if os.environ.get("GROUNDLOCK_REQUIRE_AZURITE") == "1":
            pytest.fail(f"GROUNDLOCK_REQUIRE_AZURITE=1 but {missing}")
        pytest.skip(missing)
    with azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture
def azure(azurite_server: AzuriteServer) -> Iterator[tuple[AzuriteServer, str]]:
    """The emulator and a new, empty container on it (deleted after the test)."""
    container = azurite_server.new_container()
    yield azurite_server, container
    azurite_server.delete_container(container)


def _s3_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    server: S3Server = request.getfixturevalue("s3_server")
    return S3Place(server, server.new_bucket(), tmp_path / "spool")


def _azure_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    server: AzuriteServer = request.getfixturevalue("azurite_server")
    return AzurePlace(server, server.new_container(), tmp_path / "spool")


PLACES: dict[str, Callable[[pytest.FixtureRequest, Path], Place]] = {
    "local": lambda _request, tmp_path: LocalPlace(tmp_path / "audit"),
    "s3": _s3_place,
    "azure": _azure_place,
}
"""How to make each place a trail can live on, by the name its tests are run under."""


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """An empty place for a trail: each test runs on every backend."""
    return PLACES[request.param](request, tmp_path)


OBJECT_STORES = [param for param in BACKENDS if param.values[0] != "local"]
"""The places on an object store, by their ``PLACES`` name (S3 and Azure): the many-writer
tests (tests/stores/test_many_writers.py) run on each."""


@pytest.fixture(params=OBJECT_STORES)
def object_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """An empty place for a trail on each object store in turn."""
    return PLACES[request.param](request, tmp_path)


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Location]:
    """A fresh trail root on each backend in turn: local, s3, azure."""
    with open_location(request.param, request, tmp_path / request.param) as opened:
        yield opened
