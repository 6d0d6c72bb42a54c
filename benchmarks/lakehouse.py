"""The lakehouse index: how fast documents are indexed, and how fast Delta retrieval is.

    python benchmarks/lakehouse.py [--queries N] [--dimensions D]

Two synthetic corpora of Markdown documents (ten paragraphs of plausible maintenance text
each, front matter included), 10,000 and 100,000 chunks, are indexed with
``index_documents`` and the offline ``LexicalEmbeddings`` into Delta tables in a temporary
folder. Printed for each, in one run:

* index throughput: chunks per second of one whole run (read, chunk, embed, write both
  tables), from a cold index;
* a re-index of the unchanged corpus (it writes nothing; the time is the hash check);
* Delta retrieval latency of ``DeltaVectorStore.similarity_search_with_score`` (k = 8,
  the full cosine scan streamed in record batches plus the read of the top-k chunks),
  median and p99 over ``--queries`` questions, with and without a pushed-down filter.

The filter is applied in the scan, so the filtered rows are never scored; it skips whole
files only where the table's files are clustered by the column (partitioned, or
``optimize.z_order``), which a single indexing run's files are not, so here it saves the
scoring, not the reading.

The embedding dimension defaults to 256, not the library's 2048, so that the 100,000-row
table stays a few hundred megabytes; the scan's cost grows linearly with it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from groundlock.lakehouse import DeltaVectorStore, LexicalEmbeddings, index_documents

WORDS = (
    "pump filter valve seal bearing bolt torque pressure hydraulic winch crane tug engine "
    "inspection replaced greased checked every hours operating gauge leak spill hose clamp "
    "motor gearbox brake cable drum sheave coupling shaft oil temperature alarm sensor"
).split()
TYPES = ("MAINTENANCE_PROCEDURE", "INSPECTION_RECORD", "SAFETY_NOTICE", "FAILURE_REPORT")


def _corpus(folder: Path, documents: int, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    for number in range(documents):
        paragraphs = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 45))).capitalize() + "."
            for _ in range(10)
        ]
        header = (
            f"---\nknowledge_id: DOC-{number:06d}\nknowledge_type: {TYPES[number % 4]}\n"
            f"title: Document {number}\nequipment_id: EQ-{number % 50}\n"
            "business_unit: MARINE\nsensitivity_level: INTERNAL\n---\n"
        )
        (folder / f"doc-{number:06d}.md").write_text(header + "\n\n".join(paragraphs) + "\n")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _latencies(store: DeltaVectorStore, queries: list[str], **search: object) -> list[float]:
    seconds = []
    for query in queries:
        started = time.perf_counter()
        store.similarity_search_with_score(query, k=8, **search)  # type: ignore[arg-type]
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    """Index both corpora and time retrieval from each, in one run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--dimensions", type=int, default=256)
    args = parser.parse_args()
    embedding = LexicalEmbeddings(args.dimensions)
    rng = random.Random(7)
    queries = [" ".join(rng.choice(WORDS) for _ in range(8)) + "?" for _ in range(args.queries)]
    print(f"lexical embedding, {args.dimensions} dimensions; k = 8; {args.queries} queries\n")
    with tempfile.TemporaryDirectory() as scratch:
        for chunks in (10_000, 100_000):
            source = Path(scratch) / f"docs-{chunks}"
            index = Path(scratch) / f"index-{chunks}"
            _corpus(source, chunks // 10, seed=chunks)
            report = index_documents(source, index, embedding)
            again = index_documents(source, index, embedding)
            if report.chunks_written != chunks or again.wrote:
                raise SystemExit(f"unexpected index run: {report} / {again}")
            store = DeltaVectorStore(str(index), embedding)
            _latencies(store, queries[:3])  # warm the file listing and the page cache
            plain = _latencies(store, queries)
            filtered = _latencies(store, queries, filter={"knowledge_type": "SAFETY_NOTICE"})
            print(f"{chunks:>7,} chunks")
            print(
                f"  index: {report.seconds:6.1f} s  ({chunks / report.seconds:,.0f} chunks/s); "
                f"unchanged re-index {again.seconds:.2f} s, nothing written"
            )
            for label, seconds in (("retrieve", plain), ("filtered (1/4 of rows)", filtered)):
                print(
                    f"  {label}: median {statistics.median(seconds) * 1000:7.1f} ms, "
                    f"p99 {_percentile(seconds, 0.99) * 1000:7.1f} ms"
                )


if __name__ == "__main__":
    main()
