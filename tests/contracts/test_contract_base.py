"""Contracts check their invariants once: when built from input, not when nested later."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from groundlock import (
    AnswerBundle,
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    LLMExecutionResult,
    PromptBuildResult,
)
from tests.builders import sample_bundle

RESULT: LLMExecutionResult = (AssembleEvidence() | BuildPrompt() | ExecuteModel()).invoke(
    sample_bundle()
)


def test_nesting_a_built_contract_does_not_check_it_again(monkeypatch):
    checked: list[str] = []
    for model in (AnswerBundle, PromptBuildResult):
        original = model._check
        monkeypatch.setattr(
            model,
            "_check",
            lambda self, _o=original: checked.append(type(self).__name__) or _o(self),
        )
    LLMExecutionResult.model_validate({**dict(RESULT), "prompt": RESULT.prompt})
    assert checked == []


def test_nested_input_that_is_not_a_built_instance_is_fully_checked():
    tampered = RESULT.prompt.model_dump()
    tampered["prompt_sha256"] = "0" * 64
    with pytest.raises(ValidationError, match="prompt_sha256 must be the sha256"):
        LLMExecutionResult.model_validate({**dict(RESULT), "prompt": tampered})


def test_json_round_trip_rechecks_everything():
    assert LLMExecutionResult.model_validate_json(RESULT.model_dump_json()) == RESULT
    broken = RESULT.model_dump_json().replace('"anchor":"C1"', '"anchor":"C7"')
    with pytest.raises(ValidationError, match="anchors must be C0, C1"):
        LLMExecutionResult.model_validate_json(broken)
