"""``source_page_v2``: the file name a ``[Source: file, p.N]`` marker names is no link (issue 28).

linkify-it-py reads a bare ``crane-slew-bearing.md`` as a host (``.md`` is Moldova's
top-level domain, ``.py`` Paraguay's, ``.sh`` Saint Helena's), so ``source_page_v1`` withholds
every answer citing such a file as ``UNSAFE_OUTPUT``: every answer from an index of Markdown
files. ``source_page_v2`` (``SOURCE_PAGE_POLICY_V2``) adds ``cited_file_names``: a bare host
name found whole in an admitted row's ``source_file`` is read as quoted. Everything that can
carry data out or point elsewhere stays a link: a path, a query, a fragment, a scheme, an
e-mail address, a Markdown link, a look-alike of the name, a name no admitted row has (a
dropped row's included), and a file name that itself holds a path or a query.
"""

from __future__ import annotations

import re
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
from groundlock.core.firewall.rules.unsafe_output import unsafe_in
from groundlock.policies.ruleset import FEATURES, load_ruleset
from tests.builders import make_bundle, make_row

V1, V2 = "SOURCE_PAGE_POLICY_V1", "SOURCE_PAGE_POLICY_V2"
CRANE = "crane-slew-bearing.md"
TORQUE = "Tighten the slew bearing bolts to 1,250 Nm in a crosswise sequence."
QUESTION = "What torque do the slew bearing bolts of the crane need?"


def _bundle(file: str = CRANE, *others: tuple[str, float]) -> dict[str, Any]:
    """The crane manual's page as ``file``; ``others``: (file, similarity) of further rows."""
    rows = [
        make_row(0, chunk_id="crane-c0", knowledge_id="MM-CRANE", source_file=file, page=1,
                 knowledge_type_effective="MANUAL", similarity=0.9, chunk_text=TORQUE),
        *(
            make_row(i, chunk_id=f"other-c{i}", knowledge_id=f"OTHER-{i}", source_file=name,
                     page=1, knowledge_type_effective="MANUAL", similarity=similarity,
                     chunk_text=f"The winch drum brake is tested every {i} weeks.")
            for i, (name, similarity) in enumerate(others, start=1)
        ),
    ]  # fmt: skip
    return make_bundle(rows, user_question=QUESTION)


def _judged(
    answer: str, policy: str = V2, bundle: dict[str, Any] | None = None
) -> ValidationResult:
    return validate_text(answer, bundle or _bundle(), policy)


def _assert_unsafe(result: ValidationResult) -> None:
    assert result.failure_reason is ReasonCode.UNSAFE_OUTPUT, result.message
    assert result.validation_status is ValidationStatus.FAILED
    assert result.validated_answer_text == ""


def test_source_page_v2_is_source_page_v1_with_cited_file_names():
    v1, v2 = load_ruleset("source_page_v1"), load_ruleset("source_page_v2")
    assert (v2.grammar, v2.rules, v2.modes, v2.params, v2.files) == (
        v1.grammar, v1.rules, v1.modes, v1.params, v1.files,
    )  # fmt: skip
    assert v2.features - v1.features == {"cited_file_names"}
    assert "cited_file_names" in FEATURES
    assert not v1.has("cited_file_names")


@pytest.mark.parametrize(
    "file", [CRANE, "Crane-Slew-Bearing.MD", "setup.py", "run.sh", "pump manual v2.md"]
)
def test_an_answer_citing_a_file_named_like_a_host_passes_under_v2_only(file: str) -> None:
    answer = f"{TORQUE} [Source: {file}, p.1]"
    bundle = _bundle(file)
    passed = _judged(answer, V2, bundle)
    assert passed.validation_status is ValidationStatus.PASSED, passed.message
    assert passed.validated_citations == ("C0",)
    assert passed.validated_answer_text == answer
    assert passed.firewall_ruleset == "source_page_v2"
    _assert_unsafe(_judged(answer, V1, bundle))  # V1 judges as it always did


