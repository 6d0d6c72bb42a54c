"""Same bundle + policy => byte-identical evidence, in any process and any hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from groundlock import assemble, load_policy
from tests.builders import SAMPLE_BUNDLE_PATH, sample_bundle

_SCRIPT = """
import json, sys
from groundlock import assemble, load_policy
bundle = json.loads(open(sys.argv[1], encoding="utf-8").read())
bundle["results"] = list(reversed(bundle["results"]))  # input order must not matter
result = assemble(bundle, load_policy())
sys.stdout.buffer.write(result.model_dump_json().encode("utf-8"))
"""


def _run_with_hash_seed(seed: str) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    completed = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SAMPLE_BUNDLE_PATH)],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    return completed.stdout


@pytest.mark.slow
def test_three_processes_with_different_hash_seeds_produce_identical_bytes():
    outputs = [_run_with_hash_seed(seed) for seed in ("0", "1", "4242")]
    assert outputs[0] == outputs[1] == outputs[2]
    in_process = assemble(sample_bundle(), load_policy())
    from_subprocess = json.loads(outputs[0])
    assert from_subprocess["evidence_block_text"] == in_process.evidence_block_text
    assert from_subprocess["assembly_status"] == "OK"
