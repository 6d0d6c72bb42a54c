"""The evaluation log: scores on hand-checked cases, the Delta table, reviews, comparisons."""

from __future__ import annotations

import json
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
from groundlock.lakehouse.evaluation import (
    comparison_html,
    format_difference,
    format_summary,
    score,
    score_difference,
    write_eval_log,
)
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
    assert {row.policy_version for row in rows} == {"R2_POLICY_V4_LEXICAL"}
    assert {row.model_name for row in rows} == {"groundlock-extractive-v1"}
    assert {row.index_version for row in rows} == {
        DeltaVectorStore(index, LexicalEmbeddings()).index_version
    }
    assert {row.firewall_ruleset for row in rows} == {"firewall_v4"}
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


def test_the_gold_set_has_relevance_and_compliance_as_checked_by_hand(index: str):
    chain = grounded_answer_chain(front=_front(index), policy=lexical_policy())
    rows = {row.item_id: row for row in run_eval(GOLD, chain, run_id="run-1")}
    assert {row.scoring_version for row in rows.values()} == {"eval_scores_v1"}
    # g04. gold: every 250 operating hours sampling valve return line (8 content words);
    # answer: hydraulic oil samples taken + the same 8, in the same order (12). Overlap 8:
    # P = 8/12, R = 1, F1 = 2 * 8 / (12 + 8) = 0.8; the LCS is the 8 too, so ROUGE-L 0.8.
    g04 = rows["g04"]
    assert g04.answer.startswith("Hydraulic oil samples are taken every 250 operating hours")
    assert (g04.relevance_f1, g04.relevance_rouge_l) == (pytest.approx(0.8), pytest.approx(0.8))
    # g05. gold: 2,500 working hours 1,900 (4). answer (16 words): towline inspected full
    # length no broken strands found towline 1,900 working hours due replacement 2,500
    # hours. Bag overlap 4: F1 = 2 * 4 / (16 + 4) = 0.4. In order, only "working hours"
    # (or "2,500 hours") is common: LCS 2, P = 2/16, R = 2/4, ROUGE-L = 0.2.
    g05 = rows["g05"]
    assert (g05.relevance_f1, g05.relevance_rouge_l) == (pytest.approx(0.4), pytest.approx(0.2))
    # g01. gold: every 500 operating hours earlier case drain pressure gauge reads 2 bar
    # idle (13); the answer's three sentences hold 10 + 11 + 15 = 36 content words ("May"
    # is a stopword), sharing every, 500, operating, hours, case, drain, 2: F1 = 14 / 49.
    g01 = rows["g01"]
    assert g01.relevance_f1 == pytest.approx(14 / 49)
    # compliance: g01 cites the manual (the expected source), the draft and the report:
    # 1 of 3 cited chunks from an expected source.
    assert g01.compliance_score == pytest.approx(1 / 3)
    assert rows["g04"].compliance_score == 1.0
    # g08 is answerable and refused: relevance 0, but a refusal is compliant.
    g08 = rows["g08"]
    assert (g08.relevance_f1, g08.relevance_rouge_l, g08.compliance_score) == (0.0, 0.0, 1.0)
    # g10 has no gold answer (unanswerable): no relevance; its refusal is compliant.
    g10 = rows["g10"]
    assert (g10.relevance_f1, g10.relevance_rouge_l, g10.compliance_score) == (None, None, 1.0)
    # the run's means: relevance over the 9 items that have it, compliance over all 12
    (run,) = summary(rows.values())
    f1s = [row.relevance_f1 for row in rows.values() if row.relevance_f1 is not None]
    assert len(f1s) == 9
    assert run.relevance_f1 == pytest.approx(sum(f1s) / 9)
    assert run.compliance == pytest.approx((1 / 3 + 11) / 12)


def test_a_bundle_item_and_a_firewall_failure_are_scored(tmp_path: Path):
    rows_in = [make_row(0), make_row(1)]
    bundle: dict[str, Any] = make_bundle(rows_in)
    del bundle["request_id"]
    uncited = FakeListChatModel(responses=["The filter is replaced every 500 hours."])
    chain = grounded_answer_chain(model=uncited)
    item = EvalItem(
        id="b1", bundle=bundle, expected_citations=("chunk-000",), answerable=True,
        gold_answer="The filter is replaced every 500 hours.",
    )  # fmt: skip
    (row,) = run_eval([item], chain, run_id="run-b")
    assert row.status == "FAILED"
    # The rejected text is the gold word for word, but nothing reached the reader: 0.
    assert (row.relevance_f1, row.relevance_rouge_l, row.compliance_score) == (0.0, 0.0, 0.0)
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
    assert [s.policy_version for s in summaries] == ["R2_POLICY_V4_LEXICAL", "HANDBOOK_POLICY_V1"]
    assert changes == []  # the two calibrations decide every item alike
    # a changed outcome is listed
    flipped = [
        row.model_copy(update={"status": "NO_EVIDENCE", "passed": False})
        if row.run_id == "hb" and row.item_id == "g03"
        else row
        for row in rows
    ]
    assert compare(flipped, "lex", "hb")[1] == ["g03: OK -> NO_EVIDENCE (fail)"]
    # an item whose answer scores moved is listed with them, though its outcome is the same
    reworded = [
        row.model_copy(update={"relevance_f1": 0.25, "relevance_rouge_l": 0.125})
        if row.run_id == "hb" and row.item_id == "g04"
        else row
        for row in rows
    ]
    assert compare(reworded, "lex", "hb")[1] == [
        "g04: OK -> OK; relevance F1 0.80 -> 0.25, ROUGE-L 0.80 -> 0.12"
    ]
    lex, hb = compare(reworded, "lex", "hb")[0]
    difference = score_difference(lex, hb)
    assert difference["relevance_f1"] == pytest.approx((0.25 - 0.8) / 9)
    assert difference["relevance_rouge_l"] == pytest.approx((0.125 - 0.8) / 9)
    assert difference["compliance"] == 0.0
    assert difference["pass_rate"] == 0.0
    assert format_difference(lex, hb).startswith(
        "difference (hb - lex): relevance F1 -0.06, ROUGE-L -0.08, compliance +0.00, "
    )
    table = format_summary(summaries)
    assert "R2_POLICY_V4_LEXICAL" in table
    assert "HANDBOOK_POLICY_V1" in table
    assert "<section" in comparison_html(summaries, ["g<03>"])
    assert "g&lt;03&gt;" in (comparison_html(summaries, ["g<03>"]))
    with pytest.raises(LookupError):
        compare(rows, "lex", "nope")


