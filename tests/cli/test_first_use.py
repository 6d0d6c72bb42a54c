"""What a new user meets first (issue 28, part): the version, ``python -m groundlock``, and a
listing piped into ``head`` ending quietly. Real processes, a real Delta store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from groundlock import DeltaAuditStore, grounded_answer_chain
from groundlock._version import __version__
from tests.builders import make_bundle

GROUNDLOCK = str(Path(sys.executable).with_name("groundlock"))


def test_the_version_answers_from_the_script_and_from_python_dash_m() -> None:
    for command in ([GROUNDLOCK, "--version"], [sys.executable, "-m", "groundlock", "--version"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"groundlock {__version__}"


def test_a_listing_whose_reader_went_away_ends_quietly(tmp_path: Path) -> None:
    # ``records list | head``: the reader closes the pipe before the listing is written.
    store = DeltaAuditStore(tmp_path / "audit")
    chain = grounded_answer_chain(store=store)
    for number in range(3):
        chain.invoke(make_bundle(request_id=f"piped-{number}"))
    store.close()
    listing = subprocess.Popen(
        [GROUNDLOCK, "records", "list", "--store", str(tmp_path / "audit")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert listing.stdout is not None
    listing.stdout.close()  # gone before a byte is read
    _, errors = listing.communicate(timeout=120)
    assert listing.returncode == 0
    assert errors == b""
