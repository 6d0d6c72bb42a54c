"""A local Spark (``local[2,2]``: two cores, a failed task tried twice) for the runner tests.

Skipped where pyspark or a Java runtime is missing, unless ``GROUNDLOCK_REQUIRE_SPARK=1``
(``.ci/run`` sets it): then a missing Spark fails the run instead of hiding the tests.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
BATCH_ROWS = 20
"""Arrow batch size: small, so a partition is several batches (each committed in turn)."""


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401, PLC0415
    except ImportError:
        return "pyspark is not installed (pip install 'groundlock[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (Spark needs Java 17 or newer)"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    missing = _spark_missing()
    if missing:
        if os.environ.get("GROUNDLOCK_REQUIRE_SPARK") == "1":
            pytest.fail(f"GROUNDLOCK_REQUIRE_SPARK=1 but {missing}")
        pytest.skip(missing)
    from pyspark.sql import SparkSession  # noqa: PLC0415

    # The workers run this interpreter, and import the tests' picklable models from here.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("groundlock-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
