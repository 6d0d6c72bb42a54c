"""Knowledge from outside the evidence is rejected under every current policy (spec 002).

002 lists "Section 420 is commonly known as..." and "Based on general knowledge..." as
invalid answers (prior knowledge). The rulesets of the current policies (``firewall_v4``,
``semantic_id_v2``, ``cit_label_v2``, ``source_page_v3``) turn on ``outside_knowledge``:
rule ``meta_commentary`` rejects a sentence that claims knowledge from outside its sources,
on that sentence. The earlier versions keep their verdicts (stored answers name them).

Each answer below is otherwise grounded in the entry it cites, so a rejection is the frame's.
The correct sentences use the same words (general, common, known as, called, outside,
although) as the matter of the answer or as a quote of the evidence. Expected verdicts are
written out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundlock import ReasonCode, ValidationStatus, load_policy, validate_text
from tests.builders import make_bundle, make_row

CURRENT = ("R2_POLICY_V4", "SEMANTIC_ID_POLICY_V2", "CIT_LABEL_POLICY_V2", "SOURCE_PAGE_POLICY_V3")
"""The policy to pick for new work of each kind, one per marker form."""
EARLIER = ("R2_POLICY_V3", "SEMANTIC_ID_POLICY_V1", "CIT_LABEL_POLICY_V1", "SOURCE_PAGE_POLICY_V2")
"""Their predecessors, whose verdicts are frozen."""

PENALTY = (
    "420. Fraudulent inducement. (1) A person who deceives another and thereby dishonestly "
    "induces that person to deliver property, or to sign a document that can be converted "
    "into property, commits fraudulent inducement. (2) Fraudulent inducement is punishable by "
    "imprisonment for a term of up to seven years, and the court may also impose a fine."
)
PROSECUTION = (
    "(3) A prosecution for fraudulent inducement must be commenced within six years after the "
    "property was delivered or the document was signed."
)
NAMES = (
    "Fraudulent inducement is commonly referred to by practitioners as cheating. In the "
    "nineteenth century the offence was popularly called the confidence trick."
)
INTERPRETERS = (
    "The general knowledge test for court interpreters has 40 questions. It is common knowledge "
    "among practitioners that first offenders rarely receive the maximum term. Interpreters "
    'may not work outside the court building. Interpreters call their oath "the promise of '
    'fidelity".'
)
ROWS = [
    # (semantic id, file, page, text)
    ("PenalCode_420_0", "penal-code.pdf", 112, PENALTY),
    ("PenalCode_420_1", "penal-code.pdf", 113, PROSECUTION),
    ("Commentary_12_0", "criminal-law-commentary.pdf", 40, NAMES),
    ("CourtRules_7_0", "court-interpreter-rules.pdf", 7, INTERPRETERS),
]


def _bundle() -> dict[str, Any]:
    rows = [
        make_row(rank, chunk_id=f"row-{rank}", semantic_id=sid, knowledge_id=f"DOC-{rank}",
                 document_id=f"DOC-{rank}", citation_label=f"{file} p. {page}",
                 source_file=file, page=page, knowledge_type_effective="REGULATION",
                 similarity=0.93 - rank * 0.01, chunk_text=text)
        for rank, (sid, file, page, text) in enumerate(ROWS)
    ]  # fmt: skip
    question = "What is the penalty for fraudulent inducement, and what is it called?"
    return make_bundle(rows, user_question=question)


def _marker(policy: str, row: int) -> str:
    """The marker of ``ROWS[row]`` in the policy's citation form."""
    sid, file, page, _ = ROWS[row]
    if policy.startswith("SEMANTIC_ID"):
        return f"[{sid}]"
    if policy.startswith("CIT_LABEL"):
        return f"[CIT-{row + 1:02d}]"
    if policy.startswith("SOURCE_PAGE"):
        return f"[Source: {file}, p.{page}]"
    return f"[C{row}]"


