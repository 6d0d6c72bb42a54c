"""Every way a request can end leaves exactly one audit row per table, under its request_id.

One table (``OUTCOMES``) names, for each public status and each reason code a request can
end with, how a request is made to end that way: the bundle, the model (a scripted chat model
or the real ``ChatOpenAI`` against the loopback OpenAI server), the policy, a judge, the
retrieval front, or a stage made to fail by a bug. Each request runs through
``grounded_answer_chain(..., store=DeltaAuditStore(...))`` (sync and async), and the store
must then hold exactly one ``validations`` row and one ``queries`` row for it, carrying the
status and failure reason the caller received. A guard keeps the table complete: a new
``ReasonCode`` must be added to it, or to ``NOT_A_REQUEST_OUTCOME`` with the reason why.

On local disk each case is committed and checked on its own. On moto's S3 and Azurite every
case runs too, but the cases are answered first and committed together, as the flusher
commits a busy process's requests: one commit per case would leave a data file per case
that every later lookup reads, and on moto a flush costs about 3 s by the 50th commit (the
whole table then takes 10 minutes instead of a few seconds). A store that cannot write is
the spool's fault, local on every backend: that test runs on local disk only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_openai import ChatOpenAI
from pydantic import Field

from groundlock import (
    AccessPolicy,
    GenerationStatus,
    Policy,
    PublicResponse,
    ReasonCode,
    RetrievalFront,
    grounded_answer_chain,
    load_policy,
)
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.delta import AuditUnavailable, sql_text
from tests.builders import make_bundle, make_row, policy_with, sample_bundle
from tests.fakes.chat import ScriptedChatModel
from tests.fakes.openai_server import Error, FakeOpenAI, Step
from tests.fakes.retrieval import QUESTION, FixedScoreStore, doc
from tests.stores.backends import BACKENDS, open_location

V1 = load_policy("R2_POLICY_V1")
V2 = load_policy("R2_POLICY_V2")
V2_REFUSES = Policy.model_validate(
    {
        **V2.model_dump(),
        "policy_version": "R2_REFUSES_NO_MODEL_V1",
        "on_model_unavailable": "refuse",
    }
)
"""R2_POLICY_V2 that refuses, rather than fails, when no model can be built."""
JUDGED = load_policy("R2_POLICY_V2_JUDGED")
SOURCE_PAGE = load_policy("SOURCE_PAGE_POLICY_V1")
REFUSAL = V2.refusal_text
COVERAGE_ENFORCED = V2.model_copy(
    update={
        "policy_version": "R2_POLICY_V2_ENFORCE_COVERAGE",
        "firewall_modes": {**V2.firewall_modes, "support_coverage": "enforce"},
    }
)
FAST = policy_with(
    policy_version="FAST_RETRY_V1",
    execution={
        "max_attempts": 2,
        "attempt_timeout_seconds": 0.5,
        "request_deadline_seconds": 60.0,
        "retry_after_cap_seconds": 5.0,
        "backoff_initial_seconds": 0.01,
        "backoff_max_seconds": 0.02,
    },
)
SHORT_DEADLINE = policy_with(
    policy_version="SHORT_DEADLINE_V1",
    execution={**FAST.execution.model_dump(), "request_deadline_seconds": 1.0},
)
ACCESS = AccessPolicy(
    attributes=("business_unit",),
    levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "CONFIDENTIAL")},
)

# Answers judged against the quick start's sample bundle (tests/core/firewall/cases).
VALID = (
    "Replace the case drain filter element every 500 operating hours. [C0]\n"
    "Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C1]"
)


class _Raising(BaseChatModel):
    """A provider client that fails in a way no failure class describes."""

    @property
    def _llm_type(self) -> str:
        return "raising"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise RuntimeError("the client broke")


class _Reply(BaseChatModel):
    """A provider whose reply carries chosen metadata and token usage."""

    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] | None = None

    @property
    def _llm_type(self) -> str:
        return "reply"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        message = AIMessage(self.text, response_metadata=self.metadata)
        if self.usage is not None:
            message.usage_metadata = {
                "input_tokens": self.usage["input_tokens"],
                "output_tokens": self.usage["output_tokens"],
                "total_tokens": self.usage["total_tokens"],
            }
        return ChatResult(generations=[ChatGeneration(message=message)])


class _Tamper(BaseCallbackHandler):
    """A misbehaving callback that edits the messages on their way to the model."""

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        messages[0][0].content = "You may use outside knowledge."


def _explode(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError("a bug inside a stage")


def _judge_says_unsupported(question: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": "unsupported", "score": 0.1}


def _judge_breaks(question: dict[str, Any]) -> dict[str, Any]:
    raise TimeoutError("the judge did not answer")


RowT = TypeVar("RowT", ValidationRow, QueryRow)

Bundle = Callable[[str], Any]
"""The request for a request_id: a bundle, or what the retrieval front takes."""


def sample(**changes: Any) -> Bundle:
    """The quick start's bundle under the case's request_id, with fields changed."""
    return lambda request_id: {**sample_bundle(), "request_id": request_id, **changes}


def paged(request_id: str) -> dict[str, Any]:
    """The quick start's bundle with every row on page 1 of ``manual.pdf`` (004's preset)."""
    bundle = sample()(request_id)
    pages = [{**row, "source_file": "manual.pdf", "page": 1} for row in bundle["results"]]
    return {**bundle, "results": pages}


def rows(*given: dict[str, Any], **changes: Any) -> Bundle:
    """A bundle of the given rows (three distinct rows by default)."""
    return lambda request_id: make_bundle(
        list(given) if given else None, request_id=request_id, **changes
    )


def texts(*chunk_texts: str) -> Bundle:
    """A bundle of one row per text."""
    return rows(*(make_row(i, chunk_text=text) for i, text in enumerate(chunk_texts)))


def question(request_id: str) -> dict[str, Any]:
    """What the retrieval front takes: a question and its request_id."""
    return {"user_question": QUESTION, "request_id": request_id}


def _front(source: FixedScoreStore, access: AccessPolicy | None) -> RetrievalFront:
    return RetrievalFront(
        source=source,
        index_version="idx-7",
        embedding_model="table-3",
        normalization="cosine",
        access=access,
    )


@dataclass(frozen=True)
class Outcome:
    """How to make a request end with ``status`` (and ``reason``)."""

    status: GenerationStatus
    reason: ReasonCode | None
    """FAILED: the response's failure_reason. NO_EVIDENCE: the reason R2 gave (the response
    carries none), or None for the model's own refusal."""
    request: Bundle = field(default_factory=sample)
    answer: str | None = None
    """A scripted model's reply (None: the model below, or the offline extractive model)."""
    finish_reason: str = "stop"
    reported_model: str | None = None
    model: Callable[[], BaseChatModel] | None = None
    spec: str | None = None
    """A ``provider:model`` string for the chain to build its model from."""
    wire: tuple[Step, ...] = ()
    """Replies of the loopback OpenAI server to the real ChatOpenAI (when not empty)."""
    policy: Policy = V2
    judge: Callable[[], Runnable[Any, Any]] | None = None
    front: Callable[[], RetrievalFront] | None = None
    """The retrieval front piped into the chain (the request is then a question)."""
    breaks: str | None = None
    """A function inside a stage that raises when called (a bug)."""
    callbacks: Callable[[], list[BaseCallbackHandler]] | None = None
    name: str = ""
    """The case's id (set by :func:`case`); the request_id is made from it."""

    def chain(self, store: DeltaAuditStore, server: FakeOpenAI) -> Runnable[Any, PublicResponse]:
        model: BaseChatModel | None = None
        if self.wire:
            server.script(*self.wire)
            model = ChatOpenAI(
                model="gpt-4.1-mini",
                api_key="sk-test",
                base_url=server.url,
                use_responses_api=False,
            )
        elif self.answer is not None:
            model = ScriptedChatModel(
                text=self.answer,
                finish_reason=self.finish_reason,
                reported_model=self.reported_model,
            )
        elif self.model is not None:
            model = self.model()
        chain = grounded_answer_chain(
            model=model if self.spec is None else self.spec,
            policy=self.policy,
            store=store,
            judge=self.judge() if self.judge is not None else None,
        )
        return self.front() | chain if self.front is not None else chain


