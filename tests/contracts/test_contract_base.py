"""Contracts check their invariants once: when built from input, not when nested later."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from groundlock import (
    AnswerBundle,
    Answered,
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    LLMExecutionResult,
    Outcome,
    PromptBuildResult,
)
from groundlock._frozen import cached_property
from groundlock.contracts._base import Contract
from tests.builders import sample_bundle

RESULT: Answered = (AssembleEvidence() | BuildPrompt() | ExecuteModel()).invoke(sample_bundle())


def test_nesting_a_built_contract_does_not_check_it_again(monkeypatch):
    checked: list[str] = []
    for model in (AnswerBundle, PromptBuildResult, LLMExecutionResult, Outcome):
        original = model._check
        monkeypatch.setattr(
            model,
            "_check",
            lambda self, _o=original: checked.append(type(self).__name__) or _o(self),
        )
    Answered.model_validate({**dict(RESULT), "prompt": RESULT.prompt})
    assert checked == []


def test_nested_input_that_is_not_a_built_instance_is_fully_checked():
    tampered = RESULT.prompt.model_dump()
    tampered["prompt_sha256"] = "0" * 64
    with pytest.raises(ValidationError, match="prompt_sha256 must be the sha256"):
        Answered.model_validate({**dict(RESULT), "prompt": tampered})


def test_json_round_trip_rechecks_everything():
    # R2's input rides along by reference for the evidence archive and is not serialised;
    # everything else comes back equal.
    assert RESULT.retrieval is not None
    again = Answered.model_validate_json(RESULT.model_dump_json())
    assert again.retrieval is None
    assert again == RESULT.model_copy(update={"retrieval": None})
    broken = RESULT.model_dump_json().replace('"anchor":"C1"', '"anchor":"C7"')
    with pytest.raises(ValidationError, match="anchors must be C0, C1"):
        Answered.model_validate_json(broken)


def test_a_copy_with_changes_is_validated_like_any_new_contract():
    prompt = RESULT.prompt
    assert prompt.prompt_bytes  # cached on the original
    edited = prompt.messages[1].model_copy(update={"content": "Something else entirely."})
    # pydantic's own model_copy would build this without a check, carrying the original's
    # cached prompt_bytes next to messages that no longer hash to prompt_sha256.
    with pytest.raises(ValidationError, match="prompt_sha256"):
        prompt.model_copy(update={"messages": (prompt.messages[0], edited)})
    with pytest.raises(ValidationError, match="extra"):
        prompt.model_copy(update={"no_such_field": 1})


def test_a_plain_copy_keeps_the_content_and_its_cached_values():
    copy = RESULT.prompt.model_copy()
    assert copy == RESULT.prompt
    assert copy.prompt_bytes == RESULT.prompt.prompt_bytes


def test_invariants_are_inherited_and_contracts_without_any_skip_the_post_init_call():
    class Checked(Contract):
        x: int

        def _check(self) -> None:
            if self.x < 0:
                raise ValueError("x must not be negative")

    class Child(Checked):
        y: int = 0

    class Plain(Contract):
        x: int

    with pytest.raises(ValidationError, match="negative"):
        Child(x=-1)
    with pytest.raises(ValidationError, match="negative"):
        Checked.model_validate({"x": -1})
    assert Plain(x=-1).x == -1
    assert Plain.__pydantic_post_init__ is None  # no Python call per instance


def test_a_subclass_keeps_its_own_post_init_hook():
    seen: list[int] = []

    class Hooked(Contract):
        x: int

        def model_post_init(self, context: object, /) -> None:
            seen.append(self.x)
            super().model_post_init(context)

    Hooked(x=3)
    assert seen == [3]


def test_a_cached_property_is_computed_once_per_instance_and_is_never_a_field():
    calls: list[int] = []

    class Doubled(Contract):
        value: int

        @cached_property
        def doubled(self) -> int:
            calls.append(self.value)
            return 2 * self.value

    first, second = Doubled(value=2), Doubled(value=3)
    assert (first.doubled, first.doubled, second.doubled) == (4, 4, 6)
    assert calls == [2, 3]
    assert "doubled" not in Doubled.model_fields
    assert first.model_dump() == {"value": 2}
    assert Doubled.model_validate_json(first.model_dump_json()) == first
    assert isinstance(Doubled.doubled, cached_property)
