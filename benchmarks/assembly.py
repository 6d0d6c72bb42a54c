"""R2 assembly time for bundles of 20, 100 and 1000 rows of ~300-token chunks.

    python benchmarks/assembly.py [--repeat N]

Cold: every cache (token counts, sanitised text, shingles, entry facts) is emptied before
each call, as in a fresh process. Warm: the same bundle again, as when popular chunks recur.
Input is the parsed-JSON dict a server receives, so pydantic validation is part of the
measured time.

Targets (issue 2): 20 rows warm under 0.5 ms median; time growing no faster than linearly
with rows. The "all near-duplicates" case makes the walk examine every row (each is compared
with the one admitted chunk), which is where pairwise dedup would show up as quadratic.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from groundlock import assemble, load_policy
from groundlock.core.evidence_assembly import ENTRY_FACTS
from groundlock.text import get_token_counter
from groundlock.text.overlap import SHINGLE_CACHE
from groundlock.text.sanitize import SANITIZE_CACHE

POLICY = load_policy()
COUNTER = get_token_counter(POLICY.token_encoding)

_SENTENCES = [
    "Depressurise the hydraulic system before removing the case drain filter bowl.",
    "Torque the filter bowl to {n} Nm and lock-wire it to the housing boss.",
    "Replace the element every {n} operating hours or when the bypass indicator extends.",
    "Record the differential pressure reading on the inspection card, item {n}.",
    "Check the reservoir sight gauge; the level must be within the green band at {n} C.",
    "Inspect the pump mounting flange for cracks longer than {n} mm using a 10x lens.",
    "If case drain pressure exceeds 3.5 bar at {n} rpm, remove the pump for overhaul.",
    "Bleed the return line at the high point until fluid runs free of air for {n} seconds.",
    "Verify the accumulator pre-charge with the system depressurised: {n} bar nitrogen.",
    "Install new O-rings lubricated with system fluid; discard the old seals (part {n}).",
]


def _chunk(seed: int, tokens: int = 300) -> str:
    rng = random.Random(seed)
    text = f"Task {seed}."
    while COUNTER.count(text) < tokens:
        text += " " + rng.choice(_SENTENCES).format(n=rng.randint(1, 9999))
    return text


def _bundle(rows: int, *, duplicates: bool = False) -> dict[str, Any]:
    base = _chunk(0)
    results = [
        {
            "chunk_id": f"c{rank:05d}",
            "rank": rank,
            "faiss_id": rank,
            "similarity": 0.99 - rank * 0.0001,
            "chunk_text": base + f" Copy {rank}." if duplicates else _chunk(rank),
            "knowledge_id": f"DOC-{rank // 3}",
            "knowledge_type_effective": "MAINTENANCE_PROCEDURE",
            "equipment_id": "TUG-7",
            "event_date": "2025-06-01",
        }
        for rank in range(rows)
    ]
    return {
        "request_id": "bench",
        "run_id": "bench-run",
        "user_question": "How often is the case drain filter replaced?",
        "retrieval_status": "SUCCESS",
        "index_version": "idx",
        "embedding_model": "emb",
        "top_k": rows,
        "results": results,
    }


def _clear_caches() -> None:
    ENTRY_FACTS.clear()
    COUNTER.cache.clear()
    SANITIZE_CACHE.clear()
    SHINGLE_CACHE.clear()


def _measure(call: Callable[[], object], repeat: int, *, cold: bool) -> list[float]:
    samples = []
    call()  # import-time and first-call effects stay out of the figures
    for _ in range(repeat):
        if cold:
            _clear_caches()
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> None:
    """Print a table of medians and p99s, then the growth ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    repeat = parser.parse_args().repeat

    print(f"R2 assembly, policy {POLICY.policy_version}, {repeat} calls per cell (ms)")
    print(f"{'case':<34}{'cache':<7}{'median':>9}{'p99':>9}{'per row':>10}")
    medians: dict[tuple[str, int, str], float] = {}
    for label, duplicates in (("distinct chunks", False), ("all near-duplicates", True)):
        for rows in (20, 100, 1000):
            bundle = _bundle(rows, duplicates=duplicates)
            result = assemble(bundle, POLICY)
            if result.metrics is None:
                raise SystemExit(f"benchmark bundle did not assemble: {result.message}")
            for cache in ("cold", "warm"):
                samples = _measure(
                    lambda b=bundle: assemble(b, POLICY),
                    max(20, repeat // (rows // 20)),
                    cold=cache == "cold",
                )
                median = statistics.median(samples)
                medians[label, rows, cache] = median
                name = f"{label}, {rows} rows ({result.metrics.selected_k} kept)"
                print(
                    f"{name:<34}{cache:<7}{median:>9.3f}{_p99(samples):>9.3f}"
                    f"{median / rows * 1000:>8.2f}us"
                )
    print("\ngrowth of the warm median (linear would equal the row ratio):")
    for label in ("distinct chunks", "all near-duplicates"):
        small, mid, large = (medians[label, n, "warm"] for n in (20, 100, 1000))
        print(
            f"  {label:<22} 100/20 rows: x{mid / small:.1f} (rows x5)   "
            f"1000/100 rows: x{large / mid:.1f} (rows x10)"
        )
    target = medians["distinct chunks", 20, "warm"]
    verdict = "met" if target < 0.5 else "MISSED"
    print(f"\n20 rows warm median {target:.3f} ms (target < 0.5 ms): {verdict}")


if __name__ == "__main__":
    main()