def test_the_eval_row_schema_derives_from_its_fields():
    from groundlock.stores.arrow import arrow_schema  # noqa: PLC0415

    names = [arrow_schema(EvalRow).field(i).name for i in range(len(EvalRow.model_fields))]
    assert names == list(EvalRow.model_fields)
    assert names[-7:] == [
        "review_status", "reviewer", "reviewed_at",
        # 003's scores came later: appended, so an older log gains them at its end
        "relevance_f1", "relevance_rouge_l", "compliance_score", "scoring_version",
    ]  # fmt: skip


# -- the command line and the example ------------------------------------------------------


def test_the_eval_commands(index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    log = str(tmp_path / "eval_log")
    assert main(["eval", str(GOLD), "--index", index, "--store", log, "--run-id", "a"]) == 0
    out = capsys.readouterr().out
    assert "R2_POLICY_V4_LEXICAL" in out
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
    header = next(line for line in out.splitlines() if line.startswith("run ")).split("  ")
    assert [c.strip() for c in header if c.strip()][-4:] == [
        "relevance F1", "ROUGE-L", "compliance", "reviewed",
    ]  # fmt: skip
    # the two policies answer alike, so every mean is the same
    assert "difference (b - a): relevance F1 +0.00, ROUGE-L +0.00, compliance +0.00" in out
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
    # relevance F1, ROUGE-L and compliance, as the README gives them
    assert lexical.split()[11:14] == ["0.42", "0.40", "0.94"]
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


SCORE_COLUMNS = ("relevance_f1", "relevance_rouge_l", "compliance_score", "scoring_version")


def _log_from_before_the_scores(log: Path, rows: list[EvalRow]) -> None:
    """An evaluation log as groundlock wrote it before 003's scores: no score columns."""
    from arro3.core import Schema, Table  # noqa: PLC0415
    from deltalake import DeltaTable, write_deltalake  # noqa: PLC0415

    from groundlock.stores.arrow import to_arrow  # noqa: PLC0415

    current = to_arrow(EvalRow, rows)
    keep = [
        i for i in range(current.num_columns) if current.schema.field(i).name not in SCORE_COLUMNS
    ]
    old = Table.from_arrays(
        [current.column(i) for i in keep], schema=Schema([current.schema.field(i) for i in keep])
    )
    DeltaTable.create(str(log), old.schema)
    write_deltalake(str(log), old, mode="append")


def test_a_log_from_before_the_scores_is_compared_and_upgraded(
    index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from deltalake import DeltaTable  # noqa: PLC0415

    log = tmp_path / "eval_log"
    chain = grounded_answer_chain(front=_front(index), policy=lexical_policy())
    scored = run_eval(GOLD, chain, run_id="new")
    old = [row.model_copy(update={"run_id": run}) for run in ("old-a", "old-b") for row in scored]
    _log_from_before_the_scores(log, old)
    # read as it is: the scores are null, and compare shows them as unknown
    assert all(
        (row.relevance_f1, row.compliance_score, row.scoring_version) == (None, None, None)
        for row in read_eval_log(log)
    )
    assert main(["eval", "compare", "old-a", "old-b", "--store", str(log)]) == 0
    out = capsys.readouterr().out
    assert "difference (old-b - old-a): relevance F1 -, ROUGE-L -, compliance -" in out
    assert "no item changed" in out
    assert {f.name for f in DeltaTable(str(log)).schema().fields}.isdisjoint(SCORE_COLUMNS)
    # a new run is appended: the columns are added, the old rows keep reading null
    write_eval_log(scored, log)
    assert set(SCORE_COLUMNS) <= {f.name for f in DeltaTable(str(log)).schema().fields}
    assert main(["eval", "compare", "old-a", "new", "--store", str(log), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    old_run, new_run = document["runs"]
    assert (old_run["relevance_f1"], old_run["compliance"]) == (None, None)
    assert new_run["compliance"] == pytest.approx((1 / 3 + 11) / 12)
    assert document["difference"]["compliance"] is None  # unknown in the old run
    assert document["difference"]["pass_rate"] == 0.0
    # the same answers: no item is listed because the old row lacks scores
    assert document["changed"] == []
