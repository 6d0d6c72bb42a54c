"""The evaluation log's and the index's readers on damaged tables (issue 27).

As the audit trail's readers (``test_damaged_trail``): a data file gone or unreadable stops
the command with one line naming the table and the file, exit 1, never ``failed
(Exception)``; a row that breaks its model is shown and flagged where the reader can show
it (``eval compare``), and fails its request closed, named, where it cannot (``ask``).
Real tables, damaged through the deltalake API or on disk.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groundlock.cli import main
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.lakehouse import LexicalEmbeddings, index_documents, read_eval_log
from groundlock.stores import DeltaAuditStore
from groundlock.stores.readers import TrailDamaged
from tests.cli.tampering import remove_a_data_file

ROOT = Path(__file__).parents[2]
GOLD = ROOT / "examples" / "handbook" / "gold.jsonl"
HANDBOOK = ROOT / "examples" / "handbook" / "docs"
QUESTION = "How often is the case drain filter replaced?"


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the handbook and an evaluation log of two runs of its gold set."""
    root = tmp_path_factory.mktemp("lakehouse")
    index_documents(HANDBOOK, root / "index", LexicalEmbeddings())
    for run in ("a", "b"):
        argv = ["eval", str(GOLD), "--index", str(root / "index"), "--store", str(root / "log")]
        assert main([*argv, "--run-id", run]) == 0
    return root


@pytest.fixture
def copy(original: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    shutil.copytree(original, tmp_path / "copy")
    capsys.readouterr()  # (what the fixture's runs printed)
    return tmp_path / "copy"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str, copy: Path) -> str:
    assert err.count("\n") == 1, err
    assert "failed (" not in err
    assert str(copy) not in err  # a file's name, never a path or URI
    return err


def _remove_every_data_file(table: Path) -> list[str]:
    files = [Path(uri) for uri in DeltaTable(str(table)).file_uris()]
    for file in files:
        file.unlink()
    return [file.name for file in files]


# -- the evaluation log ----------------------------------------------------------------------


