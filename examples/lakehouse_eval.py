"""The lakehouse loop end to end: index into Delta, answer from Delta, evaluate, compare.

Run from the repository root:  python examples/lakehouse_eval.py

The six handbook documents (``examples/handbook/docs/``) are indexed with
``index_documents`` and the offline lexical embedding into Delta tables in a temporary
folder. A ``RetrievalFront`` over a ``DeltaVectorStore`` answers the gold set
``examples/handbook/gold.jsonl`` (twelve questions written for this project from those
documents: nine answerable, each with the chunk a correct answer cites, three not
answerable from them) under two policies: the lexical index's own ``R2_POLICY_V4_LEXICAL``
and the handbook example's ``HANDBOOK_POLICY_V1``. Each run is scored and appended to a
Delta evaluation log; a reviewer rejects one answer; the script prints both runs'
summaries and the items whose outcome differs.

Every number printed is deterministic: the offline extractive model and the lexical
embedding have no randomness, the run ids are fixed, and no latency is printed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from groundlock import RetrievalFront, grounded_answer_chain, load_policy
from groundlock.lakehouse import (
    DeltaVectorStore,
    LexicalEmbeddings,
    compare,
    index_documents,
    lexical_policy,
    read_eval_log,
    run_eval,
    set_review,
)
from groundlock.lakehouse.evaluation import format_summary

HERE = Path(__file__).parent / "handbook"
DOCS = HERE / "docs"
GOLD = HERE / "gold.jsonl"
HANDBOOK_POLICY = HERE / "HANDBOOK_POLICY_V1.json"


def main() -> None:
    """Index, evaluate under two policies, review one item, print the comparison."""
    with tempfile.TemporaryDirectory() as root:
        report = index_documents(DOCS, f"{root}/index", LexicalEmbeddings())
        print(
            f"indexed {report.chunks_written} chunks from {report.documents} documents "
            f"(index_version {report.index_version})"
        )
        store = DeltaVectorStore(f"{root}/index", LexicalEmbeddings())
        front = RetrievalFront.over_index(store, top_k=6)
        log = f"{root}/eval_log"
        for run_id, policy in (
            ("lexical", lexical_policy()),
            ("handbook", load_policy(HANDBOOK_POLICY)),
        ):
            chain = grounded_answer_chain(front=front, policy=policy)
            rows = run_eval(GOLD, chain, run_id=run_id, table_uri=log)
            print(f"\nrun {run_id} ({policy.policy_version}): {len(rows)} items")
            for row in rows:
                precision = (
                    "-" if row.citation_precision is None else f"{row.citation_precision:.2f}"
                )
                recall = "-" if row.citation_recall is None else f"{row.citation_recall:.2f}"
                verdict = "pass" if row.passed else "FAIL"
                print(
                    f"  {row.item_id} {verdict} {row.status:<11} precision {precision:>4} "
                    f"recall {recall:>4}  cites {', '.join(row.actual_citations) or '-'}"
                )
        set_review(log, "lexical", "g01", "approved", "reviewer-ann")
        set_review(log, "lexical", "g09", "rejected", "reviewer-ann")
        summaries, changes = compare(read_eval_log(log), "lexical", "handbook")
        print("\nevaluation summary:")
        print(format_summary(summaries))
        print("items that changed: " + ("; ".join(changes) if changes else "none"))


if __name__ == "__main__":
    main()
