"""R3 prompt building and R4 executor overhead.

    python benchmarks/prompt_and_execute.py [--repeat N]

* Prompt build for an OK bundle of 6 chunks of ~300 tokens (a new question each call, as in
  production, so only the static template segments are cached).
* The worst PB4 case: a policy whose total budget forces R3 to drop 5 of the 6 chunks, one
  rebuild per dropped chunk.
* Executor overhead: ``ExecuteModel.invoke(prompt)`` around an instant fake chat model, next
  to calling the same model directly with the same two messages. The difference is what
  pinning, the integrity hash, tenacity, reply mapping and the result contract cost.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from groundlock import ExecuteModel, Policy, assemble, build_prompt, load_policy

POLICY = load_policy()
SENTENCES = [
    "Depressurise the hydraulic system before removing the case drain filter bowl.",
    "Torque the filter bowl to {n} Nm and lock-wire it to the housing boss.",
    "Replace the element every {n} operating hours or when the bypass indicator extends.",
    "Record the differential pressure reading on the inspection card, item {n}.",
    "Inspect the pump mounting flange for cracks longer than {n} mm using a 10x lens.",
]


def _bundle(chunks: int = 6) -> dict[str, object]:
    rows = []
    for rank in range(chunks):
        words = " ".join(
            SENTENCES[(rank + i) % len(SENTENCES)].format(n=rank * 97 + i) for i in range(20)
        )
        rows.append({
            "chunk_id": f"c{rank}", "rank": rank, "similarity": 0.95 - rank / 100,
            "knowledge_id": f"DOC-{rank}", "chunk_text": f"Task {rank}. {words}",
        })  # fmt: skip
    return {
        "request_id": "bench", "user_question": "How often is the filter element replaced?",
        "retrieval_status": "SUCCESS", "index_version": "idx", "embedding_model": "emb",
        "top_k": chunks, "results": rows,
    }  # fmt: skip


def _measure(call: Callable[[int], object], repeat: int) -> tuple[float, float]:
    call(-1)
    samples = []
    for index in range(repeat):
        start = time.perf_counter_ns()
        call(index)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    ordered = sorted(samples)
    return statistics.median(samples), ordered[min(len(ordered) - 1, round(0.99 * (repeat - 1)))]


def main() -> None:
    """Print medians and p99s, in milliseconds, measured in this one run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=500)
    repeat = parser.parse_args().repeat

    bundle = assemble(_bundle(), POLICY)
    tokens = bundle.evidence_token_count
    print(f"R3/R4, policy {POLICY.policy_version}, {repeat} calls per line (ms)")
    print(f"{'case':<60}{'median':>9}{'p99':>9}")

    def build_ok(i: int) -> object:
        return build_prompt(
            bundle.model_copy(update={"user_question": f"Filter interval {i}?"}), POLICY
        )

    median, p99 = _measure(build_ok, repeat)
    print(f"{f'prompt build, 6 chunks ({tokens} evidence tokens)':<60}{median:>9.3f}{p99:>9.3f}")

    tight = Policy.model_validate({
        **POLICY.model_dump(), "policy_version": "BENCH_TIGHT_V1",
        "max_total_prompt_tokens": POLICY.reserved_output_tokens + 900,
        "max_evidence_tokens": 2200 - 1700, "reserved_output_tokens": 800,
    })  # fmt: skip
    wide = Policy.model_validate({**POLICY.model_dump(), "policy_version": "BENCH_WIDE_V1"})
    big = assemble(_bundle(), wide)
    pruned = build_prompt(big, tight).pruned_chunk_count
    median, p99 = _measure(lambda _i: build_prompt(big, tight), repeat)
    label = f"prompt build, worst PB4 case ({pruned} of 6 chunks dropped)"
    print(f"{label:<60}{median:>9.3f}{p99:>9.3f}")

    prompt = build_prompt(bundle, POLICY)
    messages = [SystemMessage(prompt.messages[0].content), HumanMessage(prompt.messages[1].content)]
    fake = FakeListChatModel(responses=["The element is replaced every 500 hours. [C0]"])
    stage = ExecuteModel(model=fake)
    direct, direct_p99 = _measure(lambda _i: fake.invoke(messages), repeat)
    wrapped, wrapped_p99 = _measure(lambda _i: stage.invoke(prompt), repeat)
    print(f"{'instant fake model, called directly':<60}{direct:>9.3f}{direct_p99:>9.3f}")
    print(f"{'the same model through ExecuteModel':<60}{wrapped:>9.3f}{wrapped_p99:>9.3f}")
    print(f"\nexecutor overhead: {wrapped - direct:.3f} ms per request (x{wrapped / direct:.2f})")


if __name__ == "__main__":
    main()