SEVEN = "fraudulent inducement is punishable by imprisonment for up to seven years"
WRONG = [
    # (answer with {0}.. for the markers of rows 0.., the sentence that says it)
    (f"Based on general knowledge, {SEVEN}. {{0}}", 1),
    ("Fraudulent inducement is commonly known as cheating and is punishable by imprisonment "
     "for up to seven years. {0}", 1),
    (f"From general knowledge, {SEVEN}. {{0}}", 1),
    (f"Generally speaking, it is well known that {SEVEN}. {{0}}", 1),
    (f"Fraudulent inducement is popularly called cheating, and {SEVEN}. {{0}}", 1),
    (f"As is common knowledge, {SEVEN}. {{0}}", 1),
    (f"Outside the provided sources, {SEVEN}. {{0}}", 1),
    ("Although the documents do not say so, the court may also impose a fine. {0}", 1),
    (f"Fraudulent inducement is widely regarded as a serious offence, and {SEVEN}. {{0}}", 1),
    ("Drawing on background knowledge, a prosecution for fraudulent inducement must be "
     "commenced within six years. {1}", 1),
    ("Fraudulent inducement, better known as cheating, is punishable by imprisonment for up "
     "to seven years. {0}", 1),
    (f"The court may also impose a fine. {{0}} Also, according to common understanding, {SEVEN}. "
     f"{{0}}", 2),
    (f"As everyone knows, {SEVEN}. {{0}}", 1),
    (f"A prosecution must be commenced within six years. {{1}} As you may know, {SEVEN}. {{0}}", 2),
    ("The documents do not mention it, but the court may also impose a fine. {0}", 1),
    (f"Common sense tells us that {SEVEN}. {{0}}", 1),
    (f"Fraudulent inducement is known colloquially as cheating, and {SEVEN}. {{0}}", 1),
    (f"To the best of my knowledge, {SEVEN}. {{0}}", 1),
    (f"Beyond the given documents, {SEVEN}. {{0}}", 1),
    ("Relying on prior knowledge, a prosecution for fraudulent inducement must be commenced "
     "within six years. {1}", 1),
    (f"The common name for fraudulent inducement is cheating, and {SEVEN}. {{0}}", 1),
    (f"It is generally accepted that {SEVEN}. {{0}}", 1),
    ("Fraudulent inducement is punishable by imprisonment for up to seven years, from general "
     "knowledge. {0}", 1),
    (f"Though the sources do not state it, {SEVEN}. {{0}}", 1),
    (f"Fraudulent inducement is often dubbed cheating, and {SEVEN}. {{0}}", 1),
    (f"It is widely known that {SEVEN}. {{0}}", 1),
    (f"From my training data, {SEVEN}. {{0}}", 1),
    (f"In my experience, {SEVEN}. {{0}}", 1),
    (f"Fraudulent inducement is sometimes referred to as cheating, and {SEVEN}. {{0}}", 1),
    (f"Fraudulent inducement is what most people call cheating, and {SEVEN}. {{0}}", 1),
    (f"This is not covered in the documents, but {SEVEN}. {{0}}", 1),
    (f"The sources are silent on this, but {SEVEN}. {{0}}", 1),
    (f"Based on what is generally known, {SEVEN}. {{0}}", 1),
    (f"Independent of the retrieved passages, {SEVEN}. {{0}}", 1),
    (f"It is a well-known fact that {SEVEN}. {{0}}", 1),
    (f"According to popular belief, {SEVEN}. {{0}}", 1),
    ("Fraudulent inducement, known popularly as cheating, is punishable by imprisonment for "
     "up to seven years. {0}", 1),
    # A quoted name the cited entry does not give.
    ("The interpreter's oath is widely known as \"the solemn pledge\". {3}", 1),
]  # fmt: skip
RIGHT = [
    f"{SEVEN.capitalize()}. {{0}}",
    # Quotes of the evidence: a phrase the cited entry itself contains.
    "Fraudulent inducement is commonly referred to by practitioners as cheating. {2}",
    "In the nineteenth century the offence was popularly called the confidence trick. {2}",
    "It is common knowledge among practitioners that first offenders rarely receive the "
    "maximum term. {3}",
    # A claim of how the offence is called, where the cited entry says how it is called.
    "Fraudulent inducement is commonly known as cheating. {2}",
    "Practitioners often call fraudulent inducement cheating. {2}",
    # The words as the matter of the answer.
    "The general knowledge test for court interpreters has 40 questions. {3}",
    "In the general knowledge test for court interpreters, there are 40 questions. {3}",
    "The offence is also known as cheating. {2}",
    "Although the court may also impose a fine, fraudulent inducement is punishable by "
    "imprisonment for up to seven years. {0}",
    "Interpreters may not work outside the court building. {3}",
    "Candidates with general knowledge of the rules take a test of 40 questions. {3}",
    "Fraudulent inducement is commonly called cheating. {2}",
    # "My sources" and "my information" are the passages a model cites (generative search
    # engines write it so), as firewall_v3's frames read "my" + the evidence's names.
    f"According to my sources, {SEVEN}. {{0}}",
    f"Based on my information, {SEVEN}. {{0}}",
    # A name in quotation marks that the cited entry quotes: the evidence's own name.
    'The interpreter\'s oath is widely known as "the promise of fidelity". {3}',
    "While a person who deceives another commits fraudulent inducement, a prosecution must be "
    "commenced within six years. {0}{1}",
    "A person who deceives another and thereby dishonestly induces that person to deliver "
    "property commits fraudulent inducement; the offence is commonly referred to by "
    "practitioners as cheating. {0}{2}",
]