def test_the_offline_chain_answers_from_a_markdown_file_under_v2() -> None:
    v2 = grounded_answer_chain(policy=V2).invoke(_bundle())
    assert (v2.status, v2.answer) == (GenerationStatus.OK, f"{TORQUE} [Source: {CRANE}, p.1]")
    assert [c.anchor for c in v2.citations] == [f"Source: {CRANE}, p.1"]
    v1 = grounded_answer_chain(policy=V1).invoke(_bundle())
    assert (v1.status, v1.failure_reason) == (GenerationStatus.FAILED, "UNSAFE_OUTPUT")


@pytest.mark.parametrize(
    "link",
    [
        f"{CRANE}/x",  # a path
        f"{CRANE}/?d=secret",
        f"{CRANE}?d=1",  # a query
        f"{CRANE}#bolts",  # a fragment
        f"http://{CRANE}",  # a scheme
        f"https://{CRANE}/bolts",
        f"ops@{CRANE}",  # an e-mail address
        f"[the manual]({CRANE})",  # a Markdown link
        "cr\u0430ne-slew-bearing.md",  # a Cyrillic a: another host
        "evil.md",  # a host no admitted row names
        f"bearing-{CRANE}",
    ],
)
def test_a_link_made_of_or_beside_an_admitted_file_name_is_still_unsafe(link: str) -> None:
    _assert_unsafe(_judged(f"Tighten the slew bearing bolts to 1,250 Nm ({link}). "
                           f"[Source: {CRANE}, p.1]"))  # fmt: skip


def test_a_host_inside_an_admitted_file_name_is_not_that_name() -> None:
    """Whole, not a part: ``evil.md`` is a link beside an admitted ``devil.md``."""
    bundle = _bundle("devil.md")
    assert _judged(f"{TORQUE} [Source: devil.md, p.1]", V2, bundle).failure_reason is None
    _assert_unsafe(_judged(f"{TORQUE} (evil.md) [Source: devil.md, p.1]", V2, bundle))


def test_the_file_name_of_a_row_r2_dropped_is_still_a_link() -> None:
    answer = f"{TORQUE} (evil.md) [Source: {CRANE}, p.1]"
    admitted = _judged(answer, V2, _bundle(CRANE, ("evil.md", 0.85)))
    assert admitted.failure_reason is not ReasonCode.UNSAFE_OUTPUT, admitted.message
    _assert_unsafe(_judged(answer, V2, _bundle(CRANE, ("evil.md", 0.5))))  # below the floor


@pytest.mark.parametrize("file", ["evil.com/steal?x=", "evil.md?d=1", "evil.md#top"])
@pytest.mark.parametrize(
    "answer",
    [
        "{TORQUE} [Source: {file}, p.1]",
        "{TORQUE} ({file}bolts) [Source: {CRANE}, p.1]",
        "{TORQUE} ({host}) [Source: {CRANE}, p.1]",  # a part of the name, not the name
    ],
    ids=["its-marker", "its-name-with-data", "a-host-in-its-name"],
)
def test_an_admitted_file_name_holding_a_link_exempts_nothing(file: str, answer: str) -> None:
    """An attacker's admitted document named ``evil.com/steal?x=`` cannot make a link pass."""
    host = re.split(r"[/?#]", file, maxsplit=1)[0]
    text = answer.format(TORQUE=TORQUE, CRANE=CRANE, file=file, host=host)
    _assert_unsafe(_judged(text, V2, _bundle(CRANE, (file, 0.85))))


def test_unsafe_in_reads_file_names_only_under_a_ruleset_with_the_feature() -> None:
    text = f"{TORQUE} [Source: {CRANE}, p.1]"
    for name in ("firewall_v2", "firewall_v3", "source_page_v1"):
        assert unsafe_in(text, load_ruleset(name), file_names=[CRANE]) == "a link", name
    v2 = load_ruleset("source_page_v2")
    assert unsafe_in(text, v2, file_names=[CRANE]) is None
    assert unsafe_in(text, v2) == "a link"
    assert unsafe_in(f"{text} {CRANE}?d=1", v2, file_names=[CRANE]) == "a link"
