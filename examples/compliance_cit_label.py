"""Preset CIT_LABEL_POLICY_V1 (spec 003): compliance documents cited as [CIT-01], [CIT-02].

Run from the repository root:  python examples/compliance_cit_label.py

The bundle (examples/data/presets/compliance_controls.json, written for this example) asks
about log retention and privileged access reviews. Its rows come from a records retention
policy, an access control standard, an internal audit report and regulator guidance; each
carries the ``citation_label`` a reader is shown, its ``document_id`` and ``page``. An
answer cites ``[CIT-01]`` for the first evidence entry, ``[CIT-02]`` for the second, and
each public citation maps the marker back to the label, document and page. The default
model is the offline ExtractiveChatModel, so no API key or network is needed.

It prints the validated answer with its citations and confidence, then shows what the
preset refuses: a marker past the last entry names nothing, one not written with two digits
is malformed, and a question the documents do not answer gets the policy's fixed refusal
line.
"""

from __future__ import annotations

import json
from pathlib import Path

from groundlock import grounded_answer_chain, load_policy, validate_text

POLICY = "CIT_LABEL_POLICY_V1"
BUNDLE = Path(__file__).parent / "data" / "presets" / "compliance_controls.json"


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
        print(
            f"  [{citation.anchor}] {citation.citation_label} "
            f"(document {citation.document_id}, p. {citation.page})"
        )
    # The top admitted similarity, bucketed: how well retrieval matched, not whether the
    # answer is right (R5 decided that).
    print(f"confidence: {response.confidence.value if response.confidence else None}")
    print(f"model: {response.model_used}")

    sentence = response.answer.splitlines()[0].rsplit(" [", 1)[0]
    print("\nthe first sentence under other markers (validate_text, no model):")
    for marker in ("[CIT-05]", "[CIT-1]", "[CIT-01]"):
        verdict = validate_text(f"{sentence} {marker}", bundle, POLICY)
        reason = verdict.failure_reason.value if verdict.failure_reason else "-"
        print(f"  {marker}: {verdict.validation_status.value} {reason}")

    question = "Which encryption algorithm is mandated for laptops leaving the office?"
    refused = chain.invoke({**bundle, "user_question": question})
    print(f"\nquestion: {question}")
    print(f"status: {refused.status.value}")
    print(f"answer: {refused.answer}")
    print(f"the policy's refusal line: {refused.answer == load_policy(POLICY).refusal_text}")


if __name__ == "__main__":
    main()
