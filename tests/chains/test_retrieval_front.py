"""The retrieval front: ranks, score normalisation, metadata mapping and access control.

Every test goes through a real LangChain vector store or retriever; only what stands behind
it (an embedding provider, a remote index) is scripted (``tests/fakes/retrieval.py``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableSequence
from langchain_core.tracers.context import collect_runs

from groundlock import (
    AccessPolicy,
    GenerationStatus,
    Principal,
    ReasonCode,
    RetrievalBundle,
    RetrievalFront,
    ScoreNormalization,
    grounded_answer_chain,
)
from groundlock.core.intake import Rejection
from tests.fakes.chat import ModelCalls, ScriptedChatModel
from tests.fakes.retrieval import (
    QUESTION,
    FixedScoreStore,
    ScoredRetriever,
    cosine_store,
    doc,
)

ACCESS = AccessPolicy(
    attributes=("business_unit",),
    levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "CONFIDENTIAL")},
    roles={
        "technician": {"business_unit": "MARINE", "sensitivity_level": "INTERNAL"},
        "investigator": {"business_unit": "*", "sensitivity_level": "CONFIDENTIAL"},
    },
)
TECHNICIAN = Principal(
    principal_id="tech-1", grants={"business_unit": "MARINE", "sensitivity_level": "INTERNAL"}
)


def _front(source: Any, **options: Any) -> RetrievalFront:
    options.setdefault("normalization", "cosine")
    options.setdefault("access", None)
    return RetrievalFront(
        source=source, index_version="idx-7", embedding_model="table-3", **options
    )


def _as(principal: Principal | dict[str, Any]) -> RunnableConfig:
    return {"configurable": {"principal": principal}}


def _bundle(result: object) -> RetrievalBundle:
    assert isinstance(result, RetrievalBundle), result
    return result


class Prompts(BaseCallbackHandler):
    """Every message text any chat model was sent."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.texts.extend(str(m.content) for batch in messages for m in batch)


# -- ranks, scores, fields ----------------------------------------------------------------


def test_rows_are_ranked_from_zero_in_the_stores_order_with_cosines_clipped() -> None:
    store = cosine_store(
        [(doc("c-low"), -0.2), (doc("c-top"), 0.95), (doc("c-mid"), 0.8), (doc("c-2nd"), 0.9)]
    )
    bundle = _bundle(_front(store, top_k=4).invoke(QUESTION))
    assert [(row.rank, row.chunk_id) for row in bundle.results] == [
        (0, "c-top"),
        (1, "c-2nd"),
        (2, "c-mid"),
        (3, "c-low"),
    ]
    assert [row.similarity_score for row in bundle.results] == pytest.approx([0.95, 0.9, 0.8, 0])
    assert bundle.score_normalization == "cosine"
    assert bundle.retrieval_strategy == "vector_store:InMemoryVectorStore"
    assert (bundle.index_version, bundle.embedding_model, bundle.top_k) == ("idx-7", "table-3", 4)
    assert bundle.access_denied_count is None  # no access control, nothing to count
    assert bundle.retrieval_latency_ms is not None


def test_top_k_caps_the_bundle() -> None:
    store = cosine_store([(doc(f"c{i}"), 0.9 - i / 100) for i in range(5)])
    bundle = _bundle(_front(store, top_k=2).invoke(QUESTION))
    assert [row.chunk_id for row in bundle.results] == ["c0", "c1"]
    assert bundle.top_k == 2


@pytest.mark.parametrize(
    ("name", "raw", "similarity"),
    [
        ("cosine", 0.83, 0.83),
        ("cosine", -0.5, 0.0),
        ("cosine_distance", 0.3, 0.7),
        ("cosine_distance", 1.4, 0.0),
        ("unit_l2_distance", 0.5, 0.875),
        ("unit_squared_l2_distance", 0.5, 0.75),
        ("unit_interval", 0.8, 0.8),
    ],
)
def test_built_in_normalisations(name: str, raw: float, similarity: float) -> None:
    store = FixedScoreStore([(doc("c0"), raw)])
    bundle = _bundle(_front(store, normalization=name).invoke(QUESTION))
    assert bundle.results[0].similarity_score == pytest.approx(similarity)
    assert bundle.score_normalization == name


def test_relevance_uses_the_stores_own_function() -> None:
    store = FixedScoreStore([(doc("c0"), 0.4)], relevance=lambda d: 1.0 - d / math.sqrt(2))
    bundle = _bundle(_front(store, normalization="relevance").invoke(QUESTION))
    assert bundle.results[0].similarity_score == pytest.approx(1 - 0.4 / math.sqrt(2))
    with pytest.raises(ValueError, match="defines no relevance function"):
        _front(cosine_store([]), normalization="relevance")


