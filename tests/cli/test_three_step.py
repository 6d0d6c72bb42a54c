"""Spec ``002``'s three steps from a shell: retrieve, write the answer, validate it.

The real command in a subprocess, over an index of the handbook example: ``retrieve --json``
writes the bundle ``ask --index`` would answer, an answer is written by hand, and
``validate`` judges it with ``002``'s exit codes and result fields.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from groundlock.lakehouse.calibration import LEXICAL_POLICY
from groundlock.policies import load_policy

DOCS = Path(__file__).parents[2] / "examples" / "handbook" / "docs"
POLICY = "SEMANTIC_ID_POLICY_V1_LEXICAL"
QUESTION = "How often is the case drain filter of the hydraulic pump replaced?"
CLAIM = "The case drain filter of the hydraulic pump is replaced every 500 operating hours."
"""What the handbook's maintenance manual says, word for word (tug7-hpu-maintenance.md)."""
MANUAL_ID = "MM-TUG7-HPU-04_2"
"""That paragraph's semantic id: the document's knowledge id and the paragraph number."""


def _groundlock(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundlock", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def retrieved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Steps 0 and 1: the handbook indexed, and the question's bundle written as JSON."""
    base = tmp_path_factory.mktemp("three-step")
    index = str(base / "index")
    indexed = _groundlock("index", str(DOCS), "--index", index, "--policy", POLICY)
    assert indexed.returncode == 0, indexed.stderr
    step = _groundlock("retrieve", QUESTION, "--index", index, "--policy", POLICY, "--json")
    assert step.returncode == 0, step.stderr
    path = base / "retrieved.json"
    path.write_text(step.stdout, encoding="utf-8")
    return path


def _validate(bundle: Path, answer: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = bundle.with_name(f"answer-{abs(hash(answer))}.txt")
    path.write_text(answer, encoding="utf-8")
    return _groundlock(
        "validate", "--bundle", str(bundle), "--answer-file", str(path), "--policy", POLICY, *extra
    )


def test_retrieve_writes_the_bundle_ask_index_answers_from(retrieved: Path) -> None:
    bundle = json.loads(retrieved.read_text(encoding="utf-8"))
    assert bundle["user_question"] == QUESTION
    assert bundle["embedding_model"].startswith("lexical-hash-")
    ids = [row["semantic_id"] for row in bundle["results"]]
    assert ids[0] == MANUAL_ID  # the paragraph that answers ranks first
    assert [row["rank"] for row in bundle["results"]] == list(range(len(ids)))


def test_a_correct_answer_citing_a_retrieved_id_is_grounded(retrieved: Path) -> None:
    done = _validate(retrieved, f"{CLAIM} [{MANUAL_ID}]", "--json")
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["grounded"] is True
    assert verdict["validation_status"] == "PASSED"
    assert verdict["cited_ids"] == [MANUAL_ID]
    assert verdict["cited_sources"] == [
        {
            "id": MANUAL_ID,
            "source": "Tug 7 maintenance manual, ch. 4 (hydraulic power unit), para. 2",
        }
    ]
    assert verdict["invalid_citations"] == []
    assert MANUAL_ID in verdict["retrieved_ids"]
    # Which rules judged, as the audit row would say.
    assert verdict["policy_version"] == POLICY
    assert verdict["policy_sha256"] == load_policy(POLICY).policy_sha256
    assert verdict["firewall_ruleset"] == load_policy(POLICY).firewall_ruleset


def test_an_id_that_was_not_retrieved_is_named_as_invalid(retrieved: Path) -> None:
    done = _validate(retrieved, f"{CLAIM} [MM-TUG7-HPU-04_9]", "--json")
    assert done.returncode == 1
    verdict = json.loads(done.stdout)
    assert (verdict["grounded"], verdict["failure_reason"]) == (
        False,
        "INVALID_CITATION_REFERENCE",
    )
    assert verdict["invalid_citations"] == ["MM-TUG7-HPU-04_9"]
    assert verdict["cited_ids"] == []
    assert MANUAL_ID in verdict["retrieved_ids"]
    assert "MM-TUG7-HPU-04_9" not in verdict["retrieved_ids"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        # a sentence with no citation at all
        (
            f"{CLAIM} [{MANUAL_ID}] The pump never needs other maintenance.",
            "UNCITED_FACTUAL_STATEMENT",
        ),
        # a retrieved id cited for a value its paragraph does not hold
        (f"{CLAIM.replace('500', '900')} [{MANUAL_ID}]", "UNSUPPORTED_VALUE"),
    ],
)
def test_an_unsupported_sentence_fails_with_its_reason(
    retrieved: Path, answer: str, reason: str
) -> None:
    done = _validate(retrieved, answer, "--json")
    assert done.returncode == 1
    verdict = json.loads(done.stdout)
    assert (verdict["grounded"], verdict["failure_reason"]) == (False, reason)
    assert verdict["invalid_citations"] == []


def test_the_human_output_says_grounded_citations_sources_and_retrieved_ids(
    retrieved: Path,
) -> None:
    good = _validate(retrieved, f"{CLAIM} [{MANUAL_ID}]")
    assert good.returncode == 0
    lines = good.stdout.splitlines()
    assert lines[0] == "Grounded: yes (OK)"
    assert lines[1] == "Citations: 1"
    assert lines[2] == (
        f"  [{MANUAL_ID}] Tug 7 maintenance manual, ch. 4 (hydraulic power unit), para. 2"
    )
    assert lines[3].startswith("Retrieved ids (")
    assert MANUAL_ID in lines[3]
    bad = _validate(retrieved, f"{CLAIM} [MM-TUG7-HPU-04_9]")
    assert bad.returncode == 1
    lines = bad.stdout.splitlines()
    assert lines[0] == "Grounded: no (FAILED)"
    assert lines[1].startswith("Reason: INVALID_CITATION_REFERENCE")
    assert "Invalid citations: MM-TUG7-HPU-04_9" in lines


def test_retrieve_prints_no_control_character_of_the_question(retrieved: Path) -> None:
    # A question (or a document's title) may carry ESC c, which resets a terminal, and
    # U+202E, which reverses the line: shown escaped, never sent.
    index = str(retrieved.with_name("index"))
    hostile = QUESTION.replace("filter", "filter\x1bc\u202e")
    done = _groundlock("retrieve", hostile, "--index", index, "--policy", POLICY)
    assert done.returncode == 0, done.stderr
    assert [c for c in done.stdout if c != "\n" and not c.isprintable()] == []
    assert "filter\\x1bc\\u202e" in done.stdout


def test_retrieve_without_json_summarises_ids_scores_and_sources(retrieved: Path) -> None:
    index = str(retrieved.with_name("index"))
    done = _groundlock("retrieve", QUESTION, "--index", index, "--policy", POLICY)
    assert done.returncode == 0, done.stderr
    assert f"[{MANUAL_ID}] tug7-hpu-maintenance.md#2" in done.stdout
    assert f"Retrieved ids (3): {MANUAL_ID}," in done.stdout
    assert "DROP_BELOW_SIMILARITY_FLOOR" in done.stdout  # what R2 will not show a model


def test_ask_index_shows_the_same_verdict_block(retrieved: Path) -> None:
    index = str(retrieved.with_name("index"))
    done = _groundlock("ask", QUESTION, "--index", index, "--policy", POLICY)
    assert done.returncode == 0, done.stderr
    assert "Grounded: yes (OK)" in done.stdout
    assert f"Retrieved ids (3): {MANUAL_ID}," in done.stdout


def test_a_lexical_bundle_is_judged_under_the_lexical_calibration_by_default(
    retrieved: Path,
) -> None:
    # Without --policy, as ask --index: LEXICAL_POLICY_V1 ([C<n>] markers) for this bundle.
    path = retrieved.with_name("default.txt")
    path.write_text(f"{CLAIM} [C0]", encoding="utf-8")
    done = _groundlock("validate", "--bundle", str(retrieved), "--answer-file", str(path))
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "Grounded: yes (OK)")
    # The policy was chosen from the bundle, so the output says which one judged.
    ruleset = load_policy(LEXICAL_POLICY).firewall_ruleset
    assert done.stdout.splitlines()[-1] == f"Policy: {LEXICAL_POLICY} (ruleset {ruleset})"
    # A policy calibrated for a neural embedding is refused, naming its lexical twin.
    neural = _validate(retrieved, f"{CLAIM} [{MANUAL_ID}]", "--policy", "SEMANTIC_ID_POLICY_V1")
    assert neural.returncode == 2
    assert POLICY in neural.stderr


