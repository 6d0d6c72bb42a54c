"""003's table names on the command line, through the catalog ``$GROUNDLOCK_CATALOG`` names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock.cli import main
from groundlock.stores.catalog import TableCatalog, resolve_location

HANDBOOK = Path(__file__).parents[2] / "examples" / "handbook" / "docs"
QUESTION = "How often is the case drain filter replaced?"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A catalog in its own folder, its entries relative to it (the shell runs elsewhere)."""
    folder = tmp_path / "conf"
    folder.mkdir()
    path = folder / "groundlock.catalog.toml"
    path.write_text(
        "[tables]\n"
        'semantic.gold_chunks = "lake/gold_index"   # a dotted key\n'
        '"serving.rag_queries" = "lake/rag_queries"  # a quoted one\n'
        f'eval_log = "{(tmp_path / "elsewhere" / "eval_log").as_posix()}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("GROUNDLOCK_CATALOG", str(path))
    monkeypatch.chdir(tmp_path)
    return path


def test_index_ask_and_records_take_003s_table_names(
    catalog: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    lake = catalog.parent / "lake"
    assert _run(capsys, "index", str(HANDBOOK), "--index", "semantic.gold_chunks")[0] == 0
    assert DeltaTable.is_deltatable(str(lake / "gold_index" / "embeddings"))
    # From a shell, as a user runs it (the trail is written when the command ends).
    done = subprocess.run(
        [sys.executable, "-m", "groundlock", "ask", QUESTION, "--index", "semantic.gold_chunks",
         "--store", "serving.rag_queries", "--json"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    request_id = json.loads(done.stdout)["request_id"]
    assert DeltaTable.is_deltatable(str(lake / "rag_queries" / "queries"))
    code, out, _ = _run(capsys, "records", "list", "--store", "serving.rag_queries", "--json")
    assert code == 0
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == [request_id]
    # $GROUNDLOCK_STORE takes a table name too.
    monkeypatch.setenv("GROUNDLOCK_STORE", "serving.rag_queries")
    code, out, _ = _run(capsys, "records", "list", "--json")
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == [request_id]
    # Nothing was written where the shell runs: the names were never folders.
    assert sorted(p.name for p in Path().iterdir()) == ["conf"]


def test_a_bare_name_the_catalog_lists_resolves_and_one_it_does_not_stays_a_folder(
    catalog: Path, tmp_path: Path
):
    assert resolve_location("eval_log", "--store") == str(tmp_path / "elsewhere" / "eval_log")
    assert resolve_location("scratch_index", "--index") == "scratch_index"
    assert resolve_location("./semantic.gold_chunks", "--index") == "./semantic.gold_chunks"
    assert resolve_location("s3://bucket/x", "--store") == "s3://bucket/x"


def test_an_unknown_table_name_is_a_usage_error_naming_the_catalog(
    catalog: Path, capsys: pytest.CaptureFixture[str]
):
    code, _, err = _run(capsys, "ask", QUESTION, "--index", "semantic.silver_chunks")
    assert code == 2
    assert err == (
        f"groundlock: error: --index semantic.silver_chunks: not a table of the catalog "
        f"{catalog} ($GROUNDLOCK_CATALOG); it lists eval_log, semantic.gold_chunks, "
        "serving.rag_queries (for a new folder of that name, write ./semantic.silver_chunks)\n"
    )
    assert not Path("semantic.silver_chunks").exists()


def test_a_dotted_name_the_catalog_does_not_list_but_that_exists_is_that_folder(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A folder named idx.v2 or audit.delta, there before the catalog: still that folder.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "idx.v2").mkdir()
    assert resolve_location("idx.v2", "--index") == "idx.v2"
    with pytest.raises(ValueError, match=r"write \./audit\.delta"):
        resolve_location("audit.delta", "--store")  # not there: a name the catalog lacks


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tables]\nsemantic.gold_chunks = 3\n", "semantic.gold_chunks must map to a path or URI"),
        ('[tables]\n"bad name" = "x"\n', "'bad name' is not a table name"),
        (
            '[tables]\nsemantic.gold = "s3://b/a\\tb"\n',
            "semantic.gold: a store, archive, index or log",
        ),
        ('[tables]\nsemantic.gold = "lake/a[1]"\n', "semantic.gold: "),
        ('semantic.gold_chunks = "x"\n', "no [tables] section"),
        ("[tables\n", "not TOML"),
    ],
)
def test_a_bad_catalog_entry_is_named_before_any_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    message: str,
):
    path = tmp_path / "groundlock.catalog.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("GROUNDLOCK_CATALOG", str(path))
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "index", str(HANDBOOK), "--index", "semantic.gold_chunks")
    assert code == 2
    assert f"catalog {path}" in err
    assert message in err
    assert list(tmp_path.iterdir()) == [path]  # nothing indexed anywhere


def test_a_missing_catalog_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("GROUNDLOCK_CATALOG", str(tmp_path / "none.toml"))
    code, _, err = _run(capsys, "ask", QUESTION, "--index", "semantic.gold_chunks")
    assert code == 2
    assert "cannot be read" in err


def test_without_a_catalog_every_location_is_a_path(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("GROUNDLOCK_CATALOG", raising=False)
    assert resolve_location("semantic.gold_chunks", "--index") == "semantic.gold_chunks"


def test_a_remote_entry_is_kept_as_given(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text('[tables]\nserving.rag_queries = "abfss://c@acct.dfs.core.windows.net/t/"\n')
    assert TableCatalog.load(path).location("serving.rag_queries") == (
        "abfss://c@acct.dfs.core.windows.net/t"
    )