@pytest.mark.parametrize(
    ("normalization", "raw"),
    [
        ("unit_interval", 1.3),  # not what the caller said the scores were
        ("unit_interval", math.nan),
        ("cosine", math.inf),
        ("cosine", "0.9"),  # a store returning text for a score
        (ScoreNormalization("half_v1", lambda raw: raw / 2), 2.4),  # a custom map gone wrong
    ],
)
def test_a_score_that_cannot_be_normalised_fails_the_request(normalization: Any, raw: Any) -> None:
    model = ScriptedChatModel(text="never asked")
    chain = _front(FixedScoreStore([(doc("c0"), raw)]), normalization=normalization)
    response = (chain | grounded_answer_chain(model=model)).invoke(QUESTION)
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.SIMILARITY_INTEGRITY


def test_unknown_normalisations_and_fields_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown score normalisation 'l2'"):
        _front(cosine_store([]), normalization="l2")
    with pytest.raises(ValueError, match="not a row field"):
        _front(cosine_store([]), fields={"business_unit": "bu"})
    with pytest.raises(ValueError, match=r"1 to 256 characters"):
        _front(cosine_store([]), normalization=ScoreNormalization("half|v1", float))


def test_metadata_is_mapped_onto_row_fields_and_nothing_else_travels() -> None:
    document = Document(
        id="store-id-1",
        page_content="Replace the case drain filter every 500 hours.",
        metadata={
            "doc": "MM-12",
            "type": "MAINTENANCE_PROCEDURE",
            "title": "Maintenance manual, ch. 12",
            "asset": "PUMP-7",
            "date": "2025-03-01",
            "business_unit": "MARINE",
            "internal_note": "not evidence",
        },
    )
    fields = {
        "knowledge_id": "doc",
        "knowledge_type_effective": "type",
        "source_reference": "title",
        "equipment_id": "asset",
        "event_date": "date",
    }
    bundle = _bundle(_front(cosine_store([(document, 0.9)]), fields=fields).invoke(QUESTION))
    (row,) = bundle.results
    assert row.chunk_id == "store-id-1"  # no chunk_id in metadata: the document's own id
    assert (row.knowledge_id, row.knowledge_type_effective) == ("MM-12", "MAINTENANCE_PROCEDURE")
    assert (row.source_reference, row.equipment_id) == ("Maintenance manual, ch. 12", "PUMP-7")
    assert row.event_date.isoformat() == "2025-03-01"
    assert "MARINE" not in row.model_dump_json()
    assert "not evidence" not in bundle.model_dump_json()


def test_a_bad_metadata_value_fails_with_the_field_named() -> None:
    store = cosine_store([(doc("c0", event_date="last Tuesday"), 0.9)])
    chain = _front(store) | grounded_answer_chain(model=ScriptedChatModel(text="never"))
    response = chain.invoke(QUESTION)
    assert response.failure_reason is ReasonCode.INPUT_SCHEMA_INVALID
    assert response.failure_message is not None
    assert response.failure_message.startswith("results[0].event_date")


# -- access control -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "admitted"),
    [
        ({"business_unit": "MARINE", "sensitivity_level": "PUBLIC"}, True),
        ({"business_unit": "MARINE", "sensitivity_level": "INTERNAL"}, True),
        ({"business_unit": "MARINE", "sensitivity_level": "CONFIDENTIAL"}, False),
        ({"business_unit": "RAIL", "sensitivity_level": "PUBLIC"}, False),
        ({"business_unit": ["RAIL", "MARINE"], "sensitivity_level": "PUBLIC"}, True),
        ({"business_unit": ["RAIL"], "sensitivity_level": "PUBLIC"}, False),
        ({"business_unit": [], "sensitivity_level": "PUBLIC"}, False),
        ({"sensitivity_level": "PUBLIC"}, False),  # untagged unit
        ({"business_unit": "MARINE"}, False),  # untagged level
        ({"business_unit": "MARINE", "sensitivity_level": "SECRET"}, False),  # unknown level
        ({"business_unit": 7, "sensitivity_level": "PUBLIC"}, False),
        ({"business_unit": ["MARINE", 7], "sensitivity_level": "PUBLIC"}, False),
        ({"business_unit": "MARINE", "sensitivity_level": ["PUBLIC"]}, False),
    ],
)
def test_access_decisions(metadata: dict[str, Any], admitted: bool) -> None:  # noqa: FBT001
    assert ACCESS.admits(metadata, TECHNICIAN) is admitted


def test_wildcard_grants_any_value_but_not_a_missing_one() -> None:
    auditor = Principal(
        principal_id="a", grants={"business_unit": "*", "sensitivity_level": "PUBLIC"}
    )
    assert ACCESS.admits({"business_unit": "RAIL", "sensitivity_level": "PUBLIC"}, auditor)
    assert not ACCESS.admits({"sensitivity_level": "PUBLIC"}, auditor)
    nobody = Principal(principal_id="n", grants={})
    assert not ACCESS.admits({"business_unit": "RAIL", "sensitivity_level": "PUBLIC"}, nobody)