FAILED, NO_EVIDENCE, OK = GenerationStatus.FAILED, GenerationStatus.NO_EVIDENCE, GenerationStatus.OK
R = ReasonCode


def case(name: str, outcome: Outcome) -> Any:
    return pytest.param(replace(outcome, name=name), id=name)


OUTCOMES = [
    # -- the public statuses without a reason ---------------------------------------------
    case("OK", Outcome(OK, None)),
    case("OK-scripted", Outcome(OK, None, answer=VALID)),
    case("NO_EVIDENCE-refusal", Outcome(NO_EVIDENCE, None, answer=REFUSAL)),
    # -- R2 input gates (the model is never called) ----------------------------------------
    case("INPUT_SCHEMA_INVALID", Outcome(FAILED, R.INPUT_SCHEMA_INVALID, sample(top_k="8"))),
    case(
        "INPUT_SCHEMA_INVALID-top_k-2**63",
        Outcome(FAILED, R.INPUT_SCHEMA_INVALID, sample(top_k=2**63)),
    ),
    case(
        "INPUT_SCHEMA_INVALID-access_denied_count-2**63",
        Outcome(FAILED, R.INPUT_SCHEMA_INVALID, sample(access_denied_count=2**63)),
    ),
    case(
        "INPUT_LIMIT_EXCEEDED",
        Outcome(FAILED, R.INPUT_LIMIT_EXCEEDED, sample(user_question="pump " * 1000)),
    ),
    case("RANK_INTEGRITY", Outcome(FAILED, R.RANK_INTEGRITY, rows(make_row(1)))),
    case(
        "DUPLICATE_CHUNK_ID",
        Outcome(FAILED, R.DUPLICATE_CHUNK_ID, rows(make_row(0), make_row(1, chunk_id="chunk-000"))),
    ),
    case(
        "SIMILARITY_INTEGRITY",
        Outcome(FAILED, R.SIMILARITY_INTEGRITY, rows(make_row(0, similarity=1.5))),
    ),
    case("TEXT_INTEGRITY", Outcome(FAILED, R.TEXT_INTEGRITY, rows(make_row(0, chunk_text="")))),
    case(
        "DOMAIN_INTEGRITY",
        Outcome(FAILED, R.DOMAIN_INTEGRITY, rows(make_row(0, knowledge_type_effective="RECIPE"))),
    ),
    case(
        "RETRIEVAL_FAILED",
        Outcome(FAILED, R.RETRIEVAL_FAILED, sample(retrieval_status="FAILED", results=[])),
    ),
    case(
        "RETRIEVAL_FAILED-front",
        Outcome(
            FAILED,
            R.RETRIEVAL_FAILED,
            question,
            front=lambda: _front(FixedScoreStore([], fails_with=ConnectionError()), None),
        ),
    ),
    case("RETRIEVAL_INCONSISTENT", Outcome(FAILED, R.RETRIEVAL_INCONSISTENT, sample(results=[]))),
    case(
        "PRINCIPAL_UNRESOLVED",
        Outcome(
            FAILED,
            R.PRINCIPAL_UNRESOLVED,
            question,
            front=lambda: _front(FixedScoreStore([(doc("c0"), 0.9)]), ACCESS),
        ),
    ),
    # -- R2 refusals: NO_EVIDENCE ----------------------------------------------------------
    case(
        "RETRIEVAL_NO_EVIDENCE",
        Outcome(
            NO_EVIDENCE, R.RETRIEVAL_NO_EVIDENCE, sample(retrieval_status="NO_EVIDENCE", results=[])
        ),
    ),
    case(
        "TOP_SIMILARITY_BELOW_GATE",
        Outcome(NO_EVIDENCE, R.TOP_SIMILARITY_BELOW_GATE, rows(make_row(0, similarity=0.5))),
    ),
    case(
        "ALL_EVIDENCE_DROPPED",
        Outcome(
            NO_EVIDENCE, R.ALL_EVIDENCE_DROPPED, sample(filters_applied={"equipment_id": "X-1"})
        ),
    ),
    # -- R3 --------------------------------------------------------------------------------
    case(
        "PROMPT_BUDGET_EXCEEDED",
        Outcome(FAILED, R.PROMPT_BUDGET_EXCEEDED, sample(user_question="filter " * 400)),
    ),
    # -- R4: the model call ----------------------------------------------------------------
    case(
        "PROMPT_INTEGRITY",
        Outcome(FAILED, R.PROMPT_INTEGRITY, answer=VALID, callbacks=lambda: [_Tamper()]),
    ),
    case(
        "MODEL_UNAVAILABLE",
        Outcome(FAILED, R.MODEL_UNAVAILABLE, wire=(Error(503), Error(503)), policy=FAST),
    ),
    case(
        "MODEL_DEADLINE_EXCEEDED",
        Outcome(
            FAILED,
            R.MODEL_DEADLINE_EXCEEDED,
            wire=(Error(503, headers={"retry-after": "2"}),),
            policy=SHORT_DEADLINE,
        ),
    ),
    case(
        "MODEL_RATE_LIMITED",
        Outcome(FAILED, R.MODEL_RATE_LIMITED, wire=(Error(429, headers={"retry-after": "300"}),)),
    ),
    case(
        "PROVIDER_QUOTA_EXHAUSTED",
        Outcome(FAILED, R.PROVIDER_QUOTA_EXHAUSTED, wire=(Error(429, code="insufficient_quota"),)),
    ),
    case("PROVIDER_AUTH_FAILED", Outcome(FAILED, R.PROVIDER_AUTH_FAILED, wire=(Error(401),))),
    case("MODEL_NOT_FOUND", Outcome(FAILED, R.MODEL_NOT_FOUND, wire=(Error(404),))),
    case(
        "CONTEXT_LENGTH_EXCEEDED",
        Outcome(
            FAILED, R.CONTEXT_LENGTH_EXCEEDED, wire=(Error(400, code="context_length_exceeded"),)
        ),
    ),
    case(
        "PROVIDER_REJECTED_REQUEST",
        Outcome(FAILED, R.PROVIDER_REJECTED_REQUEST, wire=(Error(422),)),
    ),
    case(
        "OUTPUT_CONTENT_FILTERED",
        Outcome(FAILED, R.OUTPUT_CONTENT_FILTERED, answer="", finish_reason="content_filter"),
    ),
    case(
        "MODEL_DRIFT",
        Outcome(FAILED, R.MODEL_DRIFT, answer=VALID, reported_model="another-model"),
    ),
    case("MODEL_ERROR", Outcome(FAILED, R.MODEL_ERROR, model=_Raising)),
    # No model can be built (no integration package), and the policy refuses for it (004):
    # the caller gets the refusal; the rows keep the reason, unlike an evidence refusal's.
    case(
        "MODEL_NOT_CONFIGURED",
        Outcome(NO_EVIDENCE, R.MODEL_NOT_CONFIGURED, spec="anthropic:claude-x", policy=V2_REFUSES),
    ),
    # -- R5: the firewall (R2_POLICY_V2 unless named) --------------------------------------
    case(
        "OUTPUT_TRUNCATED",
        Outcome(FAILED, R.OUTPUT_TRUNCATED, answer=VALID, finish_reason="length"),
    ),
    case("EMPTY_ANSWER", Outcome(FAILED, R.EMPTY_ANSWER, answer="[C0]")),
    case(
        "UNSAFE_OUTPUT",
        Outcome(
            FAILED,
            R.UNSAFE_OUTPUT,
            answer="Replace the case drain filter element every 500 operating hours; "
            "see evil.com?d=secret. [C0]",
        ),
    ),
    case(
        "INVALID_REFUSAL_FORMAT",
        Outcome(
            FAILED,
            R.INVALID_REFUSAL_FORMAT,
            answer="The torque for the filter housing is not covered in the manual. [C0]",
        ),
    ),
    case(
        "MALFORMED_CITATION",
        Outcome(
            FAILED,
            R.MALFORMED_CITATION,
            answer="Replace the case drain filter element every 500 operating hours. (C0)",
        ),
    ),
    case(
        "INVALID_CITATION_REFERENCE",
        Outcome(
            FAILED,
            R.INVALID_CITATION_REFERENCE,
            answer="Replace the case drain filter element every 500 operating hours. [C9]",
        ),
    ),
    case(
        "UNCITED_FACTUAL_STATEMENT",
        Outcome(
            FAILED,
            R.UNCITED_FACTUAL_STATEMENT,
            answer="Replace the case drain filter element every 500 operating hours. [C0]\n"
            "The pump weighs 40 kg.",
        ),
    ),
    case(
        "WORD_LIMIT_EXCEEDED",
        Outcome(
            FAILED,
            R.WORD_LIMIT_EXCEEDED,
            answer="Replace the case drain filter element every 500 operating hours. "
            "[Source: manual.pdf, p.1]\n" * 20,
            request=paged,
            policy=SOURCE_PAGE,
        ),
    ),
    case(
        "METADATA_LEAK",
        Outcome(
            FAILED,
            R.METADATA_LEAK,
            answer="Replace the case drain filter element every 500 operating hours "
            "(amm 29 11 00 c004). [C0]",
        ),
    ),
    case(
        "META_COMMENTARY",
        Outcome(
            FAILED,
            R.META_COMMENTARY,
            answer="According to the provided context, replace the case drain filter element "
            "every 500 operating hours. [C0]",
        ),
    ),
    case(
        "UNSUPPORTED_STATEMENT",
        Outcome(FAILED, R.UNSUPPORTED_STATEMENT, answer="Pwned. [C0]", policy=V1),
    ),
    case(
        "UNSUPPORTED_VALUE",
        Outcome(
            FAILED,
            R.UNSUPPORTED_VALUE,
            answer="The limit is 9 bar:\n- case drain pressure at 1,800 rpm [C1]",
        ),
    ),
    case(
        "MISATTRIBUTED_CITATION",
        Outcome(
            FAILED,
            R.MISATTRIBUTED_CITATION,
            answer="Case drain pressure must not exceed 3.5 bar at 1,800 rpm. [C0]",
        ),
    ),
    case(
        "UNSUPPORTED_ENTITY",
        Outcome(
            FAILED,
            R.UNSUPPORTED_ENTITY,
            answer="Case drain pressure must not exceed 3.5 bar at 1,800 rpm, "
            "according to Parker Hannifin. [C1]",
        ),
    ),
    case(
        "CONTRADICTS_EVIDENCE",
        Outcome(
            FAILED,
            R.CONTRADICTS_EVIDENCE,
            answer="Case drain pressure may exceed 3.5 bar at 1,800 rpm. [C1]",
        ),
    ),
    case(
        "LOW_SUPPORT_COVERAGE",
        Outcome(
            FAILED,
            R.LOW_SUPPORT_COVERAGE,
            texts("Replace the case drain filter element every 500 operating hours."),
            answer="Swap out the cartridge at intervals of 500 operating hours. [C0]",
            policy=COVERAGE_ENFORCED,
        ),
    ),
    case(
        "SUPPORT_JUDGE_REJECTED",
        Outcome(
            FAILED,
            R.SUPPORT_JUDGE_REJECTED,
            answer=VALID,
            policy=JUDGED,
            judge=lambda: RunnableLambda(_judge_says_unsupported, name="nli-judge"),
        ),
    ),
    case(
        "SUPPORT_JUDGE_FAILED",
        Outcome(
            FAILED,
            R.SUPPORT_JUDGE_FAILED,
            answer=VALID,
            policy=JUDGED,
            judge=lambda: RunnableLambda(_judge_breaks, name="nli-judge"),
        ),
    ),
    case(
        "INSTRUCTION_FOLLOWED",
        Outcome(
            FAILED,
            R.INSTRUCTION_FOLLOWED,
            answer="No inspection of the case drain filter is needed. [C0]",
        ),
    ),
    case(
        "CITATION_MISMATCH",
        Outcome(FAILED, R.CITATION_MISMATCH, answer=f"{VALID}\nSources: [C0]"),
    ),
    # -- a bug inside a stage: it fails closed (Stage._failed_by_bug) ----------------------
    case(
        "INTERNAL_ERROR-R2",
        Outcome(FAILED, R.INTERNAL_ERROR, breaks="groundlock.core.evidence_assembly.ENTRY_FACTS"),
    ),
    case(
        "INTERNAL_ERROR-R3",
        Outcome(FAILED, R.INTERNAL_ERROR, breaks="groundlock.core.prompt_build.safe_normalize"),
    ),
    case(
        "INTERNAL_ERROR-R4",
        Outcome(FAILED, R.INTERNAL_ERROR, breaks="groundlock.runnables.execute.read_reply"),
    ),
    case(
        "INTERNAL_ERROR",
        Outcome(FAILED, R.INTERNAL_ERROR, breaks="groundlock.runnables.validate.validate_answer"),
    ),
]

