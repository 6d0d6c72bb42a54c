"""Shared pieces of the lakehouse tests: a copy of the handbook corpus in a tmp dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HANDBOOK = Path(__file__).parents[2] / "examples" / "handbook" / "docs"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A writable copy of the handbook's six documents."""
    target = tmp_path / "docs"
    shutil.copytree(HANDBOOK, target)
    return target