def test_access_policy_misconfiguration_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one attribute"):
        AccessPolicy()
    with pytest.raises(ValueError, match="both unordered and ordered"):
        AccessPolicy(attributes=("x",), levels={"x": ("A",)})
    with pytest.raises(ValueError, match="repeat a level"):
        AccessPolicy(levels={"x": ("A", "A")})
    with pytest.raises(ValueError, match=r"'clerk'.*not a level"):
        AccessPolicy(levels={"x": ("A",)}, roles={"clerk": {"x": "B"}})


def _tagged_corpus() -> list[tuple[Document, float]]:
    """Six chunks, best first; each text carries a canary naming its chunk."""
    tags = [
        ("c-secret", "MARINE", "CONFIDENTIAL"),
        ("c-rail", "RAIL", "PUBLIC"),
        ("c-ok-1", "MARINE", "PUBLIC"),
        ("c-untagged", None, None),
        ("c-ok-2", "MARINE", "INTERNAL"),
        ("c-ok-3", "MARINE", "PUBLIC"),
    ]
    corpus = []
    for index, (chunk_id, unit, level) in enumerate(tags):
        metadata = {"business_unit": unit, "sensitivity_level": level} if unit else {}
        text = f"CANARY-{chunk_id}: the case drain filter is replaced every {500 + index} hours."
        corpus.append((doc(chunk_id, text, **metadata), 0.97 - index / 100))
    return corpus


def test_rows_a_principal_may_not_see_never_reach_the_model_and_are_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = cosine_store(_tagged_corpus())
    front = _front(store, access=ACCESS, top_k=3)
    bundle = _bundle(front.invoke(QUESTION, _as(TECHNICIAN)))
    assert [row.chunk_id for row in bundle.results] == ["c-ok-1", "c-ok-2", "c-ok-3"]
    assert [row.rank for row in bundle.results] == [0, 1, 2]
    assert bundle.access_denied_count == 3

    prompts = Prompts()
    with caplog.at_level(logging.DEBUG):
        response = (front | grounded_answer_chain()).invoke(
            QUESTION, {**_as(TECHNICIAN), "callbacks": [prompts]}
        )
    assert response.status is GenerationStatus.OK
    assert any("CANARY-c-ok-1" in text for text in prompts.texts)
    shown = "".join(prompts.texts) + response.model_dump_json() + caplog.text
    for withheld in ("c-secret", "c-rail", "c-untagged"):
        assert f"CANARY-{withheld}" not in shown
        assert withheld not in response.model_dump_json()


def test_denied_rows_are_fetched_past_so_they_do_not_starve_the_answer() -> None:
    corpus = _tagged_corpus()
    store = FixedScoreStore(corpus)
    over = _bundle(_front(store, access=ACCESS, top_k=2).invoke(QUESTION, _as(TECHNICIAN)))
    assert [row.chunk_id for row in over.results] == ["c-ok-1", "c-ok-2"]
    assert store.searches[-1]["k"] == 8  # four times top_k with access control on
    # Asked for only top_k rows, the store's best two are both denied: nothing is left.
    exact = _front(store, access=ACCESS, top_k=2, fetch_k=2).invoke(QUESTION, _as(TECHNICIAN))
    assert _bundle(exact).results == ()
    assert _bundle(exact).access_denied_count == 2


def test_everything_denied_is_a_refusal_and_the_model_is_never_called() -> None:
    denied = [(doc(f"c{i}", business_unit="RAIL", sensitivity_level="PUBLIC"), 0.9) for i in (1, 2)]
    model = ScriptedChatModel(text="leaked")
    chain = _front(FixedScoreStore(denied), access=ACCESS) | grounded_answer_chain(model=model)
    prompts = Prompts()
    response = chain.invoke(QUESTION, {**_as(TECHNICIAN), "callbacks": [prompts]})
    assert response.status is GenerationStatus.NO_EVIDENCE
    assert prompts.texts == []