def _answer(policy: str, template: str) -> str:
    return template.format(*(_marker(policy, row) for row in range(len(ROWS))))


@pytest.mark.parametrize("policy", CURRENT)
@pytest.mark.parametrize(("template", "sentence"), WRONG)
def test_a_claim_of_outside_knowledge_is_rejected_on_its_sentence(
    policy: str, template: str, sentence: int
) -> None:
    verdict = validate_text(_answer(policy, template), _bundle(), policy)
    assert verdict.validation_status is ValidationStatus.FAILED
    meta = [f for f in verdict.findings if f.reason is ReasonCode.META_COMMENTARY]
    assert [(f.sentence, f.mode) for f in meta] == [(sentence, "enforce")], meta
    # An admission that the sources do not say it is also a refusal in other words, a rule
    # the contract order puts first; every other frame fails as META_COMMENTARY.
    assert verdict.failure_reason in (ReasonCode.META_COMMENTARY, ReasonCode.INVALID_REFUSAL_FORMAT)


@pytest.mark.parametrize("policy", CURRENT)
@pytest.mark.parametrize("template", RIGHT)
def test_the_same_words_in_a_grounded_answer_pass(policy: str, template: str) -> None:
    verdict = validate_text(_answer(policy, template), _bundle(), policy)
    assert verdict.validation_status is ValidationStatus.PASSED, verdict.message


LEGAL = Path(__file__).parents[3] / "examples" / "data" / "presets" / "legal_penal_code.json"
SPEC_002 = (
    f"Based on general knowledge, {SEVEN}. [PenalCode_420_0]",
    "Fraudulent inducement is commonly known as cheating and is punishable by imprisonment for "
    "up to seven years. [PenalCode_420_0]",
)


@pytest.mark.parametrize("answer", SPEC_002)
def test_spec_002s_prior_knowledge_frames_fail_the_legal_preset_and_passed_v1(answer: str):
    bundle = json.loads(LEGAL.read_text(encoding="utf-8"))
    new = validate_text(answer, bundle, "SEMANTIC_ID_POLICY_V2")
    assert (new.validation_status, new.failure_reason) == (
        ValidationStatus.FAILED, ReasonCode.META_COMMENTARY
    )  # fmt: skip
    # SEMANTIC_ID_POLICY_V1 is frozen: stored answers it passed stay passed on replay.
    old = validate_text(answer, bundle, "SEMANTIC_ID_POLICY_V1")
    assert old.validation_status is ValidationStatus.PASSED


@pytest.mark.parametrize(("earlier", "current"), list(zip(EARLIER, CURRENT, strict=True)))
def test_the_earlier_version_lets_the_popular_name_through(earlier: str, current: str) -> None:
    """Every predecessor passed "is commonly known as"; only the new versions move."""
    answer = _answer(earlier, WRONG[1][0])
    assert validate_text(answer, _bundle(), earlier).validation_status is ValidationStatus.PASSED
    verdict = validate_text(_answer(current, WRONG[1][0]), _bundle(), current)
    assert verdict.failure_reason is ReasonCode.META_COMMENTARY