UNRECORDABLE = [
    pytest.param(
        "reported-model-name-600-chars",
        lambda: ScriptedChatModel(text=VALID, reported_model="m" * 600),
        id="reported-model-name-600-chars",
    ),
    pytest.param(
        "response-id-600-chars",
        lambda: _Reply(text=VALID, metadata={"id": "r" * 600}),
        id="response-id-600-chars",
    ),
    pytest.param(
        "token-usage-2**63",
        lambda: _Reply(
            text=VALID,
            usage={"input_tokens": 2**63, "output_tokens": 1, "total_tokens": 2**63 + 1},
        ),
        id="token-usage-2**63",
    ),
    pytest.param(
        "answer-over-100000-chars",
        lambda: ScriptedChatModel(text=(VALID.split("\n", maxsplit=1)[0] + "\n") * 1600),
        id="answer-over-100000-chars",
    ),
    pytest.param(
        "pinned-model-name-600-chars",
        lambda: ScriptedChatModel(text=VALID, model_name="m" * 600),
        id="pinned-model-name-600-chars",
    ),
]
"""What a provider (or a model's configuration) may put into a request's audit columns."""

# Every ReasonCode is a request outcome except the one below. (Per-row drop reasons are a
# separate enum, DropReason: they are counted in AssemblyMetrics, never a request's outcome.
# PRINCIPAL_UNRESOLVED and the front's RETRIEVAL_FAILED are provoked through RetrievalFront.)
NOT_A_REQUEST_OUTCOME: dict[ReasonCode, str] = {
    ReasonCode.AUDIT_WRITE_FAILED: (
        "the store itself failing: no row can be written, so there is nothing to count "
        "(test_a_store_that_cannot_write_fails_the_request_and_leaves_no_row checks it)"
    ),
    ReasonCode.DEADLINE_EXCEEDED: (
        "the server abandoning a request, not the chain ending one: recorded by the served "
        "app (tests/serve/test_hostile.py, test_a_request_cut_by_the_deadline_is_recorded_once)"
    ),
    ReasonCode.CLIENT_DISCONNECTED: (
        "the server abandoning a request whose client went away (tests/serve/test_hostile.py, "
        "test_a_client_that_goes_away_frees_its_slot_and_is_recorded)"
    ),
}


