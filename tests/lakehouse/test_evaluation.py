"""The evaluation log: scores on hand-checked cases, the Delta table, reviews, comparisons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda
from pydantic import ValidationError

from groundlock import RetrievalFront, grounded_answer_chain, load_policy
from groundlock.cli import main
from groundlock.lakehouse import (
    DeltaVectorStore,
    EvalItem,
    EvalRow,
    LexicalEmbeddings,
    compare,
    index_documents,
    lexical_policy,
    read_eval_log,
    run_eval,
    set_review,
    summary,
)
from groundlock.lakehouse.evaluation import comparison_html, format_summary, score
from tests.builders import make_bundle, make_row

ROOT = Path(__file__).parents[2]
GOLD = ROOT / "examples" / "handbook" / "gold.jsonl"
HANDBOOK_POLICY = ROOT / "examples" / "handbook" / "HANDBOOK_POLICY_V1.json"


def _item(expected: tuple[str, ...] = (), *, answerable: bool = True) -> EvalItem:
    return EvalItem(id="i", question="q?", expected_citations=expected, answerable=answerable)


# -- scores, checked by hand ---------------------------------------------------------------


def test_precision_and_recall_against_the_expected_set():
    # expected {a, b}; cited a, c, d: one hit of three cited (1/3), of two expected (1/2).
    precision, recall, refusal_ok, passed = score(_item(("a", "b")), "OK", ["a", "c", "d"])
    assert precision == pytest.approx(1 / 3)
    assert recall == pytest.approx(1 / 2)
    assert refusal_ok
    assert not passed  # b was not cited
    # expected {a, b}; cited b, a: all hits both ways, and order does not matter.
    assert score(_item(("a", "b")), "OK", ["b", "a"]) == (1.0, 1.0, True, True)
    # expected {a}; cited a, b, c, d: precision 1/4, recall 1, passed (every expected cited).
    assert score(_item(("a",)), "OK", ["a", "b", "c", "d"]) == (0.25, 1.0, True, True)


def test_refusal_correctness_both_ways():
    # answerable and refused: wrong, nothing cited (precision unknown), recall 0.
    assert score(_item(("a",)), "NO_EVIDENCE", []) == (None, 0.0, False, False)
    # not answerable and refused: right, and no citation score applies.
    assert score(_item(answerable=False), "NO_EVIDENCE", []) == (None, None, True, True)
    # not answerable but answered: wrong; each citation is unexpected (precision 0).
    assert score(_item(answerable=False), "OK", ["x"]) == (0.0, None, False, False)
    # a FAILED request is never a correct refusal, either way.
    assert score(_item(("a",)), "FAILED", [])[2:] == (False, False)
    assert score(_item(answerable=False), "FAILED", [])[2:] == (False, False)


def test_an_item_has_one_input_and_no_citations_when_unanswerable():
    with pytest.raises(ValidationError, match="exactly one of question and bundle"):
        EvalItem(id="x", answerable=True)
    with pytest.raises(ValidationError, match="exactly one of question and bundle"):
        EvalItem(id="x", question="q", bundle={}, answerable=True)
    with pytest.raises(ValidationError, match="expects no citations"):
        EvalItem(id="x", question="q", expected_citations=("a",), answerable=False)


# -- a run over the Delta index ---------------------------------------------------------------


def _front(index: str) -> RetrievalFront:
    store = DeltaVectorStore(index, LexicalEmbeddings())
    return RetrievalFront.over_index(store, top_k=6)


@pytest.fixture
def index(corpus: Path, tmp_path: Path) -> str:
    uri = str(tmp_path / "index")
    index_documents(corpus, uri, LexicalEmbeddings())
    return uri


def test_the_gold_set_scores_as_checked_by_hand_and_round_trips_through_delta(
    index: str, tmp_path: Path
):
    log = tmp_path / "eval_log"
    chain = grounded_answer_chain(front=_front(index), policy=lexical_policy())
    rows = run_eval(GOLD, chain, run_id="run-1", table_uri=log)
    by_id = {row.item_id: row for row in rows}
    assert len(rows) == 12
    # g01: the filter question cites the manual (expected), the draft and the failure
    # report: 1 of 3 cited is expected, the 1 expected is cited.
    g01 = by_id["g01"]
    assert g01.status == "OK"
    assert g01.actual_citations == (
        "tug7-hpu-maintenance.md#2",
        "draft-pump-upgrade.md#1",
        "tug7-hpu-failure-report.md#1",
    )
    assert (g01.citation_precision, g01.citation_recall) == (pytest.approx(1 / 3), 1.0)
    assert g01.passed
    assert g01.refusal_correct
    assert g01.firewall_verdict == "PASSED"
    assert g01.firewall_reason is None
    assert g01.support_coverage == 1.0
    # g08: answerable, but the lexical gates refuse it: a wrong refusal.
    assert (by_id["g08"].status, by_id["g08"].refusal_correct) == ("NO_EVIDENCE", False)
    assert by_id["g08"].citation_recall == 0.0
    # g10: not answerable, refused: right.
    assert (by_id["g10"].status, by_id["g10"].refusal_correct) == ("NO_EVIDENCE", True)
    # the versions of what answered
    assert {row.policy_version for row in rows} == {"LEXICAL_POLICY_V1"}
    assert {row.model_name for row in rows} == {"groundlock-extractive-v1"}
    assert {row.index_version for row in rows} == {
        DeltaVectorStore(index, LexicalEmbeddings()).index_version
    }
    assert {row.firewall_ruleset for row in rows} == {"firewall_v2"}
    assert all(row.review_status is None and row.reviewed_at is None for row in rows)
    # the Delta table gives back exactly the rows written
    assert read_eval_log(log, "run-1") == sorted(rows, key=lambda row: row.item_id)
    # the summary, by hand: 10 of 12 decisions right; 7 answered, precisions
    # (1/3 + 6 * 1) / 7; recalls over the 9 answerable: 7 of 9; passes 10 of 12.
    (run,) = summary(rows)
    assert (run.answers, run.answered) == (12, 7)
    assert run.refusal_accuracy == pytest.approx(10 / 12)
    assert run.citation_precision == pytest.approx((1 / 3 + 6) / 7)
    assert run.citation_recall == pytest.approx(7 / 9)
    assert run.pass_rate == pytest.approx(10 / 12)


def test_a_bundle_item_and_a_firewall_failure_are_scored(tmp_path: Path):
    rows_in = [make_row(0), make_row(1)]
    bundle: dict[str, Any] = make_bundle(rows_in)
    del bundle["request_id"]
    uncited = FakeListChatModel(responses=["The filter is replaced every 500 hours."])
    chain = grounded_answer_chain(model=uncited)
    item = EvalItem(id="b1", bundle=bundle, expected_citations=("chunk-000",), answerable=True)
    (row,) = run_eval([item], chain, run_id="run-b")
    assert row.status == "FAILED"
    assert row.firewall_verdict == "FAILED"
    assert row.firewall_reason == row.failure_reason is not None
    assert not row.refusal_correct
    assert not row.passed
    assert row.actual_citations == ()
    assert row.question is None
    assert row.index_version == "idx-2026.11"


def test_a_review_sets_its_fields_and_an_unknown_item_is_an_error(index: str, tmp_path: Path):
    log = tmp_path / "eval_log"
    chain = grounded_answer_chain(front=_front(index), policy=lexical_policy())
    run_eval(GOLD, chain, run_id="run-1", table_uri=log)
    assert set_review(log, "run-1", "g03", "approved", "ann") == 1
    reviewed = {row.item_id: row for row in read_eval_log(log, "run-1")}
    assert (reviewed["g03"].review_status, reviewed["g03"].reviewer) == ("approved", "ann")
    assert reviewed["g03"].reviewed_at is not None
    assert reviewed["g04"].review_status is None
    with pytest.raises(LookupError):
        set_review(log, "run-1", "g99", "rejected", "ann")
    with pytest.raises(ValueError, match="approved or rejected"):
        set_review(log, "run-1", "g03", "maybe", "ann")  # type: ignore[arg-type]


def test_compare_two_runs_under_two_policies(index: str, tmp_path: Path):
    log = tmp_path / "eval_log"
    front = _front(index)
    run_eval(GOLD, grounded_answer_chain(front=front, policy=lexical_policy()), run_id="lex",
             table_uri=log)  # fmt: skip
    run_eval(GOLD, grounded_answer_chain(front=front, policy=load_policy(HANDBOOK_POLICY)),
             run_id="hb", table_uri=log)  # fmt: skip
    rows = read_eval_log(log)
    summaries, changes = compare(rows, "lex", "hb")
    assert [s.run_id for s in summaries] == ["lex", "hb"]
    assert [s.policy_version for s in summaries] == ["LEXICAL_POLICY_V1", "HANDBOOK_POLICY_V1"]
    assert changes == []  # the two calibrations decide every item alike
    # a changed outcome is listed
    flipped = [
        row.model_copy(update={"status": "NO_EVIDENCE", "passed": False})
        if row.run_id == "hb" and row.item_id == "g03"
        else row
        for row in rows
    ]
    assert compare(flipped, "lex", "hb")[1] == ["g03: OK -> NO_EVIDENCE (fail)"]
    table = format_summary(summaries)
    assert "LEXICAL_POLICY_V1" in table
    assert "HANDBOOK_POLICY_V1" in table
    assert "<section" in comparison_html(summaries, ["g<03>"])
    assert "g&lt;03&gt;" in (comparison_html(summaries, ["g<03>"]))
    with pytest.raises(LookupError):
        compare(rows, "lex", "nope")


def test_the_eval_row_schema_derives_from_its_fields():
    from groundlock.stores.arrow import arrow_schema  # noqa: PLC0415

    names = [arrow_schema(EvalRow).field(i).name for i in range(len(EvalRow.model_fields))]
    assert names == list(EvalRow.model_fields)
    assert names[-3:] == ["review_status", "reviewer", "reviewed_at"]


# -- the command line and the example ------------------------------------------------------


def test_the_eval_commands(index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    log = str(tmp_path / "eval_log")
    assert main(["eval", str(GOLD), "--index", index, "--store", log, "--run-id", "a"]) == 0
    out = capsys.readouterr().out
    assert "LEXICAL_POLICY_V1" in out
    assert "run a: 12 rows appended" in out
    argv = ["eval", str(GOLD), "--index", index, "--store", log, "--run-id", "b"]
    assert main([*argv, "--policy", str(HANDBOOK_POLICY)]) == 0
    capsys.readouterr()
    review = ["eval", "review", "a", "g01", "--status", "approved", "--reviewer", "ann"]
    assert main([*review, "--store", log]) == 0
    assert main(["eval", "review", "a", "g99", "--status", "approved", "--reviewer", "ann",
                 "--store", log]) == 1  # fmt: skip
    assert main(["eval", "compare", "a", "b", "--store", log]) == 0
    out = capsys.readouterr().out
    assert "1 (1 approved)" in out
    assert "no item changed" in out
    assert main(["eval", "compare", "a", "b"]) == 2  # no store
    assert main(["eval", str(GOLD)]) == 2  # no index


def test_the_example_evaluates_the_handbook_deterministically():
    run = subprocess.run(
        [sys.executable, "examples/lakehouse_eval.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    out = run.stdout
    assert out.startswith("indexed 16 chunks from 6 documents")
    summary_block = out.split("evaluation summary:\n", 1)[1]
    lexical, handbook = summary_block.splitlines()[1:3]
    assert lexical.split()[4:11] == ["12", "7", "0.83", "0.90", "0.78", "1.00", "0.83"]
    assert handbook.split()[4:8] == ["12", "7", "0.83", "0.90"]
    assert "2 (1 approved)" in lexical
    assert "items that changed: none" in out


def test_an_item_whose_chain_raises_is_scored_failed_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    def flaky(bundle: dict[str, Any]) -> dict[str, Any]:
        if bundle["request_id"].endswith(":boom"):
            raise ConnectionError("https://secret.example/index unreachable")
        return bundle

    chain = RunnableLambda(flaky) | grounded_answer_chain()
    bundle: dict[str, Any] = make_bundle(
        [make_row(0, chunk_text="Replace the seal every 500 hours.")],
        user_question="When is the seal replaced?",
    )
    del bundle["request_id"]
    items = [
        EvalItem(id=name, bundle=bundle, expected_citations=("chunk-000",), answerable=True)
        for name in ("ok-1", "boom", "ok-2")
    ]
    log = tmp_path / "eval_log"
    rows = run_eval(items, chain, run_id="run-r", table_uri=log)
    assert [(row.item_id, row.status) for row in rows] == [
        ("ok-1", "OK"),
        ("boom", "FAILED"),
        ("ok-2", "OK"),
    ]
    boom = rows[1]
    assert (boom.failure_reason, boom.answer, boom.actual_citations) == ("CHAIN_ERROR", "", ())
    assert (boom.refusal_correct, boom.passed, boom.firewall_verdict) == (False, False, None)
    assert len(read_eval_log(log, "run-r")) == 3
    assert "item boom raised ConnectionError" in caplog.text
    assert "secret.example" not in caplog.text
