"""Quick start: a maintenance question through the whole groundlock chain, offline.

Run from the repository root:  python examples/quickstart.py

The sample bundle (examples/data/hydraulic_pump_bundle.json) asks about a tug's hydraulic
pump: eight retrieved rows, including a near-duplicate, a row that fails the equipment
filter, a low-scoring row, and a service bulletin carrying an injected instruction. The
default model is the offline ExtractiveChatModel, so no API key or network is needed.

It prints the public response (the only thing that leaves the chain), then runs the same
bundle through a model that adds an unsupported sentence, to show the firewall withholding it.
"""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from groundlock import grounded_answer_chain

BUNDLE = Path(__file__).parent / "data" / "hydraulic_pump_bundle.json"


def main() -> None:
    """Answer the sample question, then show a rejected answer."""
    bundle = json.loads(BUNDLE.read_text(encoding="utf-8"))
    print(f"question: {bundle['user_question']}\n")

    response = grounded_answer_chain().invoke(bundle)
    print(f"status: {response.status.value}")
    print("answer (validated, every sentence cited):")
    print(response.answer)
    print("citations:")
    for citation in response.citations:
        dated = citation.event_date or "undated"
        print(
            f"  [{citation.anchor}] {citation.source_reference} "
            f"({citation.knowledge_id}, {dated}, {citation.equipment_id})"
        )
    usage = response.token_usage
    print(f"tokens: {usage.total_tokens}, model latency: {response.latency_ms:.1f} ms")

    print("\nthe same bundle, a model that adds an uncited sentence:")
    adds_a_claim = FakeListChatModel(
        responses=[f"{response.answer}\nThe pump needs no other maintenance."]
    )
    rejected = grounded_answer_chain(model=adds_a_claim).invoke(bundle)
    print(f"status: {rejected.status.value}, failure_reason: {rejected.failure_reason}")
    print(f"answer: {rejected.answer!r} (withheld)")
    print("\npublic response JSON:")
    print(response.model_dump_json(indent=2))


if __name__ == "__main__":
    main()
