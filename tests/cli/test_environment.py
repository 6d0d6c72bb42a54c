"""A bad ``GROUNDLOCK_*`` setting is named on one line, and from the command line is exit 2.

``GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS=many`` gave int()'s own message (``invalid literal
for int() with base 10``), exit 1, naming neither the variable nor what it wants; under
``serve --workers 2`` it (and a malformed ``GROUNDLOCK_API_KEYS``) killed every worker at
start, which uvicorn's supervisor started again, over and over, after serve had announced
its address.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import uvicorn

from groundlock.cli import main
from groundlock.lakehouse import LexicalEmbeddings, index_documents
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle

HANDBOOK = Path(__file__).parents[2] / "examples" / "handbook" / "docs"
VARIABLE = "GROUNDLOCK_MIN_VACUUM_RETENTION_HOURS"


@pytest.fixture(scope="module")
def built(store_uri: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A real audit store and a real index (never written by these tests)."""
    root = tmp_path_factory.mktemp("index") / "index"
    index_documents(HANDBOOK, root, LexicalEmbeddings())
    return store_uri, str(root)


@pytest.mark.parametrize("value", ["many", "12.5", "-1", "1000001", "9" * 5000])
def test_the_library_names_a_bad_minimum_retention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(VARIABLE, value)
    with pytest.raises(ValueError, match=f"^{VARIABLE} must be a whole number of hours from 0 "):
        DeltaAuditStore(tmp_path / "audit")
    assert not (tmp_path / "audit").exists()


@pytest.mark.parametrize(("value", "minimum"), [("", 168), ("0", 0), ("1000000", 1_000_000)])
def test_a_minimum_retention_in_range_or_unset_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, minimum: int
) -> None:
    monkeypatch.setenv(VARIABLE, value)
    assert DeltaAuditStore(tmp_path / "audit").min_vacuum_retention_hours == minimum


def _commands(tmp_path: Path, store: str, index: str) -> dict[str, list[str]]:
    bundle = tmp_path / "bundle.json"
    return {
        "records list": ["records", "list", "--store", store],
        "records vacuum": ["records", "vacuum", "--store", store],
        "feedback": ["feedback", "ok-0", "--rating", "4", "--store", store],
        "report": ["report", "--store", store, "--out", str(tmp_path / "report.html")],
        "replay --store": ["replay", "--archive", str(tmp_path / "evidence"), "--store", store],
        "ask --store": ["ask", "--bundle", str(bundle), "--store", store],
        "ask --index --store": ["ask", "What is replaced?", "--index", index, "--store", store],
        "serve --store": ["serve", "--store", store],
    }


COMMANDS = sorted(_commands(Path("/unused"), "x", "y"))


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_minimum_retention_is_a_usage_error_naming_the_variable(
    built: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: started.append(args))
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)  # (serve sets it; undone after)
    monkeypatch.setenv(VARIABLE, "many")
    (tmp_path / "bundle.json").write_text(json.dumps(make_bundle(request_id="r-1")), "utf-8")
    code = main(_commands(tmp_path, *built)[command])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert f"{VARIABLE} must be a whole number of hours from 0 to 1,000,000, not 'many'" in err
    assert "invalid literal" not in err
    assert out == ""
    assert not started  # serve: refused before it announced itself or started a worker


def test_serve_refuses_malformed_api_keys_before_starting_a_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: started.append(args))
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)  # (serve sets it; undone after)
    monkeypatch.setenv("GROUNDLOCK_API_KEYS", "tech-9:mechanic:short")
    code = main(["serve", "--workers", "2", "--store", str(tmp_path / "audit")])
    out, err = capsys.readouterr()
    assert code == 2
    assert err == (
        "groundlock: error: GROUNDLOCK_API_KEYS entries are requester_id:role:key, "
        "keys of 16+ characters\n"
    )
    assert out == ""
    assert not started
    assert not (tmp_path / "audit").exists()  # the store checked, nothing written
