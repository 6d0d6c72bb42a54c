"""R5 under each preset: the firewall's tests of ``[C<n>]``, in the preset's own grammar.

Each answer is judged by :func:`groundlock.validate_text` over the preset's own realistic
bundle (statute sections for ``[semantic_id]``, compliance controls for ``[CIT-NN]``,
paged manuals for ``[Source: file, p.N]``), i.e. through the real R2 and R3 the chain runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundlock import (
    GenerationStatus,
    ReasonCode,
    ValidationResult,
    ValidationStatus,
    grounded_answer_chain,
    validate_text,
)
from tests.builders import make_bundle, make_row
from tests.presets.corpus import (
    ACCESS_REVIEW,
    AMM,
    CASES,
    CIT,
    CMM,
    DEFAULT,
    FILTER_INTERVAL,
    ICA_73,
    IPC_420,
    KEY_ROTATION,
    LOG_RETENTION,
    MWA_12,
    PRESETS,
    REFUSALS,
    RESERVOIR,
    SEMANTIC,
    SHAFT_SEAL,
    SOURCE,
)

RULESETS = {SEMANTIC: "semantic_id_v1", CIT: "cit_label_v1", SOURCE: "source_page_v1"}

# One correctly cited sentence per preset, the base that malformed and invalid markers join.
BASE = {
    SEMANTIC: f"{IPC_420} [IPC_420_0]",
    CIT: f"{ACCESS_REVIEW} [CIT-01]",
    SOURCE: f"{FILTER_INTERVAL} [Source: {AMM}, p.14]",
}


def judged(policy: str, answer: str) -> ValidationResult:
    """R5's verdict on ``answer`` over the preset's own bundle."""
    return validate_text(answer, CASES[policy].bundle(), policy)


def assert_rejected(result: ValidationResult, reason: ReasonCode) -> None:
    assert result.failure_reason is reason, result.message
    assert result.validation_status is ValidationStatus.FAILED
    assert result.generation_status is GenerationStatus.FAILED
    assert result.validated_answer_text == ""
    assert result.validated_citations == ()


def _cases(table: dict[str, list[str]]) -> list[pytest.ParameterSet]:
    return [
        pytest.param(policy, shape, id=f"{policy.split('_')[0].lower()}-{shape}")
        for policy, shapes in table.items()
        for shape in shapes
    ]


# Refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", PRESETS)
@pytest.mark.parametrize("padding", ["", "  ", "\n"], ids=["exact", "spaces", "newline"])
def test_the_exact_refusal_passes_as_no_evidence(policy: str, padding: str) -> None:
    text = f"{padding}{REFUSALS[policy]}{padding}"
    result = judged(policy, text)
    assert result.validation_status is ValidationStatus.PASSED, result.message
    assert result.generation_status is GenerationStatus.NO_EVIDENCE
    assert result.grounding_metrics.refusal_detected
    assert result.validated_citations == ()
    assert result.validated_answer_text == text  # accepted as is, never rewritten
    assert result.firewall_ruleset == RULESETS[policy]


def _variants(policy: str) -> list[str]:
    refusal = REFUSALS[policy]
    others = [REFUSALS[other] for other in (*PRESETS, DEFAULT) if other != policy]
    return [
        refusal.lower(),
        refusal.upper(),
        refusal.rstrip("."),
        refusal + " Please ask again.",
        f'"{refusal}"',
        f"{BASE[policy]}\n{refusal}",
        "I don't know.",
        *others,  # another policy's refusal is not this policy's
    ]


@pytest.mark.parametrize(
    ("policy", "text"),
    [pytest.param(p, t, id=f"{p.split('_')[0].lower()}-{i}") for p in PRESETS
     for i, t in enumerate(_variants(p))],
)  # fmt: skip
def test_a_refusal_that_is_not_exactly_the_presets_fails(policy: str, text: str) -> None:
    assert_rejected(judged(policy, text), ReasonCode.INVALID_REFUSAL_FORMAT)


@pytest.mark.parametrize(
    ("policy", "text"),
    [
        (SEMANTIC, "I can't answer based on the provided documents."),
        (SEMANTIC, "I cannot answer based on the documents provided."),
        (CIT, "INSUFFICIENT_CONTEXT: The context does not contain enough information."),
        (CIT, "The provided context does not contain enough information to answer this question."),
        (SOURCE, "I couldn't find this in your documents."),
        (SOURCE, "I could not find this in the documents."),
    ],
)
def test_a_paraphrase_of_the_presets_refusal_fails(policy: str, text: str) -> None:
    assert_rejected(judged(policy, text), ReasonCode.INVALID_REFUSAL_FORMAT)


# Malformed markers ---------------------------------------------------------------------------

MALFORMED = {
    SEMANTIC: [
        "(IPC_420_0)",
        "(ica-s73-c0)",
        "[IPC_420_0, MinimumWagesAct_12_1]",
        "[IPC_420_0; ica-s73-c0]",
        "[IPC_420_0 MinimumWagesAct_12_1]",
        "[ IPC_420_0 ]",
        "\u3010IPC_420_0\u3011",
        "\uff3bIPC_420_0\uff3d",
        "{IPC_420_0}",
    ],
    CIT: [
        "[CIT-1]",
        "[cit-01]",
        "(CIT-01)",
        "CIT-01",
        "CIT-01]",
        "[CIT-01",
        "[CIT-01, CIT-02]",
        "[CIT-01\u2013CIT-03]",
        "[CIT 01]",
        "[CIT #1]",
        "\u3010CIT-01\u3011",
        "\uff3bCIT-01\uff3d",
        "[\u0421IT-01]",  # a Cyrillic capital es for the C
        "[CIT\u201101]",  # a non-breaking hyphen
        "{CIT-01}",
    ],
    SOURCE: [
        f"[{AMM}, p.14]",
        f"[Source: {AMM}]",
        f"[source: {AMM}, p.14]",
        f"[Source {AMM}, p.14]",
        f"[Source:{AMM}, p.14]",
        f"(Source: {AMM}, p.14)",
        f"{{Source: {AMM}, p.14}}",
        f"({AMM}, p.14)",
        f"[Source: {AMM}, page 14]",
        f"[Source: {AMM}, pg. 14]",
        f"[Source: {AMM}, p. 14]",
        f"[Source: {AMM}, p.14, p.15]",
        f"[Source: {AMM}, p.14; {CMM}, p.3]",
        "[p.14]",
    ],
}


@pytest.mark.parametrize(("policy", "shape"), _cases(MALFORMED))
def test_every_malformed_marker_shape_is_rejected(policy: str, shape: str) -> None:
    result = judged(policy, f"{BASE[policy]} {shape}")
    assert_rejected(result, ReasonCode.MALFORMED_CITATION)
    assert result.grounding_metrics.malformed_anchor_count == 1


@pytest.mark.parametrize(
    ("policy", "answer"),
    [
        (SEMANTIC, f"{IPC_420} (IPC_420_0)"),
        (CIT, f"{ACCESS_REVIEW} [cit-01]"),
        (SOURCE, f"{FILTER_INTERVAL} [source: {AMM}, p.14]"),
    ],
)
def test_a_malformed_marker_alone_is_malformed_not_uncited(policy: str, answer: str) -> None:
    result = judged(policy, answer)
    assert_rejected(result, ReasonCode.MALFORMED_CITATION)
    assert result.grounding_metrics.uncited_sentence_count == 1  # still measured


# Invalid references: well-formed markers that name no admitted entry ------------------------

INVALID = {
    SEMANTIC: [
        "[ipc_420_0]",  # exact matching: no case folding
        "[IPC_421_0]",
        "[IPC_420]",  # no prefix match
        "[IPC_420_0_1]",
        "[ipc-s420-c0]",  # the chunk_id of a row that has a semantic_id
        "[MinimumWagesAct_2_1]",  # the template's example, not an admitted id
    ],
    CIT: ["[CIT-00]", "[CIT-04]", "[CIT-07]", "[CIT-99]"],  # three entries admitted
    SOURCE: [
        f"[Source: {AMM}, p.16]",  # no such page admitted
        f"[Source: {AMM}, p.3]",  # the page of another file: no page-only match
        f"[Source: {CMM}, p.14]",  # another admitted file with this page
        f"[Source: {AMM}, p.014]",
        "[Source: TUG-AMM-29-11-00.pdf, p.14]",  # no case folding
        "[Source: amm-29-11-00.pdf, p.14]",  # no substring match
        "[Source: tug-amm-29-11-00, p.14]",
    ],
}


@pytest.mark.parametrize(("policy", "marker"), _cases(INVALID))
def test_a_marker_naming_no_admitted_entry_is_an_invalid_reference(
    policy: str, marker: str
) -> None:
    result = judged(policy, f"{BASE[policy]} {marker}")
    assert_rejected(result, ReasonCode.INVALID_CITATION_REFERENCE)
    assert result.grounding_metrics.invalid_anchor_count == 1


# Uncited, misattributed and unsupported sentences -------------------------------------------

UNCITED = {
    SEMANTIC: f"{BASE[SEMANTIC]}\n{MWA_12}",
    CIT: f"{BASE[CIT]}\n{KEY_ROTATION}",
    SOURCE: f"{BASE[SOURCE]}\n{RESERVOIR}",
}


@pytest.mark.parametrize("policy", PRESETS)
def test_a_sentence_without_a_marker_is_uncited(policy: str) -> None:
    result = judged(policy, UNCITED[policy])
    assert_rejected(result, ReasonCode.UNCITED_FACTUAL_STATEMENT)
    assert result.grounding_metrics.uncited_sentence_count == 1


@pytest.mark.parametrize(
    ("policy", "answer", "reason"),
    [
        # A value of one entry cited to another: misattribution.
        (SEMANTIC, f"{IPC_420} [ica-s73-c0]", ReasonCode.MISATTRIBUTED_CITATION),
        (CIT, f"{ACCESS_REVIEW} [CIT-02]", ReasonCode.MISATTRIBUTED_CITATION),
        (CIT, f"{ACCESS_REVIEW} [CIT-03]", ReasonCode.MISATTRIBUTED_CITATION),
        (SOURCE, f"{FILTER_INTERVAL} [Source: {CMM}, p.3]", ReasonCode.MISATTRIBUTED_CITATION),
        # Cited to an entry it shares no word with: unsupported.
        (SEMANTIC, f"{IPC_420} [MinimumWagesAct_12_1]", ReasonCode.UNSUPPORTED_STATEMENT),
        (SOURCE, f"{FILTER_INTERVAL} [Source: {AMM}, p.15]", ReasonCode.UNSUPPORTED_STATEMENT),
    ],
    ids=["semantic-value", "cit-value-02", "cit-value-03", "source-value",
         "semantic-no-word", "source-same-file-other-page"],
)  # fmt: skip
def test_the_marker_of_the_wrong_entry_fails(policy: str, answer: str, reason: ReasonCode) -> None:
    assert_rejected(judged(policy, answer), reason)


@pytest.mark.parametrize(
    ("policy", "answer"),
    [
        (SEMANTIC, IPC_420.replace("seven years", "ten years") + " [IPC_420_0]"),
        (CIT, ACCESS_REVIEW.replace("90 days", "60 days") + " [CIT-01]"),
        (CIT, LOG_RETENTION.replace("365 days", "180 days") + " [CIT-03]"),
        (SOURCE, FILTER_INTERVAL.replace("600", "500") + f" [Source: {AMM}, p.14]"),
        (SOURCE, SHAFT_SEAL.replace("200", "2,000") + f" [Source: {CMM}, p.3]"),
    ],
)
def test_a_changed_value_is_unsupported(policy: str, answer: str) -> None:
    assert_rejected(judged(policy, answer), ReasonCode.UNSUPPORTED_VALUE)


# Correct answers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "answer", "keys"),
    [
        (SEMANTIC, f"{IPC_420} [IPC_420_0]\n{ICA_73} [ica-s73-c0]", ("C0", "C2")),
        (SEMANTIC, f"{IPC_420} [IPC_420_0][MinimumWagesAct_12_1]", ("C0", "C1")),
        (SEMANTIC, f"{ICA_73} [ica-s73-c0]", ("C2",)),  # a row cited by its chunk_id
        (CIT, f"{ACCESS_REVIEW} [CIT-01]\n{LOG_RETENTION} [CIT-03]", ("C0", "C2")),
        (CIT, f"{KEY_ROTATION} [CIT-02]\n{ACCESS_REVIEW} [CIT-01]", ("C1", "C0")),
        (SOURCE, f"{FILTER_INTERVAL} [Source: {AMM}, p.14]\n{SHAFT_SEAL} [Source: {CMM}, p.3]",
         ("C0", "C2")),
        (SOURCE, f"{RESERVOIR} [Source: {AMM}, p.15][Source: {CMM}, p.3]", ("C1", "C2")),
    ],
    ids=["semantic-two", "semantic-adjacent", "semantic-chunk-id", "cit-two", "cit-order",
         "source-two", "source-adjacent"],
)  # fmt: skip
def test_an_answer_citing_in_the_presets_grammar_passes(
    policy: str, answer: str, keys: tuple[str, ...]
) -> None:
    result = judged(policy, answer)
    assert result.validation_status is ValidationStatus.PASSED, result.message
    assert result.generation_status is GenerationStatus.OK
    assert result.failure_reason is None
    assert result.validated_citations == keys
    assert result.validated_answer_text == answer
    assert result.firewall_ruleset == RULESETS[policy]


TWO = {
    SEMANTIC: ((IPC_420, "[IPC_420_0]"), (ICA_73, "[ica-s73-c0]")),
    CIT: ((ACCESS_REVIEW, "[CIT-01]"), (LOG_RETENTION, "[CIT-03]")),
    SOURCE: ((FILTER_INTERVAL, f"[Source: {AMM}, p.14]"), (SHAFT_SEAL, f"[Source: {CMM}, p.3]")),
}


@pytest.mark.parametrize("policy", PRESETS)
@pytest.mark.parametrize(
    "layout",
    ["before-the-end-mark", "bullets", "numbered", "one-line"],
)
def test_where_a_marker_stands_in_its_sentence_does_not_matter(policy: str, layout: str) -> None:
    (first, one), (second, two) = TWO[policy]
    answer = {
        "before-the-end-mark": f"{first[:-1]} {one}. {second[:-1]} {two}!",
        "bullets": f"- {first} {one}\n- {second} {two}",
        "numbered": f"1. {first} {one}\n2. {second} {two}",
        "one-line": f"{first} {one} {second} {two}",
    }[layout]
    result = judged(policy, answer)
    assert result.validation_status is ValidationStatus.PASSED, result.message
    assert result.validated_citations == ("C0", "C2")
    assert result.grounding_metrics.sentence_count == 2


@pytest.mark.parametrize("policy", PRESETS)
def test_a_citation_list_in_the_presets_markers_must_agree_with_the_answer(policy: str) -> None:
    (first, one), (second, two) = TWO[policy]
    answer = f"{first} {one}\n{second} {two}"
    agreeing = judged(policy, f"{answer}\nSources: {one}, {two}")
    assert agreeing.validation_status is ValidationStatus.PASSED, agreeing.message
    assert agreeing.grounding_metrics.sentence_count == 2  # the list is not a sentence
    assert_rejected(judged(policy, f"{answer}\nSources: {one}"), ReasonCode.CITATION_MISMATCH)


def test_one_marker_for_two_chunks_of_a_page_cites_both_and_is_listed_once() -> None:
    second = "Torque the filter bowl to 45 Nm and safety-wire it to the filter housing."
    rows = [
        make_row(0, chunk_id="amm-p14-c0", knowledge_id="TUG-AMM-29-11-00", source_file=AMM,
                 page=14, knowledge_type_effective="MANUAL", chunk_text=FILTER_INTERVAL),
        make_row(1, chunk_id="amm-p14-c1", knowledge_id="TUG-AMM-29-11-00", source_file=AMM,
                 page=14, knowledge_type_effective="MANUAL", chunk_text=second),
    ]  # fmt: skip
    bundle = make_bundle(
        rows, user_question="What torque is applied to the filter bowl before it is safety-wired?"
    )
    answer = f"Torque the filter bowl to 45 Nm. [Source: {AMM}, p.14]"
    result = validate_text(answer, bundle, SOURCE)
    assert result.validation_status is ValidationStatus.PASSED, result.message
    assert result.validated_citations == ("C0", "C1")
    response = grounded_answer_chain(policy=SOURCE).invoke(bundle)
    assert response.status is GenerationStatus.OK, response.failure_reason
    assert response.answer == f"{second} [Source: {AMM}, p.14]"
    assert [c.anchor for c in response.citations] == [f"Source: {AMM}, p.14"]


# Markers of other grammars are not citations -------------------------------------------------

FOREIGN = {
    # A well-formed [semantic_id] that names no admitted id: an invalid reference.
    (SEMANTIC, "[C0]"): ReasonCode.INVALID_CITATION_REFERENCE,
    (SEMANTIC, "[CIT-01]"): ReasonCode.INVALID_CITATION_REFERENCE,
    (SEMANTIC, f"[Source: {AMM}, p.14]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (CIT, "[C0]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (CIT, "[ISO27001_A_9_2_5]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (CIT, "[Source: iso-27001-annex-a.pdf, p.12]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (SOURCE, "[C0]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (SOURCE, "[AMM_29_11_00_P14]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (SOURCE, "[CIT-01]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (DEFAULT, "[AMM_29_11_00_P14]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (DEFAULT, "[CIT-01]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
    (DEFAULT, f"[Source: {AMM}, p.14]"): ReasonCode.UNCITED_FACTUAL_STATEMENT,
}
SENTENCE = {
    SEMANTIC: IPC_420,
    CIT: ACCESS_REVIEW,
    SOURCE: FILTER_INTERVAL,
    DEFAULT: FILTER_INTERVAL,
}


@pytest.mark.parametrize(
    ("policy", "marker"), [pytest.param(p, m, id=f"{p}-{m}") for p, m in FOREIGN]
)
def test_a_marker_of_another_grammar_cites_nothing(policy: str, marker: str) -> None:
    # Each of these rows carries every field, so the marker would be right under its own
    # preset: here it names nothing.
    result = judged(policy, f"{SENTENCE[policy]} {marker}")
    assert_rejected(result, FOREIGN[(policy, marker)])


VANE = "Figure 4 shows a worn vane as an example. Use a new vane kit when the wear exceeds 0.2 mm."


def _vane(file: str, page: int) -> tuple[dict[str, Any], str]:
    """A manual page, and the answer (the offline model's) quoting both its sentences."""
    row = make_row(0, chunk_id="pm-c0", knowledge_id="PUMP-MANUAL", source_file=file, page=page,
                   knowledge_type_effective="MANUAL", chunk_text=VANE)  # fmt: skip
    question = "Which figure shows a worn vane as an example, and when is a new kit used?"
    marker = f"[Source: {file}, p.{page}]"
    answer = (
        f"Figure 4 shows a worn vane as an example. {marker}\n"
        f"Use a new vane kit when the wear exceeds 0.2 mm. {marker}"
    )
    return make_bundle([row], user_question=question), answer


def _assert_cited(file: str, page: int) -> None:
    bundle, answer = _vane(file, page)
    result = validate_text(answer, bundle, SOURCE)
    assert result.validation_status is ValidationStatus.PASSED, result.message
    assert result.validated_citations == ("C0",)
    response = grounded_answer_chain(policy=SOURCE).invoke(bundle)
    assert (response.status, response.answer) == (GenerationStatus.OK, answer)


@pytest.mark.parametrize(("file", "page"), [("pump manual.pdf", 8), ("vane-pump.pdf", 7)])
def test_a_manual_page_is_cited_whatever_its_file_is_called(file: str, page: int) -> None:
    _assert_cited(file, page)


@pytest.mark.parametrize("file", ["pump manual.pdf", "pump-manual.pdf"])
def test_a_file_named_like_the_templates_example_can_be_cited(file: str) -> None:
    """The template's example marker names page 7 of a pump manual: citing such a file is no
    repeat of the template (the preset rulesets read those repeats without markers)."""
    _assert_cited(file, 7)


# Found by an adversarial review of the grammars ------------------------------------------------

IPC = "Whoever cheats shall be punished with imprisonment which may extend to seven years"


@pytest.mark.parametrize(
    "answer",
    [
        f'"{IPC}, and shall also be liable to fine [sic]" [IPC_420_0].',
        '"[Whoever] cheats shall be punished with imprisonment" [IPC_420_0].',
        f"{IPC} [emphasis added] [IPC_420_0].",
        f"- [x] {IPC}. [IPC_420_0]",
        f"{IPC} [Repealed in part] [IPC_420_0].",
    ],
)
def test_bracketed_prose_in_legal_quoting_is_not_a_semantic_id(answer: str) -> None:
    """[sic], editorial insertions and checklists: an id holds a digit or an underscore."""
    result = judged(SEMANTIC, answer)
    assert result.validation_status is ValidationStatus.PASSED, result.message
    assert result.validated_citations == ("C0",)


@pytest.mark.parametrize(
    "lookalike",
    ["[IP\u0421_420_0]", "[\u0399PC_420_0]", "[\uff29PC_420_0]", "[ IPC_420_1 ]", "[FOO_1, BAR_2]"],
)
def test_a_look_alike_id_beside_a_valid_one_is_malformed(lookalike: str) -> None:
    """Cyrillic, Greek or fullwidth letters in an id, spaces, or a list: never prose."""
    result = judged(SEMANTIC, f"{IPC} [IPC_420_0]{lookalike}.")
    assert_rejected(result, ReasonCode.MALFORMED_CITATION)


@pytest.mark.parametrize(
    "answer",
    [
        "Privileged access rights shall be reviewed at least every 90 days, as for the CIT-8 "
        "return [CIT-01].",
        "Privileged access rights shall be reviewed at least every 90 days (op. cit. 12) [CIT-01].",
        "Privileged access rights shall be reviewed at least every 90 days for CIT 2023 [CIT-01].",
    ],
)
def test_cit_named_in_prose_is_not_a_marker(answer: str) -> None:
    """Poland's CIT-8 return, op. cit.: only a marker-shaped CIT is a malformed marker."""
    result = validate_text(answer, CASES[CIT].bundle(), CIT)
    assert result.failure_reason is not ReasonCode.MALFORMED_CITATION, result.message


@pytest.mark.parametrize("shape", ["(CIT-01)", "CIT-01", "[CIT 01]", "[CIT-01\u2013CIT-03]"])
def test_marker_shaped_cit_is_still_malformed(shape: str) -> None:
    result = validate_text(
        f"Privileged access rights shall be reviewed at least every 90 days {shape}.",
        CASES[CIT].bundle(),
        CIT,
    )
    assert_rejected(result, ReasonCode.MALFORMED_CITATION)


def test_a_file_named_in_parentheses_without_a_page_is_prose() -> None:
    """A file called Policy: ``(a policy of deterrence)`` is no citation attempt."""
    bundle = CASES[SOURCE].bundle()
    bundle["results"][0]["source_file"] = "Policy"
    answer = (
        "Replace the hydraulic return filter element every 600 flight hours (a policy of "
        "deterrence) [Source: Policy, p.14]."
    )
    result = validate_text(answer, bundle, SOURCE)
    assert result.failure_reason is not ReasonCode.MALFORMED_CITATION, result.message
    named = answer.replace("(a policy of deterrence)", "(Policy, p.14)")
    assert_rejected(validate_text(named, bundle, SOURCE), ReasonCode.MALFORMED_CITATION)


def test_two_rows_under_one_semantic_id_fail_the_input_gate() -> None:
    """One marker naming two rows would make citing the wrong one undetectable."""
    bundle = CASES[SEMANTIC].bundle()
    bundle["results"][2]["semantic_id"] = "IPC_420_0"
    result = validate_text(f"{IPC} [IPC_420_0].", bundle, SEMANTIC)
    assert_rejected(result, ReasonCode.INPUT_SCHEMA_INVALID)
    assert (result.message or "").startswith("results[2].semantic_id: 'IPC_420_0' already cites")
    # a chunk_id fallback counts too
    bundle = CASES[SEMANTIC].bundle()
    bundle["results"][0]["semantic_id"] = "ica-s73-c0"
    result = validate_text(f"{IPC} [IPC_420_0].", bundle, SEMANTIC)
    assert (result.message or "").startswith("results[2].chunk_id: 'ica-s73-c0' already cites")