def test_the_principal_may_come_from_a_served_requesters_role() -> None:
    store = cosine_store(_tagged_corpus())
    front = _front(store, access=ACCESS, top_k=6)
    metadata = {"requester_id": "inv-9", "requester_role": "investigator"}
    bundle = _bundle(front.invoke(QUESTION, {"metadata": metadata}))
    # The investigator sees every unit up to CONFIDENTIAL; only the untagged chunk is withheld.
    assert "c-secret" in [row.chunk_id for row in bundle.results]
    assert bundle.access_denied_count == 1
    as_dict = {"principal_id": "t", "grants": {"business_unit": ["MARINE"]}}
    limited = _bundle(front.invoke(QUESTION, _as(as_dict)))
    assert limited.results == ()  # no sensitivity grant: no level is visible
    assert limited.access_denied_count == 6


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({}, "names none"),
        ({"metadata": {"requester_id": "x", "requester_role": "janitor"}}, "role has no grants"),
        (_as({"principal_id": "t", "grants": {"region": "EU"}}), "'region' is not an attribute"),
        (_as({"principal_id": "t", "grants": {"sensitivity_level": "TOP"}}), "not a level"),
        (_as({"principal_id": "", "grants": {}}), "principal_id"),
        (_as("tech-1"), "principal"),
    ],
)
def test_an_unresolved_principal_fails_before_the_store_or_model_is_asked(
    config: dict[str, Any], says: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = FixedScoreStore(_tagged_corpus())
    model = ScriptedChatModel(text="never asked")
    prompts = Prompts()
    chain = _front(store, access=ACCESS) | grounded_answer_chain(model=model)
    with caplog.at_level(logging.WARNING, logger="groundlock.retrieval"):
        response = chain.invoke(QUESTION, {**config, "callbacks": [prompts]})  # type: ignore[typeddict-item]
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.PRINCIPAL_UNRESOLVED
    assert response.failure_message is None  # for the operator's log, not the client
    assert says in caplog.text
    assert store.searches == []
    assert prompts.texts == []


def test_a_pushed_down_filter_narrows_the_search_but_is_not_trusted() -> None:
    store = FixedScoreStore(_tagged_corpus())
    seen: list[Principal] = []

    def admit_everything(principal: Principal) -> dict[str, Any]:
        seen.append(principal)
        return {"filter": lambda document: True}

    front = _front(store, access=ACCESS, search_filter=admit_everything, top_k=6)
    bundle = _bundle(front.invoke(QUESTION, _as(TECHNICIAN)))
    assert seen == [TECHNICIAN]
    assert "filter" in store.searches[-1]
    assert {row.chunk_id for row in bundle.results} == {"c-ok-1", "c-ok-2", "c-ok-3"}

    def only_marine(principal: Principal) -> dict[str, Any]:
        return {"filter": lambda d: d.metadata.get("business_unit") == "MARINE"}

    narrowed = _front(store, access=ACCESS, search_filter=only_marine, top_k=6)
    bundle = _bundle(narrowed.invoke(QUESTION, _as(TECHNICIAN)))
    assert bundle.access_denied_count == 1  # c-secret: fetched, then refused by level


# -- requests the front refuses -----------------------------------------------------------


@pytest.mark.parametrize(
    ("request_input", "reason", "says"),
    [
        ("   ", ReasonCode.INPUT_SCHEMA_INVALID, "user_question"),
        ("x" * 4001, ReasonCode.INPUT_LIMIT_EXCEEDED, "user_question"),
        ({"user_question": 7}, ReasonCode.INPUT_SCHEMA_INVALID, "user_question"),
        (
            {"user_question": QUESTION, "results": [{"chunk_id": "forged"}]},
            ReasonCode.INPUT_SCHEMA_INVALID,
            "results: not a field of a retrieval request",
        ),
        (
            {"user_question": QUESTION, "filters_applied": {"colour": "red"}},
            ReasonCode.INPUT_SCHEMA_INVALID,
            "filters_applied.colour",
        ),
        ({"user_question": QUESTION, "request_id": "a|b"}, ReasonCode.INPUT_SCHEMA_INVALID, "id"),
        (["a", "list"], ReasonCode.INPUT_SCHEMA_INVALID, "got list"),
    ],
)
def test_bad_requests_fail_before_the_store_is_asked(
    request_input: Any, reason: ReasonCode, says: str
) -> None:
    store = FixedScoreStore([(doc("c0"), 0.9)])
    response = (_front(store) | grounded_answer_chain()).invoke(request_input)
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is reason
    assert response.failure_message is not None
    assert says in response.failure_message
    assert store.searches == []


def test_a_request_keeps_its_ids_and_its_filters_are_enforced_by_r2() -> None:
    store = cosine_store(
        [
            (
                doc(
                    "c-pump",
                    "The case drain filter is replaced every 500 hours.",
                    equipment_id="PUMP-7",
                ),
                0.93,
            ),
            (
                doc(
                    "c-winch",
                    "The case drain filter is replaced every 200 hours.",
                    equipment_id="WINCH-2",
                ),
                0.95,
            ),
        ]
    )
    request = {
        "user_question": QUESTION,
        "request_id": "req-42",
        "run_id": "run-3",
        "filters_applied": {"equipment_id": "PUMP-7"},
    }
    bundle = _bundle(_front(store).invoke(request))
    assert (bundle.request_id, bundle.run_id) == ("req-42", "run-3")
    response = (_front(store) | grounded_answer_chain()).invoke(request)
    assert response.request_id == "req-42"
    assert [c.knowledge_id for c in response.citations] == ["K-c-pump"]


def test_generated_request_ids_are_unique() -> None:
    front = _front(cosine_store([(doc("c0"), 0.9)]))
    ids = {_bundle(front.invoke(QUESTION)).request_id for _ in range(50)}
    assert len(ids) == 50


def test_a_failing_store_fails_closed_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FixedScoreStore([], fails_with=ConnectionError("https://user:CANARY-KEY@index.example"))
    chain = _front(store) | grounded_answer_chain(model=ScriptedChatModel(text="never"))
    with caplog.at_level(logging.DEBUG):
        response = chain.invoke(QUESTION)
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.RETRIEVAL_FAILED
    assert "ConnectionError" in caplog.text
    assert "CANARY-KEY" not in caplog.text + response.model_dump_json()


# -- other sources --------------------------------------------------------------------------


def test_a_retriever_with_scores_in_metadata() -> None:
    documents = [
        doc("r0", score=0.91, business_unit="MARINE", sensitivity_level="PUBLIC"),
        doc("r1", score=0.88, business_unit="RAIL", sensitivity_level="PUBLIC"),
        doc("r2", score=0.85, business_unit="MARINE", sensitivity_level="PUBLIC"),
    ]
    retriever = ScoredRetriever(documents=documents)
    front = _front(retriever, normalization="unit_interval", score_key="score", access=ACCESS)
    bundle = _bundle(front.invoke(QUESTION, _as(TECHNICIAN)))
    assert [(row.chunk_id, row.similarity_score) for row in bundle.results] == [
        ("r0", 0.91),
        ("r2", 0.85),
    ]
    assert bundle.retrieval_strategy == "retriever:ScoredRetriever"
    assert retriever.calls == [QUESTION]
    with pytest.raises(ValueError, match="needs score_key"):
        _front(retriever)
    unscored = _front(ScoredRetriever(documents=[doc("r9")]), score_key="score")
    response = (unscored | grounded_answer_chain()).invoke(QUESTION)
    assert response.failure_reason is ReasonCode.SIMILARITY_INTEGRITY


def test_a_vector_store_retriever_is_searched_through_its_store_with_its_kwargs() -> None:
    store = FixedScoreStore(_tagged_corpus())
    keep_ok = {"filter": lambda d: d.id.startswith("c-ok")}
    retriever = store.as_retriever(search_kwargs={"k": 1, **keep_ok})
    bundle = _bundle(_front(retriever, top_k=3).invoke(QUESTION))
    assert [row.chunk_id for row in bundle.results] == ["c-ok-1", "c-ok-2", "c-ok-3"]
    assert store.searches[-1]["k"] == 3  # the front's fetch size, not the retriever's k
    assert [row.similarity_score for row in bundle.results] == pytest.approx([0.95, 0.93, 0.92])
    with pytest.raises(ValueError, match="search_type 'mmr' reports no scores"):
        _front(store.as_retriever(search_type="mmr"))


async def test_async_and_batch_agree_with_invoke() -> None:
    store = cosine_store(_tagged_corpus())
    front = _front(store, access=ACCESS, top_k=3)
    request = {"user_question": QUESTION, "request_id": "same"}
    sync = _bundle(front.invoke(request, _as(TECHNICIAN)))
    asynchronous = _bundle(await front.ainvoke(request, _as(TECHNICIAN)))
    ignore = {"retrieval_latency_ms"}
    assert sync.model_dump(exclude=ignore) == asynchronous.model_dump(exclude=ignore)

    chain = front | grounded_answer_chain()
    requests = [{"user_question": QUESTION, "request_id": f"r{i}"} for i in range(4)]
    batched = await chain.abatch(requests, _as(TECHNICIAN))
    one_by_one = [chain.invoke(r, _as(TECHNICIAN)) for r in requests]
    assert [r.model_dump(exclude={"latency_ms"}) for r in batched] == [
        r.model_dump(exclude={"latency_ms"}) for r in one_by_one
    ]
    assert all(r.status is GenerationStatus.OK for r in batched)
    assert isinstance(await front.ainvoke("  "), Rejection)


# -- a property over random corpora and principals ----------------------------------------

_UNITS = st.sampled_from(["MARINE", "RAIL", "TERMINAL"])
_TAGS = st.fixed_dictionaries(
    {},
    optional={
        "business_unit": st.one_of(_UNITS, st.lists(_UNITS, max_size=2), st.integers()),
        "sensitivity_level": st.sampled_from(["PUBLIC", "INTERNAL", "CONFIDENTIAL", "SECRET"]),
    },
)
_GRANTS = st.fixed_dictionaries(
    {},
    optional={
        "business_unit": st.lists(st.one_of(_UNITS, st.just("*")), min_size=1, max_size=2),
        "sensitivity_level": st.sampled_from(["PUBLIC", "INTERNAL", "CONFIDENTIAL"]),
    },
)


def _oracle(metadata: dict[str, Any], grants: dict[str, Any]) -> bool:
    """ACCESS's rule for these tags, written out independently of AccessPolicy."""
    unit = metadata.get("business_unit")
    units = [unit] if isinstance(unit, str) else unit
    if not isinstance(units, list) or not units or not all(isinstance(u, str) for u in units):
        return False
    granted = grants.get("business_unit", [])
    if "*" not in granted and not any(u in granted for u in units):
        return False
    order = ["PUBLIC", "INTERNAL", "CONFIDENTIAL"]
    level, clearance = metadata.get("sensitivity_level"), grants.get("sensitivity_level")
    return level in order and clearance in order and order.index(level) <= order.index(clearance)


@settings(max_examples=150, deadline=None)
@given(
    tags=st.lists(_TAGS, max_size=12),
    grants=_GRANTS,
    top_k=st.integers(1, 5),
    fetch_k=st.integers(1, 12),
)
def test_a_bundle_holds_exactly_the_best_admitted_rows_and_nothing_denied(
    tags: list[dict[str, Any]], grants: dict[str, Any], top_k: int, fetch_k: int
) -> None:
    corpus = [
        (doc(f"c{i}", f"CANARY-c{i} text.", **tag), 0.99 - i / 100) for i, tag in enumerate(tags)
    ]
    principal = Principal(principal_id="p", grants=grants)
    front = _front(FixedScoreStore(corpus), access=ACCESS, top_k=top_k, fetch_k=fetch_k)
    bundle = _bundle(front.invoke(QUESTION, _as(principal)))
    fetched = corpus[: max(fetch_k, top_k)]
    admitted = [d.id for d, _ in fetched if _oracle(d.metadata, grants)]
    assert [row.chunk_id for row in bundle.results] == admitted[:top_k]
    assert [row.rank for row in bundle.results] == list(range(len(bundle.results)))
    assert bundle.access_denied_count == len(fetched) - len(admitted)
    dumped = bundle.model_dump_json()
    for document, _ in fetched:
        if document.id not in admitted:
            assert f"CANARY-{document.id} " not in dumped


def test_a_chain_with_a_front_is_one_plain_sequence_named_as_the_chain() -> None:
    front = _front(cosine_store([(doc("c0", "The case drain filter is replaced yearly."), 0.9)]))
    chain = grounded_answer_chain(front=front)
    assert type(chain) is RunnableSequence
    piped = front | grounded_answer_chain()  # plain LCEL piping gives the same steps
    assert [s.name for s in piped.steps] == [s.name for s in chain.steps]
    assert [step.name for step in chain.steps][:2] == ["R1.RetrievalFront", "R2.AssembleEvidence"]
    runs = ModelCalls()
    observed = chain.invoke({"user_question": QUESTION, "request_id": "r-1"}, {"callbacks": [runs]})
    quiet = chain.invoke({"user_question": QUESTION, "request_id": "r-1"})
    assert observed.model_dump(exclude={"latency_ms"}) == quiet.model_dump(exclude={"latency_ms"})
    names = [name for name, _ in runs.runs]
    assert names[:3] == ["groundlock.grounded_answer", "R1.RetrievalFront", "R2.AssembleEvidence"]
    # The chain's own run is a plain sequence's; every stage run carries the request id.
    assert all(metadata["request_id"] == "r-1" for _, metadata in runs.runs[1:])


# -- found in review ------------------------------------------------------------------------


class Everything(BaseCallbackHandler):
    """Everything any run reports: retriever results, chain inputs and outputs."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_retriever_end(self, documents: Any, **kwargs: Any) -> None:
        self.seen.append(repr(documents))

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.seen.append(repr(inputs))

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.seen.append(repr(outputs))


async def test_a_retrievers_denied_documents_reach_no_callback_or_event_stream() -> None:
    line = "The case drain filter is replaced every {} hours."
    documents = [
        doc("r-secret", "CANARY-DENIED " + line.format(100), score=0.95, business_unit="RAIL"),
        doc("r-ok", line.format(500), score=0.9, business_unit="MARINE"),
    ]
    access = AccessPolicy(attributes=("business_unit",))
    front = _front(
        ScoredRetriever(documents=documents), score_key="score", access=access,
        normalization="unit_interval",
    )  # fmt: skip
    chain = front | grounded_answer_chain()
    principal = {"principal_id": "t", "grants": {"business_unit": "MARINE"}}
    handler = Everything()
    response = chain.invoke(QUESTION, {**_as(principal), "callbacks": [handler]})
    assert response.status is GenerationStatus.OK
    assert handler.seen
    assert "CANARY-DENIED" not in "".join(handler.seen)
    events = [repr(e) async for e in chain.astream_events(QUESTION, _as(principal))]
    assert any("r-ok" in e for e in events)
    assert "CANARY-DENIED" not in "".join(events)
    assert "r-secret" not in "".join(events)


def test_numpy_scores_are_scores() -> None:
    np = pytest.importorskip("numpy")
    store = FixedScoreStore([(doc("c0"), np.float32(0.25)), (doc("c1"), np.int64(0))])
    bundle = _bundle(_front(store, normalization="unit_interval").invoke(QUESTION))
    assert [row.similarity_score for row in bundle.results] == [0.25, 0.0]


@pytest.mark.parametrize(
    ("front_options", "raw"),
    [
        ({"normalization": "relevance"}, True),
        ({"normalization": ScoreNormalization("exp_v1", lambda raw: math.exp(-raw))}, -5000.0),
    ],
)
def test_odd_scores_fail_as_similarity_integrity(front_options: dict[str, Any], raw: Any) -> None:
    store = FixedScoreStore([(doc("c0"), raw)], relevance=lambda d: 1 - d / 4)
    response = (_front(store, **front_options) | grounded_answer_chain()).invoke(QUESTION)
    assert response.failure_reason is ReasonCode.SIMILARITY_INTEGRITY


@pytest.mark.parametrize(
    "answer", [[("not a document", 0.9)], [doc("c0")], None, [(doc("c0"), 0.9, "extra")]]
)
def test_a_store_answering_nonsense_is_a_retrieval_failure(answer: Any) -> None:
    class Nonsense(FixedScoreStore):
        def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> Any:
            return answer

    response = (_front(Nonsense([])) | grounded_answer_chain()).invoke(QUESTION)
    assert response.failure_reason is ReasonCode.RETRIEVAL_FAILED


def test_a_question_over_the_token_budget_is_refused_before_the_search() -> None:
    store = FixedScoreStore([(doc("c0"), 0.9)])
    response = (_front(store) | grounded_answer_chain()).invoke("word " * 400)
    assert response.failure_reason is ReasonCode.PROMPT_BUDGET_EXCEEDED
    assert store.searches == []


def test_piped_into_a_chain_the_front_gates_with_the_chains_policy() -> None:
    from tests.builders import policy_with  # noqa: PLC0415

    strict = policy_with(policy_version="STRICT_QUESTIONS_V1", max_question_tokens=8)
    store = FixedScoreStore([(doc("c0"), 0.9)])
    chain = grounded_answer_chain(front=_front(store), policy=strict)
    response = chain.invoke("How often is the case drain filter of the pump replaced, and why?")
    assert response.failure_reason is ReasonCode.PROMPT_BUDGET_EXCEEDED
    assert store.searches == []
    assert chain.first.policy.policy_version == "STRICT_QUESTIONS_V1"


def test_a_pushed_filter_may_not_replace_a_base_filter() -> None:
    store = FixedScoreStore(_tagged_corpus())
    tenant = {"filter": lambda d: d.id != "c-ok-1"}
    front = _front(
        store.as_retriever(search_kwargs=tenant), access=ACCESS,
        search_filter=lambda principal: {"filter": lambda d: True},
    )  # fmt: skip
    response = (front | grounded_answer_chain()).invoke(QUESTION, _as(TECHNICIAN))
    assert response.failure_reason is ReasonCode.INTERNAL_ERROR
    assert store.searches == []


def test_blank_tags_are_no_tags_even_for_a_wildcard() -> None:
    auditor = Principal(
        principal_id="a", grants={"business_unit": "*", "sensitivity_level": "PUBLIC"}
    )
    for blank in ("", "   ", [" "], ["MARINE", ""]):
        assert not ACCESS.admits({"business_unit": blank, "sensitivity_level": "PUBLIC"}, auditor)
    with pytest.raises(ValueError, match="characters"):
        Principal(principal_id="a", grants={"business_unit": ""})


def test_an_unvalidated_principal_is_validated_before_it_grants_anything() -> None:
    units = AccessPolicy(attributes=("business_unit",))
    forged = Principal.model_construct(principal_id="x", grants={"business_unit": "ADMIN*"})
    assert not units.admits({"business_unit": "FINANCE"}, forged)  # not "A", "D", ..., "*"
    store = FixedScoreStore(_tagged_corpus())
    front = _front(store, access=units, top_k=6)
    bundle = _bundle(front.invoke(QUESTION, _as(forged)))
    assert bundle.results == ()
    assert bundle.access_denied_count == 6


class Wrapper(BaseRetriever):
    """A retriever calling another with no config, as custom retrievers often do."""

    inner: BaseRetriever

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.inner.invoke(query)


async def test_a_nested_retrievers_denied_documents_reach_no_observer() -> None:
    line = "The case drain filter is replaced every {} hours."
    documents = [
        doc("r-secret", "CANARY-DENIED " + line.format(100), score=0.95, business_unit="RAIL"),
        doc("r-ok", line.format(500), score=0.9, business_unit="MARINE"),
    ]
    front = _front(
        Wrapper(inner=ScoredRetriever(documents=documents)), score_key="score",
        access=AccessPolicy(attributes=("business_unit",)), normalization="unit_interval",
    )  # fmt: skip
    chain = front | grounded_answer_chain()
    config = _as({"principal_id": "t", "grants": {"business_unit": "MARINE"}})
    handler = Everything()
    with collect_runs() as collected:
        response = chain.invoke(QUESTION, {**config, "callbacks": [handler]})
        await chain.ainvoke(QUESTION, {**config, "callbacks": [handler]})
    assert response.status is GenerationStatus.OK
    events = [repr(e) async for e in chain.astream_events(QUESTION, config)]
    seen = "".join(handler.seen) + "".join(events) + repr(collected.traced_runs)
    assert "r-ok" in seen
    assert "CANARY-DENIED" not in seen


@pytest.mark.parametrize(
    ("normalization", "raw"),
    [
        ("unit_interval", 10**400),  # an int too large for a float
        (ScoreNormalization("neg_log_v1", lambda raw: -math.log(raw)), 0.0),  # domain error
    ],
    ids=["huge-int", "log-domain-error"],
)
def test_scores_that_break_the_arithmetic_fail_as_similarity_integrity(
    normalization: Any, raw: Any
) -> None:
    store = FixedScoreStore([(doc("c0"), raw)])
    response = (_front(store, normalization=normalization) | grounded_answer_chain()).invoke(
        QUESTION
    )
    assert response.failure_reason is ReasonCode.SIMILARITY_INTEGRITY


def test_invisible_tags_are_no_tags_for_a_wildcard() -> None:
    units = AccessPolicy(attributes=("business_unit",))
    anyone = Principal(principal_id="a", grants={"business_unit": "*"})
    for invisible in ("\u200b", "\ufeff", "\u2060", "\x00", "MARINE\u200b", "a|b"):
        assert not units.admits({"business_unit": invisible}, anyone)
    assert units.admits({"business_unit": "MARINE"}, anyone)


def test_a_front_piped_by_hand_keeps_its_own_gates_and_the_chain_still_refuses() -> None:
    from tests.builders import policy_with  # noqa: PLC0415

    strict = policy_with(policy_version="STRICT_QUESTIONS_V1", max_question_tokens=8)
    store = FixedScoreStore([(doc("c0"), 0.9)])
    chain = _front(store).pipe(grounded_answer_chain(policy=strict))
    response = chain.invoke("How often is the case drain filter of the pump replaced, and why?")
    # Plain LCEL piping cannot hand the chain's policy to the front (``front=`` does): the
    # front searches under its own gates, and R3 refuses under the chain's.
    assert response.failure_reason is ReasonCode.PROMPT_BUDGET_EXCEEDED
    assert len(store.searches) == 1


def test_a_presets_citation_metadata_and_answer_controls_come_through_the_front() -> None:
    """A paged store answers under 004's preset: file and page from metadata, the request's
    query type and history carried into the bundle, and the answer cites [Source: ...]."""
    document = Document(
        id="amm-14",
        page_content="Replace the case drain filter every 500 operating hours.",
        metadata={
            "file": "Tug AMM 29-11-00.pdf",
            "page": 14,
            "document_id": "AMM-29-11-00",
            "knowledge_id": "AMM-29-11-00",
        },
    )
    front = _front(
        cosine_store([(document, 0.93)]),
        fields={"source_file": "file"},
        policy="SOURCE_PAGE_POLICY_V1",
    )
    request = {
        "user_question": QUESTION,
        "query_type": "summary",
        "history": [{"role": "user", "content": "We are replacing the case drain filter."}],
    }
    bundle = _bundle(front.invoke(request))
    (row,) = bundle.results
    assert (row.source_file, row.page, row.document_id) == (
        "Tug AMM 29-11-00.pdf",
        14,
        "AMM-29-11-00",
    )
    assert bundle.query_type == "summary"
    assert [turn.content for turn in bundle.history] == ["We are replacing the case drain filter."]
    response = grounded_answer_chain(front=front, policy="SOURCE_PAGE_POLICY_V1").invoke(request)
    assert response.status is GenerationStatus.OK
    assert response.answer.endswith("[Source: Tug AMM 29-11-00.pdf, p.14]")
    assert response.citations[0].page == 14