def test_ask_bundle_answers_a_lexical_bundle_as_ask_index_does(retrieved: Path) -> None:
    # Under the neural default the lexical scores (0.3 to 0.6) would all fall below the
    # 0.76 gate and the answer would be a refusal; chosen from the bundle, it answers.
    done = _groundlock("ask", "--bundle", str(retrieved), "--json")
    assert done.returncode == 0, done.stderr
    response = json.loads(done.stdout)
    assert response["status"] == "OK"
    assert [c["anchor"] for c in response["citations"]][:1] == ["C0"]  # R2_POLICY_V4_LEXICAL's
    neural = _groundlock("ask", "--bundle", str(retrieved), "--policy", "SEMANTIC_ID_POLICY_V1")
    assert neural.returncode == 2
    assert POLICY in neural.stderr  # its lexical twin, named


def test_validate_refuses_an_answer_file_over_one_mebibyte(retrieved: Path) -> None:
    # Refused before it is read whole or judged: exit 2, the reason said.
    path = retrieved.with_name("huge.txt")
    path.write_text(f"{CLAIM} [{MANUAL_ID}] " * 12_000, encoding="utf-8")  # about 1.4 MB
    done = _groundlock("validate", "--bundle", str(retrieved), "--answer-file", str(path))
    assert done.returncode == 2
    assert "an answer of more than 1,048,576 bytes" in done.stderr
    path.write_text(f"{CLAIM} [{MANUAL_ID}]\r\n", encoding="utf-8")  # a CRLF file still reads
    ok = _groundlock("validate", "--bundle", str(retrieved), "--answer-file", str(path),
                     "--policy", POLICY)  # fmt: skip
    assert ok.returncode == 0, ok.stdout
