"""The citation presets answer from a lexical index, each through its lexical twin.

Run from the repository root:  python examples/lakehouse_presets.py

The six handbook documents (``examples/handbook/docs/``) are indexed with
``index_documents`` and the offline lexical embedding into Delta tables in a temporary
folder. Every row of the index carries what each preset cites by: its ``source_file`` and
``page`` (a text file is page 1), a ``semantic_id`` (``<knowledge_id>_<n>``, n as in the
chunk id) and a ``citation_label`` (the document's title). The index's rows are checked
against each twin's citation grammar: each run commits nothing, because the rows pass.

A preset's similarity gates (0.76) are calibrated for a neural embedding; the lexical
embedding scores the paragraph that answers a question about 0.3 to 0.6, so
``SOURCE_PAGE_POLICY_V2`` itself refuses what the index finds. Its lexical twin
``SOURCE_PAGE_POLICY_V2_LEXICAL`` is the same frozen policy with both gates at 0.33, under
a name of its own, so every audit row says which gates judged. Two questions are answered
under three twins with the offline extractive model (no API key, no network), each answer
printed with its citations; a question the documents do not answer gets each preset's
exact refusal.

The handbook's files are Markdown, and ``.md`` is also a country's top-level domain: a
Markdown renderer that links bare host names reads ``[Source: crane-slew-bearing.md, p.1]``
as a link. ``SOURCE_PAGE_POLICY_V1`` (ruleset ``source_page_v1``) withholds such an answer
as ``UNSAFE_OUTPUT``, as its twin shows below; ``SOURCE_PAGE_POLICY_V2`` (ruleset
``source_page_v2``) reads the name of a file it admitted as that file's name, not a link.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from groundlock import RetrievalFront, grounded_answer_chain, load_policy
from groundlock.lakehouse import (
    LEXICAL_TWINS,
    DeltaVectorStore,
    LexicalEmbeddings,
    index_documents,
    list_documents,
)

DOCS = Path(__file__).parent / "handbook" / "docs"
PRESETS = ("SOURCE_PAGE_POLICY_V2", "SEMANTIC_ID_POLICY_V1", "CIT_LABEL_POLICY_V1")
QUESTIONS = (
    "How often is the case drain filter of the hydraulic pump replaced?",
    "What torque do the slew bearing bolts of the crane need?",
)
UNANSWERABLE = "What colour is the harbour master's cat?"


def main() -> None:
    """Index, check the rows under every twin, show what V1 and the gates refuse, answer."""
    with tempfile.TemporaryDirectory() as root:
        index = f"{root}/index"
        report = index_documents(DOCS, index, LexicalEmbeddings())
        listing = list_documents(index)
        print(
            f"index: {report.chunks_written} chunks of {report.documents} documents, "
            f"{report.embedding_model} (index_version {report.index_version})"
        )
        for document in listing.items:
            print(
                f"  {document.document_id}: {document.chunks} chunks, page "
                f"{document.first_page}, label {document.citation_label!r}"
            )
        for preset in PRESETS:
            twin = LEXICAL_TWINS[preset]
            again = index_documents(DOCS, index, LexicalEmbeddings(), policy=twin)
            state = "rewritten" if again.wrote else "unchanged"
            print(f"rows checked under {twin}: pass ({state})")

        front = RetrievalFront.over_index(DeltaVectorStore(index, LexicalEmbeddings()), top_k=6)
        top = front.invoke(QUESTIONS[0]).results[0].similarity_score
        preset = load_policy(PRESETS[0])
        refused = grounded_answer_chain(front=front, policy=preset).invoke(QUESTIONS[0])
        print(
            f"\nunder {preset.policy_version} itself: {refused.status.value} (the best row "
            f"scores {top:.2f}, below its gate of {preset.min_top_similarity_score})"
        )
        v1 = load_policy(LEXICAL_TWINS["SOURCE_PAGE_POLICY_V1"])
        withheld = grounded_answer_chain(front=front, policy=v1).invoke(QUESTIONS[1])
        print(
            f"under {v1.policy_version} (ruleset {v1.firewall_ruleset}): "
            f"{withheld.status.value} {withheld.failure_reason} (its marker names "
            "crane-slew-bearing.md, a host name to a linkifier)"
        )
        for name in PRESETS:
            twin = load_policy(LEXICAL_TWINS[name])
            chain = grounded_answer_chain(front=front, policy=twin)
            print(
                f"\npolicy: {twin.policy_version} ({name} with gates of "
                f"{twin.min_top_similarity_score})"
            )
            for question in QUESTIONS:
                response = chain.invoke(question)
                print(f"question: {question}")
                print(f"status: {response.status.value}")
                print("answer (validated, every sentence cited):")
                print(response.answer)
                print("citations:")
                for citation in response.citations:
                    print(
                        f"  [{citation.anchor}] {citation.source_reference} (document "
                        f"{citation.document_id}, p. {citation.page}, label "
                        f"{citation.citation_label!r})"
                    )
            refusal = chain.invoke(UNANSWERABLE)
            print(f"question: {UNANSWERABLE}")
            print(f"status: {refusal.status.value}")
            print(f"answer: {refusal.answer}")


if __name__ == "__main__":
    main()
