"""Every command that opens a store, an archive or an index refuses a control character in
its location before it does any work, naming the character on one line of stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import uvicorn

from groundlock.cli import main
from tests.builders import make_bundle

EXAMPLE_DOCS = Path(__file__).parents[2] / "examples" / "handbook" / "docs"


def _commands(tmp_path: Path, location: str) -> dict[str, list[str]]:
    bundle, batch = tmp_path / "bundle.json", tmp_path / "batch.jsonl"
    return {
        "ask --store": ["ask", "--bundle", str(bundle), "--store", location],
        "ask --batch --store": ["ask", "--batch", str(batch), "--store", location],
        "ask --index": ["ask", "When is the filter replaced?", "--index", location],
        "index --index": ["index", str(EXAMPLE_DOCS), "--index", location],
        "records list": ["records", "list", "--store", location],
        "records show": ["records", "show", "r-1", "--store", location],
        "records compact": ["records", "compact", "--store", location],
        "feedback": ["feedback", "r-1", "--rating", "5", "--store", location],
        "report": ["report", "--store", location, "--out", str(tmp_path / "report.html")],
        "replay --archive": ["replay", "--archive", location],
        "serve --store": ["serve", "--store", location],
    }


COMMANDS = sorted(_commands(Path("/unused"), "x"))


@pytest.mark.parametrize("character", ["\t", "\n"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_control_character_in_a_location_is_refused_by_every_command(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    character: str,
) -> None:
    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: started.append(args))
    monkeypatch.delenv("GROUNDLOCK_STORE", raising=False)
    monkeypatch.delenv("GROUNDLOCK_ARCHIVE", raising=False)
    (tmp_path / "bundle.json").write_text(json.dumps(make_bundle(request_id="r-1")), "utf-8")
    (tmp_path / "batch.jsonl").write_text(json.dumps(make_bundle(request_id="r-2")) + "\n")
    location = str(tmp_path / "trail" / f"a{character}b")
    code = main(_commands(tmp_path, location)[command])
    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert f"{character!r} (U+{ord(character):04X})" in err
    assert err.count("\n") == 1  # one line: the path is named with the character escaped
    assert f"a{repr(character)[1:-1]}b" in err
    assert out == ""
    assert not started  # serve: refused before any worker is started
    assert not (tmp_path / "trail").exists()  # nothing written anywhere near it