@pytest.mark.parametrize(("earlier", "current"), list(zip(EARLIER, CURRENT, strict=True)))
def test_the_new_version_differs_from_its_predecessor_only_in_its_ruleset(
    earlier: str, current: str
) -> None:
    old, new = load_policy(earlier), load_policy(current)
    own = {"policy_version", "description", "firewall_ruleset"}
    assert old.model_dump(exclude=own) == new.model_dump(exclude=own)
    assert new.ruleset.has("outside_knowledge")
    assert not old.ruleset.has("outside_knowledge")
    assert new.ruleset.rules == old.ruleset.rules
    assert dict(new.ruleset.modes) == dict(old.ruleset.modes)
    assert new.grammar is old.grammar


FROM_MID_SENTENCE = (
    "The court interpreters' test of 40 questions is drawn from general knowledge. {3}"
)


@pytest.mark.parametrize("policy", CURRENT)
def test_a_knowledge_frame_opened_by_from_counts_only_where_a_clause_begins(policy: str):
    """``outside_knowledge`` reads "from general knowledge" mid-clause as a fact.

    ``firewall_v4`` keeps ``firewall_v3``'s own source frames unchanged, and those read
    "from general knowledge" anywhere: under ``R2_POLICY_V4`` the sentence still fails, as
    under ``R2_POLICY_V3``.
    """
    verdict = validate_text(_answer(policy, FROM_MID_SENTENCE), _bundle(), policy)
    expected = ValidationStatus.FAILED if policy == "R2_POLICY_V4" else ValidationStatus.PASSED
    assert verdict.validation_status is expected
    v3 = validate_text(_answer("R2_POLICY_V3", FROM_MID_SENTENCE), _bundle(), "R2_POLICY_V3")
    assert v3.failure_reason is ReasonCode.META_COMMENTARY


# Found by an adversarial review (issue 32) --------------------------------------------------


HEADS = (
    "", "x", "x ", ", ", "and", "and ", "band ", "x and **_ ", "so", "also ", "yet\n\t ",
    "(", "( * ", "\u2014", "x\u2014 _", "but_", "a but", "butt ", " ,x ", "**", "x, y",
    "and,", "x.", "x. ", "y; z * ",
)  # fmt: skip


@pytest.mark.parametrize("head", HEADS)
def test_the_clause_start_read_backwards_is_the_pattern_read_forwards(head: str) -> None:
    # The backward read replaced a search of the whole head; it must decide as the pattern.
    from groundlock.core.firewall.rules.leaks import (  # noqa: PLC0415
        _CLAUSE_START_RE,
        _opens_a_clause,
    )

    text = head + "from general knowledge"
    expected = _CLAUSE_START_RE.search(text, 0, len(head)) is not None
    assert _opens_a_clause(text, len(head)) is expected


def _judging_seconds(answer: str, bundle: dict[str, Any]) -> float:
    """The least CPU time of three cold judgements of ``answer`` under ``R2_POLICY_V4``."""
    import time  # noqa: PLC0415

    load_policy("R2_POLICY_V4")
    best = float("inf")
    for first in ("y", "z", "w"):  # another text each time: no reading is memoised
        started = time.process_time()
        validate_text(first + answer, bundle, "R2_POLICY_V4")
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.slow
def test_a_sentence_of_repeated_clause_frames_is_judged_in_linear_time() -> None:
    # A clause frame ("from general knowledge") that the cited entry contains is no claim,
    # so the rule reads the next one: each was checked for a clause start by searching the
    # whole sentence before it, and n repeats cost n times the sentence (50 kB: 1.7 s where
    # R2_POLICY_V3 took 0.12 s; 100 kB: 6.3 s). Scaling, not a bound: twice the text takes
    # less than three times as long (quadratic is four), in CPU time, the least of three.
    row = make_row(0, chunk_text="The pump, from general knowledge of operators, runs hot.")
    bundle = make_bundle([row, make_row(1), make_row(2)])
    half, full = (", from general knowledge " * n + "[C0]" for n in (2000, 4000))
    seen = []
    for _ in range(3):
        short, long = _judging_seconds(half, bundle), _judging_seconds(full, bundle)
        seen.append(f"{short:.3f} s, {long:.3f} s")
        if long / max(short, 0.002) < 3.0:
            return
    raise AssertionError("; ".join(seen))
