"""From a folder of documents to a cited answer: index, Delta store, front, chain; offline."""

from __future__ import annotations

from pathlib import Path

from groundlock import (
    AccessPolicy,
    Principal,
    RetrievalBundle,
    RetrievalFront,
    grounded_answer_chain,
)
from groundlock.lakehouse import (
    DeltaVectorStore,
    LexicalEmbeddings,
    index_documents,
    lexical_policy,
)

ACCESS = AccessPolicy(
    attributes=("business_unit",),
    levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "CONFIDENTIAL")},
)
TECHNICIAN = Principal(
    principal_id="tech-0412",
    grants={"business_unit": "MARINE", "sensitivity_level": "INTERNAL"},
)
INVESTIGATOR = Principal(
    principal_id="inv-0007",
    grants={"business_unit": "*", "sensitivity_level": "CONFIDENTIAL"},
)
WHY = "Why did the hydraulic pump of Tug 7 fail?"


def _front(index: Path, **options: object) -> RetrievalFront:
    store = DeltaVectorStore(str(index), LexicalEmbeddings())
    return RetrievalFront(
        source=store,
        index_version=store.index_version,
        embedding_model=store.embedding_model or "",
        normalization="cosine",
        access=ACCESS,
        top_k=6,
        **options,  # type: ignore[arg-type]
    )


def test_the_chain_answers_from_a_delta_index_with_citations(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    report = index_documents(corpus, index)
    chain = grounded_answer_chain(front=_front(index), policy=lexical_policy())
    response = chain.invoke(
        {"user_question": WHY, "request_id": "q1"},
        {"configurable": {"principal": INVESTIGATOR}},
    )
    assert response.status.value == "OK", response
    assert "1,400 operating hours" in response.answer
    assert [c.knowledge_id for c in response.citations] == ["FR-2026-017"]
    assert response.citations[0].source_reference.endswith("para. 1")
    bundle = _front(index).invoke(WHY, {"configurable": {"principal": INVESTIGATOR}})
    assert isinstance(bundle, RetrievalBundle)
    assert bundle.index_version == report.index_version
    assert bundle.embedding_model == "lexical-hash-2048"


def test_access_control_applies_to_delta_rows(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    index_documents(corpus, index)
    chain = grounded_answer_chain(front=_front(index), policy=lexical_policy())
    response = chain.invoke(WHY, {"configurable": {"principal": TECHNICIAN}})
    assert response.status.value != "OK"  # the confidential report is withheld
    assert "1,400" not in response.answer
    bundle = _front(index).invoke(WHY, {"configurable": {"principal": TECHNICIAN}})
    assert isinstance(bundle, RetrievalBundle)
    assert bundle.access_denied_count == 0  # filtered in the scan: never read, never counted
    assert all(row.knowledge_id != "FR-2026-017" for row in bundle.results)
    # Checked after an over-fetch instead, the denied rows fetched are counted.
    after = _front(index, scan_access=False).invoke(
        WHY, {"configurable": {"principal": TECHNICIAN}}
    )
    assert isinstance(after, RetrievalBundle)
    assert after.access_denied_count > 0
    assert all(row.knowledge_id != "FR-2026-017" for row in after.results)


def test_a_store_native_filter_reaches_the_scan(corpus: Path, tmp_path: Path):
    index = tmp_path / "idx"
    index_documents(corpus, index)
    front = _front(index, search_kwargs={"filter": {"knowledge_type": "SAFETY_NOTICE"}})
    bundle = front.invoke("fuel transfer", {"configurable": {"principal": INVESTIGATOR}})
    assert isinstance(bundle, RetrievalBundle)
    assert bundle.results
    assert {row.knowledge_type_effective for row in bundle.results} == {"SAFETY_NOTICE"}


def test_a_hit_whose_chunk_was_replaced_meanwhile_is_dropped(corpus: Path, tmp_path: Path):
    # Mid-re-index: the chunks table already holds the new text, the vectors are old ones.
    from deltalake import write_deltalake  # noqa: PLC0415

    from groundlock.lakehouse.chunking import chunk_document, read_document  # noqa: PLC0415
    from groundlock.lakehouse.indexer import _chunk_table  # noqa: PLC0415

    index = tmp_path / "idx"
    index_documents(corpus, index)
    path = corpus / "crane-slew-bearing.md"
    path.write_text(path.read_text().replace("1,250 Nm", "1,300 Nm"))
    fresh = chunk_document(read_document(path, corpus, settings="max_chars=1200"))
    write_deltalake(
        index / "chunks",
        _chunk_table(fresh, "in-flight"),
        mode="overwrite",
        predicate="document_id = 'crane-slew-bearing.md'",
    )
    store = DeltaVectorStore(str(index), LexicalEmbeddings())
    hits = store.similarity_search_with_score("slew bearing bolts torque", k=16)
    ids = [doc.id for doc, _ in hits]
    assert "crane-slew-bearing.md#2" not in ids  # its text changed under the old vector
    assert "crane-slew-bearing.md#1" in ids  # unchanged text, same hash: still served
