"""Markers the fast subset of the suite leaves out (README, "Run the tests").

``-m "not spark and not browser and not slow and not objectstore"`` is the edit-test loop;
CI runs everything.
A test that takes the ``spark``, ``browser``, ``s3`` or ``azure`` fixture is marked here
(the last two as ``objectstore``; a test on the ``location`` fixture's object stores is
marked by its params), so a new one cannot forget its marker and slip a JVM, a browser or
an object-store server into the fast subset (each server starts in a second, but the trail
tests run on S3 and Azure add a minute or more to the loop).
``slow`` is set by hand on the tests that take 1 s or more (measured with
``--durations=0``), and on those that take that long when run without the slow tests that
warm their caches.
"""

from __future__ import annotations

import pytest

_MARKED_BY_FIXTURE = {
    "spark": "spark", "browser": "browser", "s3": "objectstore", "azure": "objectstore",
}  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test that takes the ``spark``, ``browser``, ``s3`` or ``azure`` fixture."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for name, marker in _MARKED_BY_FIXTURE.items():
            if name in fixtures:
                item.add_marker(marker)
