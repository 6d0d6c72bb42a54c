"""The command line on object stores: every command that reads or writes a table.

A user points the commands at ``s3://`` or ``az://`` URIs and gives delta-rs its settings
in the environment (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, keys, region; or
``AZURE_STORAGE_ACCOUNT_NAME``, its key, the endpoint, ``AZURE_ALLOW_HTTP``), as the README
says; here against moto's S3 server and Azurite.
Each command runs as its own process, as a shell would run it, so what the library reads
from the environment is what a real run reads. One trail, archive, index and evaluation log
in one bucket or container, in the order a user meets them: index, ask, list, show,
feedback, report, replay, compact, eval, compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.s3 import S3Server
from tests.stores.places import Place

ROOT = Path(__file__).parents[2]
HANDBOOK = ROOT / "examples" / "handbook"
QUESTION = "How often is the case drain filter replaced?"
pytestmark = pytest.mark.slow


def _groundlock(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundlock", *argv],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
    )  # fmt: skip


def test_every_table_command_works_on_an_object_store(object_place: Place, tmp_path: Path) -> None:
    env = {**os.environ, **object_place.options, "GROUNDLOCK_SPOOL_DIR": str(tmp_path / "spool")}
    env.pop("GROUNDLOCK_STORE", None)
    base = object_place.root.rsplit("/", 1)[0]  # the bucket's or container's root
    index, store = f"{base}/index", f"{base}/audit"
    archive, log = f"{base}/archive", f"{base}/eval"

    done = _groundlock(env, "index", str(HANDBOOK / "docs"), "--index", index)
    assert done.returncode == 0, done.stderr
    asked = _groundlock(
        env, "ask", QUESTION, "--index", index, "--store", store, "--archive", archive, "--json"
    )
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["status"] == "OK"
    request_id = answer["request_id"]

    listed = _groundlock(env, "records", "list", "--store", store, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["request_id"] for line in listed.stdout.splitlines()] == [request_id]
    shown = _groundlock(env, "records", "show", request_id, "--store", store, "--archive", archive)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["validations"][0]["status"] == "OK"
    rated = _groundlock(env, "feedback", request_id, "--rating", "4", "--store", store)
    assert rated.returncode == 0, rated.stderr

    page = tmp_path / "report.html"
    reported = _groundlock(env, "report", "--store", store, "--out", str(page))
    assert reported.returncode == 0, reported.stderr
    assert "report of 1 request(s)" in reported.stdout
    assert "R2_POLICY_V4_LEXICAL" in page.read_text(encoding="utf-8")  # counted by policy

    replayed = _groundlock(env, "replay", "--archive", archive, "--store", store, "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    result = json.loads(replayed.stdout)
    assert result["cross_checked"] is True
    assert result["ok"] is True

    compacted = _groundlock(env, "records", "compact", "--store", store)
    assert compacted.returncode == 0, compacted.stderr
    again = _groundlock(env, "records", "list", "--store", store, "--json")
    assert again.stdout == listed.stdout  # compaction changed no row

    for run in ("a", "b"):
        gold = str(HANDBOOK / "gold.jsonl")
        evaluated = _groundlock(
            env, "eval", gold, "--index", index, "--store", log, "--run-id", run
        )
        assert evaluated.returncode == 0, evaluated.stderr
    compared = _groundlock(env, "eval", "compare", "a", "b", "--store", log, "--json")
    assert compared.returncode == 0, compared.stderr
    document = json.loads(compared.stdout)
    assert len(document["runs"]) == 2
    assert document["changed"] == []  # the same index, model and gold set: nothing changed


def test_a_command_names_the_cause_when_the_bucket_is_missing(
    s3: tuple[S3Server, str], tmp_path: Path
) -> None:
    server, _ = s3
    env = {**os.environ, **server.storage_options(), "GROUNDLOCK_SPOOL_DIR": str(tmp_path)}
    listed = _groundlock(env, "records", "list", "--store", "s3://no-such-bucket-0042/audit")
    assert listed.returncode == 1
    assert "Traceback" not in listed.stderr
    assert server.storage_options()["AWS_SECRET_ACCESS_KEY"] not in listed.stderr
    assert listed.stderr.count("\n") == 1, listed.stderr
