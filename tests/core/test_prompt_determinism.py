"""Same bundle + policy + question => byte-identical prompt, in any process or call path."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from groundlock import AssembleEvidence, BuildPrompt
from tests.builders import SAMPLE_BUNDLE_PATH, sample_bundle

_SCRIPT = """
import json, sys
from groundlock import AssembleEvidence, BuildPrompt
bundle = json.loads(open(sys.argv[1], encoding="utf-8").read())
bundle["results"] = bundle["results"][::-1]
result = (AssembleEvidence() | BuildPrompt()).invoke(bundle)
sys.stdout.buffer.write(result.prompt_sha256.encode() + b"\\n" + result.prompt_bytes)
"""


def test_prompt_bytes_are_identical_across_hash_seeds_and_processes():
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(SAMPLE_BUNDLE_PATH)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
        for seed in ("0", "7", "31337")
    }
    assert len(outputs) == 1
    (output,) = outputs
    in_process = (AssembleEvidence() | BuildPrompt()).invoke(sample_bundle())
    assert output == in_process.prompt_sha256.encode() + b"\n" + in_process.prompt_bytes


def test_invoke_ainvoke_and_batch_build_the_same_bytes():
    chain = AssembleEvidence() | BuildPrompt()
    bundle = sample_bundle()
    results = [
        chain.invoke(bundle),
        asyncio.run(chain.ainvoke(bundle)),
        *chain.batch([bundle, bundle]),
        *asyncio.run(chain.abatch([bundle])),
    ]
    assert len({r.prompt_bytes for r in results}) == 1
    assert len({r.prompt_sha256 for r in results}) == 1
