"""Preset SEMANTIC_ID_POLICY_V1 (spec 002): statute sections cited by their semantic ids.

Run from the repository root:  python examples/legal_semantic_id.py

The bundle (examples/data/presets/legal_penal_code.json, written for this example) asks
about a penal code's fraudulent inducement offence. Its rows are statute sections, a court
of appeal judgment and a commentary, each with a ``semantic_id`` such as
``PenalCode_420_0``; the commentary has none and is cited by its ``chunk_id``. The answer
cites ``[PenalCode_420_0]`` instead of ``[C0]``, and the refusal is exactly
``I cannot answer based on the provided documents.``. The default model is the offline
ExtractiveChatModel, so no API key or network is needed.

It prints the validated answer with its citations and confidence, then shows what the
preset refuses: markers are matched exactly, so an invented section or a change of case
names nothing, and a question the sections do not answer gets the exact refusal.
"""

from __future__ import annotations

import json
from pathlib import Path

from groundlock import grounded_answer_chain, validate_text

POLICY = "SEMANTIC_ID_POLICY_V1"
BUNDLE = Path(__file__).parent / "data" / "presets" / "legal_penal_code.json"


def main() -> None:
    """Answer the sample question, then show the markers and the question it refuses."""
    bundle = json.loads(BUNDLE.read_text(encoding="utf-8"))
    chain = grounded_answer_chain(policy=POLICY)
    print(f"policy: {POLICY}")
    print(f"question: {bundle['user_question']}\n")

    response = chain.invoke(bundle)
    print(f"status: {response.status.value}")
    print("answer (validated, every sentence cited):")
    print(response.answer)
    print("citations:")
    for citation in response.citations:
        document = f", document {citation.document_id}" if citation.document_id else ""
        print(f"  [{citation.anchor}] {citation.source_reference}{document}")
    print(f"confidence: {response.confidence.value if response.confidence else None}")
    print(f"model: {response.model_used}")

    # A marker names a section only when it is exactly that section's id: no case folding,
    # no nearest id. validate_text judges text written elsewhere; no model is called.
    sentence = response.answer.splitlines()[0].rsplit(" [", 1)[0]
    print("\nthe first sentence under other markers (validate_text, no model):")
    for marker in ("[PenalCode_421_0]", "[penalcode_420_0]", "[PenalCode_420_0]"):
        verdict = validate_text(f"{sentence} {marker}", bundle, POLICY)
        reason = verdict.failure_reason.value if verdict.failure_reason else "-"
        print(f"  {marker}: {verdict.validation_status.value} {reason}")

    unanswerable = {**bundle, "user_question": "Can a landlord evict a tenant in winter?"}
    refused = chain.invoke(unanswerable)
    print(f"\nquestion: {unanswerable['user_question']}")
    print(f"status: {refused.status.value}")
    print(f"answer: {refused.answer}")


if __name__ == "__main__":
    main()