def test_compare_names_a_deleted_data_file_of_the_log(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = remove_a_data_file(copy / "log")
    code, out, err = _run(capsys, "eval", "compare", "a", "b", "--store", str(copy / "log"))
    assert code == 1
    assert _one_line(err, copy) == (
        f"groundlock: the evaluation log cannot be read: its data file {name} is missing\n"
    )
    assert out == ""


def test_review_names_a_deleted_data_file_of_the_log(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = _remove_every_data_file(copy / "log")
    review = ["eval", "review", "a", "g01", "--status", "approved", "--reviewer", "ann"]
    code, _, err = _run(capsys, *review, "--store", str(copy / "log"))
    assert code == 1
    line = _one_line(err, copy)
    assert line.startswith("groundlock: the evaluation log cannot be read: its data file ")
    assert any(f"its data file {name} is missing" in line for name in names)


def test_compare_without_a_log_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "eval", "compare", "a", "b", "--store", str(tmp_path / "none"))
    assert code == 1
    assert err == "groundlock: the evaluation log does not exist\n"  # was TableNotFoundError


def _bad_rows(log: Path) -> None:
    table = DeltaTable(str(log))
    table.update(new_values={"latency_ms": -5.0}, predicate="run_id = 'a' AND item_id = 'g01'")
    nan = "CAST('NaN' AS DOUBLE)"
    table.update(updates={"citation_recall": nan}, predicate="run_id = 'b' AND item_id = 'g02'")


def test_compare_flags_rows_that_break_their_model_and_compares_the_rest(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_rows(copy / "log")
    code, out, err = _run(capsys, "eval", "compare", "a", "b", "--store", str(copy / "log"))
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[4] for line in lines[1:3]] == ["11", "11"]  # answers: 12 less the bad
    assert "  g01: not compared: the row of run a breaks its model" in lines
    assert "  g02: not compared: the row of run b breaks its model" in lines
    assert (
        "! the evaluation log holds a row that breaks its model (run a, item g01): "
        "latency_ms: Input should be greater than or equal to 0"
    ) in lines
    assert (
        "! the evaluation log holds a row that breaks its model (run b, item g02): "
        "citation_recall: Input should be a finite number"
    ) in lines
    assert lines[-1] == "2 row(s) break the row model: in no summary"


def test_compare_json_stays_json_and_flags_bad_rows_on_stderr(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _bad_rows(copy / "log")
    argv = ["eval", "compare", "a", "b", "--store", str(copy / "log"), "--json"]
    code, out, err = _run(capsys, *argv)
    assert code == 0
    document = json.loads(out)
    assert [run["answers"] for run in document["runs"]] == [11, 11]
    changed = {c["item_id"]: c["change"] for c in document["changed"]}
    assert changed["g01"] == "not compared: the row of run a breaks its model"
    assert err.count("groundlock: ! the evaluation log holds a row that breaks its model") == 2


def test_a_review_time_python_cannot_hold_is_flagged_not_fatal(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One value past the year 9999 failed the conversion of its whole column: "the
    # evaluation log cannot be read (ValueError)", for every run in it.
    far = f"arrow_cast({2**62}, 'Timestamp(Microsecond, Some(\"UTC\"))')"
    DeltaTable(str(copy / "log")).update(
        updates={"reviewed_at": far}, predicate="run_id = 'a' AND item_id = 'g01'"
    )
    code, out, err = _run(capsys, "eval", "compare", "a", "b", "--store", str(copy / "log"))
    assert code == 0, err
    assert (
        "! the evaluation log holds a row that breaks its model (run a, item g01): "
        "reviewed_at: outside the years 1 to 9999"
    ) in out.splitlines()
    assert "  g01: not compared: the row of run a breaks its model" in out.splitlines()


def test_read_eval_log_refuses_a_row_that_breaks_its_model_in_one_line(copy: Path) -> None:
    _bad_rows(copy / "log")
    with pytest.raises(TrailDamaged) as raised:
        read_eval_log(copy / "log", "a")
    assert "the eval_log table holds a row that breaks its model" in str(raised.value)
    assert "latency_ms: Input should be greater than or equal to 0" in str(raised.value)
    assert "\n" not in str(raised.value)


# -- the index -------------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["chunks", "embeddings"])
def test_ask_names_a_deleted_data_file_of_the_index(
    copy: Path, capsys: pytest.CaptureFixture[str], table: str
) -> None:
    name = remove_a_data_file(copy / "index" / table)
    code, out, err = _run(capsys, "ask", QUESTION, "--index", str(copy / "index"))
    assert code == 1
    assert _one_line(err, copy) == (
        f"groundlock: the index's {table} table cannot be read: its data file {name} is missing\n"
    )
    assert out == ""


@pytest.mark.parametrize(
    "argv",
    [
        ("index", str(HANDBOOK), "--index", "{index}"),
        ("eval", str(GOLD), "--index", "{index}", "--store", "{root}/log"),
    ],
    ids=["index", "eval"],
)
def test_index_and_eval_name_a_deleted_data_file_of_the_index(
    copy: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    name = remove_a_data_file(copy / "index" / "embeddings")
    command = [part.format(index=copy / "index", root=copy) for part in argv]
    code, out, err = _run(capsys, *command)
    assert code == 1
    assert f"the index's embeddings table cannot be read: its data file {name} is missing" in (
        _one_line(err, copy)
    )
    assert out == ""


def _ask_recorded(copy: Path) -> ValidationRow:
    """``ask --index --store`` in a process of its own; the one validations row it wrote."""
    store = copy / "audit"
    done = subprocess.run(
        [sys.executable, "-m", "groundlock.cli", "ask", QUESTION, "--index",
         str(copy / "index"), "--store", str(store)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout == "FAILED RETRIEVAL_FAILED\n"
    audit = DeltaAuditStore(store)
    try:
        (row,) = audit.select(ValidationRow)
    finally:
        audit.close()
    assert row.failure_reason == "RETRIEVAL_FAILED"
    return row


@pytest.mark.slow
def test_a_data_file_unreadable_mid_search_fails_the_request_closed_and_is_named(
    copy: Path,
) -> None:
    # Truncated, not gone: the store opens, and the search is what finds it.
    first = Path(DeltaTable(str(copy / "index" / "chunks")).file_uris()[0])
    first.write_bytes(first.read_bytes()[:100])
    assert _ask_recorded(copy).message == (
        "retrieval: the index's chunks table cannot be read: its data file "
        f"{first.name} is unreadable"
    )  # was "the retriever raised Exception"


@pytest.mark.slow
def test_a_chunk_row_whose_access_tags_are_not_the_indexers_fails_closed_named(
    copy: Path,
) -> None:
    chunks = DeltaTable(str(copy / "index" / "chunks"))
    chunks.update(new_values={"access_tags": "not json"}, predicate="chunk_id LIKE '%'")
    message = _ask_recorded(copy).message or ""
    assert message.startswith("retrieval: the index's chunks table holds a row that breaks its")
    assert message.endswith("): access_tags: not a JSON object of text or lists of text")
    assert "(chunk '" in message