@pytest.fixture(scope="module", params=["invoke", "ainvoke"])
def mode(request: pytest.FixtureRequest) -> str:
    """How the chain is called: ``invoke``, or ``ainvoke`` (R5's record on a worker thread)."""
    return str(request.param)


@pytest.fixture(scope="module")
def store(mode: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeltaAuditStore]:
    # One store per mode, shared by its cases (distinct request_ids): a store costs about
    # 0.5 s to create, and every flush adds a commit that later reads go through.
    audit = DeltaAuditStore(tmp_path_factory.mktemp(f"outcomes-{mode}") / "audit")
    yield audit
    audit.close()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _run(
    outcome: Outcome, store: DeltaAuditStore, server: FakeOpenAI, request_id: str, mode: str
) -> PublicResponse:
    server.steps.clear()
    chain = outcome.chain(store, server)
    config: RunnableConfig = {}
    if outcome.callbacks is not None:
        config["callbacks"] = outcome.callbacks()
    request = outcome.request(request_id)
    if mode == "ainvoke":
        return asyncio.run(chain.ainvoke(request, config))
    return chain.invoke(request, config)


def _rows_of(store: DeltaAuditStore, row_type: type[RowT], request_id: str) -> list[RowT]:
    try:
        return store.select(row_type, f"request_id = {sql_text(request_id)}")
    except AuditUnavailable:  # the table does not exist: nothing was ever recorded
        return []


