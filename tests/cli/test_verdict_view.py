"""What ``ask`` and ``validate`` print is safe to show on a terminal (an adversarial review).

The verdict's block names citations as written: a marker a model or a person wrote may
carry escape sequences (``ESC c`` resets a terminal, OSC retitles it, a carriage
return overwrites the line, U+202E reverses it), and under ``[Source: file, p.N]`` a marker
may carry a whole sentence. Printed, a control character is shown escaped (``\\x1b``), never
sent; ``ask`` shows how many invalid citations its model's rejected answer wrote, not
their text, as it already did for malformed ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.cli.verdict_view import answered, print_response
from tests.builders import distinct_text, make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

PAGES = make_bundle([make_row(i, source_file="manual.pdf", page=i + 1) for i in range(3)])
RESET, TITLE, CSI8, RLO = "\x1bc", "\x9d0", "\x9b2J", "\u202e"
HOSTILE = f"[Source: {RESET}\r{TITLE}\x07x{CSI8}{RLO}\x08, p.9]"
"""A well-formed marker naming no page of the bundle, full of terminal controls."""
WITHHELD = "[Source: The patient in bed 4 tested positive and was not told, p.9]"
"""A well-formed marker naming nothing: the rejected answer's words, in a marker."""


def _controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on (newline aside)."""
    return [c for c in text if c != "\n" and not c.isprintable()]


def test_validate_prints_no_control_character_a_marker_carries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle, answer = tmp_path / "bundle.json", tmp_path / "answer.txt"
    bundle.write_text(json.dumps(PAGES), encoding="utf-8")
    marker = HOSTILE.replace("\r", "")  # (a file's \r reads as a line break)
    answer.write_text(f"{distinct_text(0)} {marker} (Source: {RESET}, p.2)", encoding="utf-8")
    code = main(
        ["validate", "--bundle", str(bundle), "--answer-file", str(answer),
         "--policy", "SOURCE_PAGE_POLICY_V3"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert _controls(out) == []
    # shown escaped, so the reader still sees what was wrong
    assert "Invalid citations: Source: \\x1bc\\x9d0\\x07x\\x9b2J\\u202e\\x08, p.9" in out
    assert "Malformed citations: (Source: \\x1bc, p.2)" in out


@pytest.mark.parametrize("marker", [HOSTILE, WITHHELD])
def test_ask_counts_the_invalid_citations_of_a_rejected_answer(
    marker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    chain = grounded_answer_chain(
        policy="SOURCE_PAGE_POLICY_V3",
        model=ScriptedChatModel(text=f"{distinct_text(0)} {marker}"),
    )
    state, response = answered(chain, PAGES, {})
    assert response.status.value == "FAILED"
    assert state is not None
    assert state.validation.invalid_citations  # the verdict names it, as data
    print_response(response, state)
    out = capsys.readouterr().out
    assert _controls(out) == []
    assert "Invalid citations: 1" in out.splitlines()
    assert "bed 4" not in out
    assert "x" + CSI8 not in out


def test_a_passed_answers_carriage_return_is_shown_not_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A carriage return is whitespace to the validator, so an answer may pass with one; on
    # a terminal it would let the line's end overwrite its start.
    text = f"{distinct_text(0)} [C0]\r{distinct_text(1)} [C1]"
    chain = grounded_answer_chain(model=ScriptedChatModel(text=text))
    state, response = answered(chain, make_bundle(), {})
    print_response(response, state)
    out = capsys.readouterr().out
    assert _controls(out) == []
    assert f"{distinct_text(0)} [C0]\\r{distinct_text(1)} [C1]" in out


def test_a_request_that_failed_before_any_answer_was_judged_prints_its_failure_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Nothing was judged: no block repeating the failure with empty lists.
    chain = grounded_answer_chain(
        policy="SOURCE_PAGE_POLICY_V3", model=ScriptedChatModel(text="never called")
    )
    state, response = answered(chain, {"request_id": "r-1"}, {})
    print_response(response, state)
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("FAILED INPUT_SCHEMA_INVALID")
    # A refusal is a verdict (002: the exact refusal is grounded): its block is shown.
    far = make_bundle(
        [make_row(i, source_file="manual.pdf", page=i + 1, similarity=0.1) for i in range(3)]
    )
    state, response = answered(chain, far, {})
    print_response(response, state)
    lines = capsys.readouterr().out.splitlines()
    assert response.status.value == "NO_EVIDENCE"
    assert "Grounded: yes (NO_EVIDENCE)" in lines
    assert lines[-1] == "Retrieved ids (0): -"
