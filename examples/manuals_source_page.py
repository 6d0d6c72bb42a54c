"""Preset SOURCE_PAGE_POLICY_V1 (spec 004): paged PDF manuals cited by file and page.

Run from the repository root:  python examples/manuals_source_page.py

The bundle (examples/data/presets/manuals_case_drain_filter.json, written for this example)
asks for a summary of a tug's case drain filter change. Its rows are pages of aircraft-tug
maintenance manuals and a service bulletin, each with its ``source_file`` and ``page``; the
answer cites ``[Source: Tug AMM 29-11-00.pdf, p.14]``. The request is a ``summary``
(a larger output budget and word limit than ``factual``) and carries two turns of earlier
conversation: untrusted background, shown to the model in its own section, never citable.
The default model is the offline ExtractiveChatModel, so no API key or network is needed.

It prints the validated answer with its citations and confidence, then shows what the
preset refuses. Spec 004 resolved a marker that was nearly right (a file name's substring,
the page alone, the answer's first citation as a last resort); this preset does not: a
marker names exactly an admitted file and page, or it is an invalid reference. A fact that
only the conversation history holds is refused too.
"""

from __future__ import annotations

import json
from pathlib import Path

from groundlock import grounded_answer_chain, load_policy, validate_text

POLICY = "SOURCE_PAGE_POLICY_V1"
BUNDLE = Path(__file__).parent / "data" / "presets" / "manuals_case_drain_filter.json"


def _judge(label: str, answer: str, bundle: dict[str, object]) -> None:
    verdict = validate_text(answer, bundle, POLICY)
    reason = verdict.failure_reason.value if verdict.failure_reason else "-"
    print(f"  {label}: {verdict.validation_status.value} {reason}")


def main() -> None:
    """Answer the sample question, then show the markers and the fact it refuses."""
    bundle = json.loads(BUNDLE.read_text(encoding="utf-8"))
    policy = load_policy(POLICY)
    budget = policy.budget_for(bundle["query_type"])
    window = policy.history
    print(f"policy: {POLICY}")
    print(f"question: {bundle['user_question']}")
    if budget is not None and window is not None:
        print(
            f"query type: {bundle['query_type']} (at most {budget.max_words} words, "
            f"{budget.reserved_output_tokens} output tokens)"
        )
        print(
            f"history: {len(bundle['history'])} turns given (window: the newest "
            f"{window.max_turns} turns within {window.max_tokens} tokens)\n"
        )

    response = grounded_answer_chain(policy=POLICY).invoke(bundle)
    print(f"status: {response.status.value}")
    print("answer (validated, every sentence cited):")
    print(response.answer)
    print("citations:")
    for citation in response.citations:
        print(f"  [{citation.anchor}] page {citation.page} of {citation.source_reference}")
    print(f"confidence: {response.confidence.value if response.confidence else None}")
    print(f"model: {response.model_used}")

    torque = "Torque the filter bowl to 45 Nm."
    print("\n004's fuzzy markers are invalid references (validate_text, no model):")
    _judge("file name shortened", f"{torque} [Source: Tug AMM, p.15]", bundle)
    _judge("right page, wrong file", f"{torque} [Source: Tug AMM 29-11-05.pdf, p.15]", bundle)
    _judge("page not admitted", f"{torque} [Source: Tug AMM 29-11-00.pdf, p.16]", bundle)
    _judge("exact file and page", f"{torque} [Source: Tug AMM 29-11-00.pdf, p.15]", bundle)
    print("a fact only the history holds (item 12) is not supported by what it cites:")
    history_fact = (
        "The case drain filter is item 12 of the hydraulic pump. "
        "[Source: Tug AMM 29-11-00.pdf, p.14]"
    )
    _judge("history-only fact", history_fact, bundle)


if __name__ == "__main__":
    main()
