"""What a new user met in the first hour (issue 28, part): help that reads as prose, usage
errors that say what is missing, ranges and archives refused (or not) as a user expects,
plurals, and one line where LangChain printed a page. Through the real command."""

from __future__ import annotations

import argparse
import io
import itertools
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from groundlock import grounded_answer_chain
from groundlock.cli import _parser, main
from groundlock.lakehouse import LexicalEmbeddings, index_documents
from groundlock.stores import DeltaAuditStore
from groundlock.stores.archive import EvidenceArchive
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

ROOT = Path(__file__).parents[2]
GOLD = ROOT / "examples" / "handbook" / "gold.jsonl"
HANDBOOK = ROOT / "examples" / "handbook" / "docs"
BUNDLE = ROOT / "examples" / "data" / "hydraulic_pump_bundle.json"


@pytest.fixture(autouse=True)
def _no_locations_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GROUNDLOCK_STORE", "GROUNDLOCK_ARCHIVE", "GROUNDLOCK_EVAL_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")  # (argparse wraps to $COLUMNS - 2)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- help ------------------------------------------------------------------------------------


def _commands() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """Every parser of the command line with the words that reach it (``records list``)."""
    found: list[tuple[list[str], argparse.ArgumentParser]] = []
    pending: list[tuple[list[str], argparse.ArgumentParser]] = [([], _parser())]
    while pending:
        words, parser = pending.pop(0)
        found.append((words, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(([*words, name], sub) for name, sub in action.choices.items())
    return found


def test_every_command_is_walked() -> None:
    names = {" ".join(words) for words, _ in _commands()}
    assert {"ask", "validate", "serve", "index", "records list", "records show",
            "records compact", "records vacuum", "feedback", "report", "replay",
            "eval"} <= names  # fmt: skip


def test_every_option_and_positional_says_what_it_is() -> None:
    bare = [
        f"groundlock {' '.join(words)}: {action.option_strings or action.dest}"
        for words, parser in _commands()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and not (action.help and action.help.strip())
    ]
    assert bare == []


def _description(help_text: str) -> list[str]:
    """The paragraphs between the usage and the first list of arguments."""
    blocks = help_text.split("\n\n")
    prose = [b for b in blocks[1:] if not b.endswith(":") and not re.match(r"^\S+:\n", b)]
    return [b for b in prose if not b.startswith(("positional arguments", "options"))]


def test_every_help_reads_as_plain_wrapped_prose(capsys: pytest.CaptureFixture[str]) -> None:
    # The eval help read "answers a gold set (see\nevaluation for its lines ...": the role
    # was stripped after argparse had wrapped the line around it.
    for words, parser in _commands():
        code, text, _ = _run(capsys, *words, "--help")
        assert code == 0
        assert "``" not in text, words
        assert "`" not in text, words
        assert not re.search(r":[a-z]+:", text.replace("COMMAND:", "")), words
        if parser.formatter_class.__name__ == "PlainRawDescriptionFormatter":
            continue  # (its line breaks are its author's)
        for paragraph in _description(text):
            lines = paragraph.splitlines()
            for line, following in itertools.pairwise(lines):
                # A line ends short only when the next word could not have fitted.
                assert len(line) + 1 + len(following.split()[0]) > 78, (words, line)
    _, text, _ = _run(capsys, "eval", "--help")
    text = " ".join(text.split())
    assert "answers a gold set from a lakehouse index" in text
    assert "see evaluation" not in text
    assert "expected_citations (the chunk ids a correct answer cites" in text
    assert "eval review RUN_ID ITEM_ID" in text  # both forms are described


def test_ask_help_says_its_two_forms_its_defaults_and_its_model_forms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, top, _ = _run(capsys, "--help")
    summary = " ".join(top.split())
    assert "ask answer a bundle (a JSON file, or stdin), or a question from an index" in summary
    _, text, _ = _run(capsys, "ask", "--help")
    flat = " ".join(text.split())
    assert "--top-k N with --index: rows retrieved per question (default 6, deliberately" in flat
    assert "RetrievalFront asks for 8" in flat
    assert (
        "with --index, R2_POLICY_V4_LEXICAL for an index built with the lexical embedding" in flat
    )
    assert "--model PROVIDER:MODEL the model, as provider:model (openai:" in flat
    _, text, _ = _run(capsys, "eval", "--help")
    assert "(default 6, deliberately" in " ".join(text.split())


# -- eval review / compare -------------------------------------------------------------------


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Run a (two items) and run b (g01 as in a, g02 off-topic, g03 only in b)."""
    root = tmp_path_factory.mktemp("first-hour-eval")
    index_documents(HANDBOOK, root / "index", LexicalEmbeddings())
    items = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines()[:3]]
    run_a = root / "a.jsonl"
    run_a.write_text("".join(json.dumps(i) + "\n" for i in items[:2]), encoding="utf-8")
    off_topic = {**items[1], "question": "Who painted the Mona Lisa?"}
    run_b = root / "b.jsonl"
    run_b.write_text(
        "".join(json.dumps(i) + "\n" for i in (items[0], off_topic, items[2])), encoding="utf-8"
    )
    log = str(root / "log")
    for run, path in (("a", run_a), ("b", run_b)):
        argv = ["eval", str(path), "--index", str(root / "index"), "--store", log]
        assert main([*argv, "--run-id", run]) == 0
    return log


def test_compare_with_one_run_says_it_needs_two(
    eval_log: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "eval", "compare", "run-cit", "--store", eval_log)
    assert (code, out) == (2, "")
    assert err == "groundlock: error: eval compare needs two run ids; got 1: run-cit\n"


def test_review_without_its_options_names_them(
    eval_log: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "eval", "review", "a", "g01", "--store", eval_log)
    assert code == 2
    assert err == (
        "groundlock: error: eval review needs --status approved|rejected and --reviewer NAME\n"
    )
    code, _, err = _run(capsys, "eval", "review", "a", "g01", "--status", "approved",
                        "--store", eval_log)  # fmt: skip
    assert (code, err) == (2, "groundlock: error: eval review needs --reviewer NAME\n")
    code, _, err = _run(capsys, "eval", "review", "a", "--store", eval_log)
    assert code == 2
    assert "eval review needs a run id and an item id; got 1: a" in err


def test_review_of_a_run_the_log_lacks_says_so(
    eval_log: str, capsys: pytest.CaptureFixture[str]
) -> None:
    review = ["--status", "approved", "--reviewer", "ann", "--store", eval_log]
    code, _, err = _run(capsys, "eval", "review", "nosuch", "g01", *review)
    assert (code, err) == (1, "groundlock: the evaluation log holds no run nosuch\n")
    code, _, err = _run(capsys, "eval", "review", "a", "g99", *review)
    assert (code, err) == (1, "groundlock: run a has no item g99\n")


def test_compare_json_holds_the_items_that_changed(
    eval_log: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text, _ = _run(capsys, "eval", "compare", "a", "b", "--store", eval_log)
    assert code == 0
    shown = [line.strip() for line in text.split("items that changed:\n")[1].splitlines()]
    code, out, err = _run(capsys, "eval", "compare", "a", "b", "--store", eval_log, "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert [run["run_id"] for run in document["runs"]] == ["a", "b"]
    assert [f"{c['item_id']}: {c['change']}" for c in document["changed"]] == shown
    assert [c["item_id"] for c in document["changed"]] == ["g02", "g03"]
    assert document["changed"][1]["change"] == "only in b"


def test_compare_html_says_where_it_wrote(
    eval_log: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "compare.html"
    for extra in ([], ["--json"]):
        argv = ["eval", "compare", "a", "b", "--store", eval_log, "--html", str(page), *extra]
        code, out, err = _run(capsys, *argv)
        assert code == 0
        assert err == f"groundlock: comparison of a and b written to {page}\n"
        assert page.is_file()
        if extra:
            json.loads(out)  # stdout stays JSON
    code, _, err = _run(capsys, "eval", "compare", "a", "b", "--store", eval_log,
                        "--html", str(tmp_path / "no" / "such" / "dir.html"))  # fmt: skip
    assert code == 2
    assert err.startswith("groundlock: error: cannot write ")


# -- report, records -------------------------------------------------------------------------


def test_a_report_since_a_future_day_is_empty_not_refused(
    store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    future = (datetime.now(UTC) + timedelta(days=400)).date().isoformat()
    out_file = tmp_path / "e.html"
    code, out, err = _run(capsys, "report", "--store", store_uri, "--since", future,
                          "--out", str(out_file))  # fmt: skip
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"report of 0 request(s) written to {out_file}"
    assert "No request was recorded in this range." in out_file.read_text(encoding="utf-8")
    # As records list reads the same range.
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--since", future)
    assert (code, out.splitlines()[-1]) == (0, "0 row(s)")
    # Both ends given, the wrong way round, is still a usage error.
    code, _, err = _run(capsys, "report", "--store", store_uri, "--since", future,
                        "--until", "2020-01-01", "--out", str(out_file))  # fmt: skip
    assert (code, err) == (2, "groundlock: error: --since must be before --until\n")


def test_records_show_refuses_an_archive_that_does_not_exist(
    store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["records", "show", "rejected", "--store", store_uri]
    code, out, err = _run(capsys, *argv, "--archive", str(tmp_path / "nosuch-archive"))
    assert (code, out) == (1, "")
    assert err == "groundlock: the evidence archive does not exist\n"
    # (as replay says it)
    code, _, err = _run(capsys, "replay", "--archive", str(tmp_path / "nosuch-archive"))
    assert (code, err) == (1, "groundlock: the evidence archive does not exist\n")


def test_a_cut_of_one_says_is(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "records", "list", "--store", store_uri, "--limit", "1")
    assert code == 0
    assert "more rows match: only the newest 1 is shown;" in out
    code, _, err = _run(capsys, "records", "list", "--store", store_uri, "--limit", "2",
                        "--json")  # fmt: skip
    assert "only the newest 2 are shown;" in err


def test_an_index_listing_cut_at_one_says_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index_documents(HANDBOOK, tmp_path / "index", LexicalEmbeddings())
    code, out, _ = _run(capsys, "index", "--list", "--index", str(tmp_path / "index"),
                        "--limit", "1")  # fmt: skip
    assert code == 0
    assert re.search(r"more chunks match: only the first 1 of \d+ is shown;", out)


def test_index_names_only_the_listing_option_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(tmp_path / "index")
    code, _, err = _run(capsys, "index", str(HANDBOOK), "--document", "x.md", "--index", index)
    assert code == 2
    assert err == (
        "groundlock: error: --document goes with --list (a listing of the index), not with a "
        "SOURCE to index\n"
    )
    code, _, err = _run(capsys, "index", str(HANDBOOK), "--limit", "3", "--index", index)
    assert (code, "--limit goes with --list" in err, "--document" in err) == (2, True, False)
    code, _, err = _run(capsys, "index", str(HANDBOOK), "--document", "x.md", "--limit", "3",
                        "--index", index)  # fmt: skip
    assert (code, "--document and --limit go with --list" in err) == (2, True)


# -- ask -------------------------------------------------------------------------------------


NO_BUNDLE = (
    "groundlock: error: no bundle: pass --bundle FILE, pipe a bundle's JSON on stdin, or ask "
    "a question with --index PATH\n"
)


def test_ask_with_nothing_on_stdin_says_what_to_pass(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for empty in ("", " \n"):
        monkeypatch.setattr("sys.stdin", io.StringIO(empty))
        assert _run(capsys, "ask") == (2, "", NO_BUNDLE)


def test_ask_names_where_stdin_stops_being_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{\n "request_id": "r",\n bad}'))
    code, _, err = _run(capsys, "ask")
    assert (code, err) == (
        2,
        "groundlock: error: stdin is not JSON: Expecting property name enclosed in double "
        "quotes at line 3, column 2\n",
    )
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    code, _, err = _run(capsys, "ask", "--bundle", str(empty))
    assert (code, err) == (2, f"groundlock: error: {empty} is empty: no bundle in it\n")


def _one_model_line(err: str, command: str) -> None:
    assert err.count("\n") == 1, err
    assert err.startswith("groundlock: error: --model foo: Unable to infer model provider")
    assert err.endswith(f"; see groundlock {command} --help for the model forms\n")
    assert "http" not in err
    assert "Supported providers" not in err


def test_an_unknown_model_string_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "ask", "--bundle", str(BUNDLE), "--model", "foo")
    assert (code, out) == (2, "")
    _one_model_line(err, "ask")
    index = tmp_path / "index"
    index_documents(HANDBOOK, index, LexicalEmbeddings())
    code, out, err = _run(capsys, "ask", "How often?", "--index", str(index), "--model", "foo")
    assert (code, out) == (2, "")  # was exit 1, "failed (ModelPinningError)"
    _one_model_line(err, "ask")
    code, out, err = _run(capsys, "eval", str(GOLD), "--index", str(index), "--model", "foo")
    assert (code, out) == (2, "")
    _one_model_line(err, "eval")


# -- replay ----------------------------------------------------------------------------------


def test_replay_says_what_the_requests_without_a_prompt_were(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    archive = EvidenceArchive(tmp_path / "evidence")
    chain = grounded_answer_chain(store=store, archive=archive)
    for number in range(2):
        chain.invoke(make_bundle(request_id=f"ok-{number}"))
    chain.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    rejected = grounded_answer_chain(
        store=store, archive=archive, model=ScriptedChatModel(text="Fine [C7].")
    )
    rejected.invoke(make_bundle(request_id="rejected"))
    store.close()
    argv = ["replay", "--archive", str(tmp_path / "evidence"), "--store", str(tmp_path / "audit")]
    code, out, _ = _run(capsys, *argv)
    assert code == 0, out
    assert (
        "4 request(s) replayed; 3 prompt sha256 reproduced, 0 mismatched, 1 had no prompt to "
        "prove (refused at R2 or R3, before any model call); 4 verdict(s) reproduced\n"
    ) in out
    code, out, _ = _run(capsys, *argv, "--json")
    assert json.loads(out)["without_prompt"] == 1