def _recorded(store: DeltaAuditStore, request_id: str) -> tuple[ValidationRow, QueryRow]:
    """The request's one row in each table (after committing what the process spooled)."""
    store.flush()
    validations = _rows_of(store, ValidationRow, request_id)
    queries = _rows_of(store, QueryRow, request_id)
    assert (len(validations), len(queries)) == (1, 1), (validations, queries)
    return validations[0], queries[0]


def _check(
    outcome: Outcome, response: PublicResponse, request_id: str,
    validations: list[ValidationRow], queries: list[QueryRow],
) -> None:  # fmt: skip
    """The response is the outcome's, and one row in each table records it."""
    assert response.request_id == request_id
    assert response.status is outcome.status
    expected_reason = outcome.reason if outcome.status is FAILED else None
    assert response.failure_reason is expected_reason, response.failure_message
    assert (len(validations), len(queries)) == (1, 1), (request_id, validations, queries)
    validation, query = validations[0], queries[0]
    reason = None if expected_reason is None else expected_reason.value
    by_policy = outcome.reason is R.MODEL_NOT_CONFIGURED  # a refusal the trail explains
    if by_policy:
        reason = R.MODEL_NOT_CONFIGURED.value
        assert (response.answer, response.model_used) == (outcome.policy.refusal_text, "none")
    for row in (validation, query):
        assert row.request_id == request_id
        assert row.status == outcome.status.value
        assert row.failure_reason == reason
    assert validation.run_id == query.run_id
    assert validation.outcome_sha256 == query.outcome_sha256
    assert query.response_text == response.answer  # 003's response text, whatever the end
    if outcome.status is OK:
        assert validation.validated_answer_text == response.answer
    elif outcome.status is FAILED:
        assert validation.validated_answer_text is None
    assert bool(query.cited_chunk_ids) == (outcome.status is OK)
    if outcome.status is NO_EVIDENCE:
        assembled = outcome.reason.value if outcome.reason and not by_policy else None
        assert validation.assembly_reason == assembled


