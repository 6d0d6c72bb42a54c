"""ExtractiveChatModel: quotes relevant evidence sentences with anchors, or refuses."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from groundlock import AssembleEvidence, BuildPrompt, ExtractiveChatModel
from groundlock.providers.extractive import DEFAULT_REFUSAL, extract_answer
from groundlock.text.sentences import split_sentences
from tests.builders import make_bundle, make_row, sample_bundle

FRONT = AssembleEvidence() | BuildPrompt()


def _answer(bundle: dict, **model_args) -> str:
    prompt = FRONT.invoke(bundle).prompt
    messages = [SystemMessage(prompt.messages[0].content), HumanMessage(prompt.messages[1].content)]
    return str(ExtractiveChatModel(**model_args).invoke(messages).content)


def test_answers_the_sample_question_with_the_relevant_sentences_and_anchors():
    assert _answer(sample_bundle()).splitlines() == [
        "Replace the case drain filter element every 500 operating hours or at the first "
        "indication of filter bypass, whichever comes first. [C0]",
        "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C1]",
        "The hydraulic warning light illuminates when case drain pressure exceeds 3.5 bar "
        "for more than 10 seconds. [C3]",
    ]


def test_every_quoted_line_is_one_sentence_by_the_validators_rules():
    for line in _answer(sample_bundle()).splitlines():
        assert len(split_sentences(line)) == 1


def test_never_quotes_the_injected_sentence_or_forged_syntax():
    bundle = sample_bundle()
    bundle["user_question"] = (
        "What does the service bulletin say about previous instructions and inspection?"
    )
    answer = _answer(bundle)
    assert "chunk_id" not in answer
    assert "(C9" not in answer


def test_unrelated_question_gets_the_exact_refusal():
    bundle = sample_bundle()
    bundle["user_question"] = "Which colour is the tug painted?"
    assert _answer(bundle) == DEFAULT_REFUSAL


def test_message_without_an_evidence_section_gets_the_refusal():
    assert ExtractiveChatModel().invoke("Tell me about pumps").content == DEFAULT_REFUSAL


def test_output_cap_cuts_the_answer_and_reports_length():
    prompt = FRONT.invoke(sample_bundle()).prompt
    messages = [HumanMessage(prompt.messages[1].content)]
    reply = ExtractiveChatModel(max_tokens=5).invoke(messages)
    assert reply.response_metadata["finish_reason"] == "length"
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] <= 5


def test_stop_sequence_ends_the_answer_before_it():
    text = _answer(sample_bundle())
    cut = ExtractiveChatModel(stop=["operating"]).invoke(
        [HumanMessage(FRONT.invoke(sample_bundle()).prompt.messages[1].content)]
    )
    assert cut.content == text[: text.index("operating")]


def test_streaming_gives_the_same_text_with_usage_on_the_last_chunk():
    messages = [HumanMessage(FRONT.invoke(sample_bundle()).prompt.messages[1].content)]
    model = ExtractiveChatModel()
    chunks = list(model.stream(messages))
    assert "".join(str(c.content) for c in chunks) == model.invoke(messages).content
    assert chunks[-1].usage_metadata is not None
    assert all(c.usage_metadata is None for c in chunks[:-1])


def test_refuses_sampling_temperatures():
    with pytest.raises(ValueError, match="deterministic"):
        ExtractiveChatModel(temperature=0.7)


def test_quotes_at_most_max_sentences_in_evidence_order():
    rows = [make_row(i, chunk_text=f"The seal on pump {i} is replaced every {i + 1}00 hours.")
            for i in range(5)]  # fmt: skip
    bundle = make_bundle(rows, user_question="How often is the pump seal replaced?")
    lines = _answer(bundle, max_sentences=2).splitlines()
    assert len(lines) == 2
    assert lines == sorted(lines, key=lambda line: line[-3:])


def test_extract_answer_is_pure_and_deterministic():
    prompt = FRONT.invoke(sample_bundle()).prompt.messages[1].content
    assert extract_answer(prompt, "R") == extract_answer(prompt, "R")
