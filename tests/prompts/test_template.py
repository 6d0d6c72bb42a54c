"""The frozen template contract: five sections, three placeholders, a hash lock."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from groundlock import PromptTemplateError, load_template
from groundlock.prompts import template as template_module
from groundlock.prompts.template import (
    FENCE_TAG_NAMES,
    HISTORY_FENCE_TAG_NAMES,
    OPTIONAL_SECTIONS,
    SECTION_ORDER,
    parse_template,
)

FOLDER = Path(template_module.__file__).parent
TEXT = (FOLDER / "prompt_template_v1.txt").read_text(encoding="utf-8")


def test_v1_has_the_five_sections_in_001_order():
    template = load_template("prompt_template_v1")
    assert [(s.name, s.role) for s in template.sections] == [
        order for order in SECTION_ORDER if order[0] not in OPTIONAL_SECTIONS
    ]
    assert [s.placeholder for s in template.sections] == [
        None, "refusal", "evidence_block", "user_question", None,
    ]  # fmt: skip
    assert all(name in FENCE_TAG_NAMES + HISTORY_FENCE_TAG_NAMES for name, _ in SECTION_ORDER)


def test_v1_spells_out_the_citation_syntax_the_validator_enforces():
    assert "[C0]" in TEXT
    assert "[C0][C2], never as [C0, C2]" in TEXT
    assert "capital C" in TEXT


def _swap_first_two_sections(text: str) -> str:
    return text.replace("<system>\n", "<rules>\n", 1).replace("<rules>\n1.", "<system>\n1.")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("<rules>\n", "<rulez>\n"), "section <rules>"),
        (lambda t: t.replace("{{refusal}}", "{{refusal}} {{extra}}"), "placeholders"),
        (lambda t: t.replace("{{user_question}}\n", "{{user_question}}?\n"), "must end its line"),
        (lambda t: t.replace("</output_rules>\n", "</output_rules>\ntrailing\n"), "outside"),
        (lambda t: t.replace("===== USER MESSAGE =====\n", ""), "separator"),
        (lambda t: t.replace("<question>\n", "<question>\n<question>\n"), "section <question>"),
        (_swap_first_two_sections, "section <system>"),
    ],
    ids=["renamed", "unknown placeholder", "placeholder mid-line", "text outside",
         "no separator", "duplicate header", "reordered"],
)  # fmt: skip
def test_template_breaking_the_contract_is_refused(edit, message: str):
    with pytest.raises(PromptTemplateError, match=message):
        parse_template("broken", edit(TEXT))


def test_edited_template_file_refuses_to_load(tmp_path: Path, monkeypatch):
    shutil.copy(FOLDER / "prompt_template_v1.sha256", tmp_path / "prompt_template_v1.sha256")
    (tmp_path / "prompt_template_v1.txt").write_text(
        TEXT.replace("plain sentences", "brief sentences"), encoding="utf-8"
    )
    monkeypatch.setattr(template_module.resources, "files", lambda _package: tmp_path)
    load_template.cache_clear()
    try:
        with pytest.raises(PromptTemplateError, match="does not match its recorded sha256"):
            load_template("prompt_template_v1")
    finally:
        load_template.cache_clear()


def test_unknown_template_version_is_refused():
    with pytest.raises(PromptTemplateError, match="cannot read template"):
        load_template("prompt_template_v9")
    with pytest.raises(PromptTemplateError, match="not a template version"):
        load_template("../etc/passwd")


V2 = (FOLDER / "prompt_template_source_page_v2.txt").read_text(encoding="utf-8")
HISTORY_LINE = "===== HISTORY MESSAGES =====\n"
HISTORY_SECTION = "<history>\n{{history_block}}</history>\n"


def test_source_page_v2_lays_history_out_as_messages_with_no_history_section():
    template = load_template("prompt_template_source_page_v2")
    assert template.history_messages
    assert template.has_history
    assert [s.name for s in template.sections] == [
        "system", "rules", "evidence", "question", "output_rules",
    ]  # fmt: skip
    v1 = load_template("prompt_template_source_page_v1")
    assert (v1.history_messages, v1.has_history) == (False, True)
    assert not load_template("prompt_template_v1").has_history


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace(HISTORY_LINE, HISTORY_LINE * 2), "history-messages line"),
        (lambda t: t.replace(HISTORY_LINE, "").replace("<system>\n", HISTORY_LINE + "<system>\n"),
         "history-messages line"),
        (lambda t: t.replace("</evidence>\n", "</evidence>\n" + HISTORY_SECTION), "not both"),
    ],
    ids=["twice", "not before the user message", "and a history section"],
)  # fmt: skip
def test_a_history_messages_template_breaking_the_contract_is_refused(edit, message: str):
    assert parse_template("fine", V2).history_messages
    with pytest.raises(PromptTemplateError, match=message):
        parse_template("broken", edit(V2))