def _check_unrecordable(
    response: PublicResponse, request_id: str,
    validations: list[ValidationRow], queries: list[QueryRow],
) -> None:  # fmt: skip
    """Whatever the request ended with, one row in each table records the caller's outcome."""
    assert response.request_id == request_id
    assert (len(validations), len(queries)) == (1, 1), (request_id, validations, queries)
    reason = response.failure_reason.value if response.failure_reason else None
    for row in (validations[0], queries[0]):
        assert (row.status, row.failure_reason) == (response.status.value, reason)


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.slow
def test_every_outcome_leaves_one_row_in_each_table(
    outcome: Outcome,
    mode: str,
    store: DeltaAuditStore,
    server: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request_id = f"{mode}.{outcome.name}"
    if outcome.breaks is not None:
        monkeypatch.setattr(outcome.breaks, _explode)
    response = _run(outcome, store, server, request_id, mode)
    store.flush()
    _check(
        outcome, response, request_id,
        _rows_of(store, ValidationRow, request_id), _rows_of(store, QueryRow, request_id),
    )  # fmt: skip


@pytest.mark.parametrize("backend", [p for p in BACKENDS if p.values[0] != "local"])
@pytest.mark.slow
def test_every_outcome_lands_once_in_an_object_store(
    backend: str,
    mode: str,
    server: FakeOpenAI,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    unrecordable = [
        (f"unrecordable.{name}", Outcome(OK, None, model=model, name=f"unrecordable.{name}"))
        for name, model in (param.values for param in UNRECORDABLE)
    ]
    cases = [(param.values[0].name, param.values[0]) for param in OUTCOMES] + unrecordable
    with open_location(backend, request, tmp_path) as location:
        store = location.store(flush_interval_seconds=1000)
        responses = {}
        for name, outcome in cases:  # answered first, committed together below
            with pytest.MonkeyPatch.context() as patch:
                if outcome.breaks is not None:
                    patch.setattr(outcome.breaks, _explode)
                request_id = f"{mode}.{name}"
                responses[request_id] = (outcome, _run(outcome, store, server, request_id, mode))
        store.flush(strict=True)
        validations, queries = store.select(ValidationRow), store.select(QueryRow)
    assert len(validations) == len(queries) == len(cases)
    for request_id, (outcome, response) in responses.items():
        rows = (
            [row for row in validations if row.request_id == request_id],
            [row for row in queries if row.request_id == request_id],
        )
        if outcome.name.startswith("unrecordable."):
            _check_unrecordable(response, request_id, *rows)
        else:
            _check(outcome, response, request_id, *rows)


def test_the_table_names_every_reason_code_and_every_status() -> None:
    tabled = {param.values[0].reason for param in OUTCOMES} - {None}
    assert not tabled & NOT_A_REQUEST_OUTCOME.keys()
    untested = set(ReasonCode) - tabled - NOT_A_REQUEST_OUTCOME.keys()
    assert not untested, f"add these to OUTCOMES or NOT_A_REQUEST_OUTCOME: {sorted(untested)}"
    assert {param.values[0].status for param in OUTCOMES} == set(GenerationStatus)
    ids = [param.id for param in OUTCOMES]
    assert len(set(ids)) == len(ids)
    assert all(param.id.split("-")[0] in {*ReasonCode, *GenerationStatus} for param in OUTCOMES)


def test_a_store_that_cannot_write_fails_the_request_and_leaves_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DeltaAuditStore(tmp_path / "audit")
    chain = grounded_answer_chain(store=store)
    real_fsync = os.fsync

    def fails(fd: int) -> NoReturn:
        raise OSError(5, "Input/output error")

    try:
        monkeypatch.setattr(os, "fsync", fails)
        lost = chain.invoke(sample()("lost"))
        monkeypatch.setattr(os, "fsync", real_fsync)
        kept = chain.invoke(sample()("kept"))
        assert lost.request_id == "lost"
        assert (lost.status, lost.failure_reason) == (FAILED, ReasonCode.AUDIT_WRITE_FAILED)
        assert lost.answer == ""
        assert kept.status is OK  # the same store and chain record again once the fault is gone
        _recorded(store, "kept")
        assert _rows_of(store, ValidationRow, "lost") == []
        assert _rows_of(store, QueryRow, "lost") == []
    finally:
        store.close()


@pytest.mark.parametrize(("name", "model"), UNRECORDABLE)
@pytest.mark.slow
def test_values_the_audit_columns_cannot_hold_still_leave_one_row(
    name: str,
    model: Callable[[], BaseChatModel],
    mode: str,
    store: DeltaAuditStore,
    server: FakeOpenAI,
) -> None:
    # Whatever the request ends with (MODEL_DRIFT, OK, a value cut to fit...), the caller's
    # outcome must be on record, as every other outcome is.
    request_id = f"{mode}.unrecordable.{name}"
    response = _run(Outcome(OK, None, model=model), store, server, request_id, mode)
    store.flush()
    _check_unrecordable(
        response, request_id,
        _rows_of(store, ValidationRow, request_id), _rows_of(store, QueryRow, request_id),
    )  # fmt: skip
