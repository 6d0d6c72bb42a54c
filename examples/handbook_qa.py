"""Retrieval front end to end: index a folder of documents, then answer plain questions.

Run from the repository root:  python examples/handbook_qa.py

``examples/handbook/docs/`` holds six short documents of a harbour operator, written for
this example: maintenance manuals, an inspection record, a safety notice, a confidential
failure investigation and an untagged draft. Each carries its citation metadata and its
access tags (``business_unit``, ``sensitivity_level``) in a front-matter block.

The script chunks them by paragraph, embeds the chunks offline with groundlock's lexical
embedding (``groundlock.lakehouse.LexicalEmbeddings``, the default of ``groundlock index``),
and indexes them in LangChain's ``InMemoryVectorStore``. It then asks
questions through ``grounded_answer_chain(front=RetrievalFront(...))`` as two principals: a tug
technician (MARINE, up to INTERNAL) and a safety investigator (every unit, up to
CONFIDENTIAL). The technician never sees the confidential report or the untagged draft;
the audit trail counts what was withheld from each request.

The lexical embedding scores lower than a neural one would (a question shares only a few
words with a paragraph), so the example runs under its own locked policy,
``HANDBOOK_POLICY_V1``, whose similarity gates are calibrated for it. A policy's gates mean
something only for the embedding they were calibrated on.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from groundlock import (
    AccessPolicy,
    DeltaAuditStore,
    Principal,
    QueryRow,
    RetrievalFront,
    grounded_answer_chain,
    load_policy,
)
from groundlock.lakehouse import LexicalEmbeddings

HERE = Path(__file__).parent / "handbook"
DOCS = HERE / "docs"
POLICY = HERE / "HANDBOOK_POLICY_V1.json"

ACCESS = AccessPolicy(
    attributes=("business_unit",),
    levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "CONFIDENTIAL")},
)
TECHNICIAN = Principal(
    principal_id="tech-0412",
    role="technician",
    grants={"business_unit": "MARINE", "sensitivity_level": "INTERNAL"},
)
INVESTIGATOR = Principal(
    principal_id="inv-0007",
    role="investigator",
    grants={"business_unit": "*", "sensitivity_level": "CONFIDENTIAL"},
)
QUESTIONS = [
    (TECHNICIAN, "How often is the case drain filter of the hydraulic pump replaced?"),
    (TECHNICIAN, "Why did the hydraulic pump of Tug 7 fail?"),
    (INVESTIGATOR, "Why did the hydraulic pump of Tug 7 fail?"),
    (TECHNICIAN, "What torque do the slew bearing bolts of the crane need?"),
]


def load_chunks(folder: Path) -> list[Document]:
    """Every paragraph of every document, with its citation and access metadata."""
    chunks = []
    for path in sorted(folder.glob("*.md")):
        _, header, body = path.read_text(encoding="utf-8").split("---\n", 2)
        meta: dict[str, Any] = yaml.safe_load(header)
        paragraphs = [p.strip() for p in body.split("\n\n") if p.strip()]
        for number, paragraph in enumerate(paragraphs, start=1):
            metadata = {
                "knowledge_id": meta["knowledge_id"],
                "knowledge_type_effective": meta["knowledge_type"],
                "source_reference": f"{meta['title']}, para. {number}",
                "equipment_id": meta.get("equipment_id"),
                "event_date": meta.get("event_date"),
                "business_unit": meta.get("business_unit"),
                "sensitivity_level": meta.get("sensitivity_level"),
            }
            chunk_id = f"{path.stem}#{number}"
            chunks.append(Document(id=chunk_id, page_content=paragraph, metadata=metadata))
    return chunks


def build_front(chunks: list[Document]) -> RetrievalFront:
    """The retrieval front over an in-memory index of ``chunks``."""
    store = InMemoryVectorStore(LexicalEmbeddings())
    store.add_documents(chunks)
    return RetrievalFront(
        source=store,
        index_version="handbook-2026-11",
        embedding_model="lexical-hash-2048",
        normalization="cosine",
        access=ACCESS,
        top_k=6,
    )


def main() -> None:
    """Index the handbook, answer the questions, and show what the audit trail recorded."""
    chunks = load_chunks(DOCS)
    print(f"indexed {len(chunks)} paragraphs from {len(list(DOCS.glob('*.md')))} documents\n")
    front = build_front(chunks)
    with tempfile.TemporaryDirectory() as audit_dir:
        store = DeltaAuditStore(audit_dir)
        chain = grounded_answer_chain(front=front, policy=load_policy(POLICY), store=store)
        for number, (principal, question) in enumerate(QUESTIONS, start=1):
            response = chain.invoke(
                {"user_question": question, "request_id": f"q{number}"},
                {"configurable": {"principal": principal}},
            )
            print(f"q{number} as {principal.role}: {question}")
            print(f"  status: {response.status.value}")
            for line in response.answer.splitlines():
                print(f"  | {line}")
            for citation in response.citations:
                print(f"  [{citation.anchor}] {citation.source_reference}")
            print()
        store.close()
        print("audit trail (query log):")
        for row in sorted(store.select(QueryRow), key=lambda row: row.request_id or ""):
            print(
                f"  {row.request_id}: {row.status}, {len(row.retrieved_chunk_ids)} rows retrieved, "
                f"{row.access_denied_count} withheld from the requester, "
                f"scores by {row.score_normalization}"
            )


if __name__ == "__main__":
    main()
