"""Quick start: a maintenance question through evidence assembly, prompt and model, offline.

Run from the repository root:  python examples/quickstart.py

The model is the offline ExtractiveChatModel, so no API key or network is needed. Its text is
shown as the *raw* model answer: the validator firewall (R5) that decides whether an answer
may reach a reader is the next stage to land.
"""

from __future__ import annotations

import json
from pathlib import Path

from groundlock import AssembleEvidence, BuildPrompt, ExecuteModel

BUNDLE = Path(__file__).parent / "data" / "hydraulic_pump_bundle.json"


def main() -> None:
    """Run R2 -> R3 -> R4 on the sample bundle and show what each stage decided."""
    bundle = json.loads(BUNDLE.read_text(encoding="utf-8"))
    chain = AssembleEvidence() | BuildPrompt() | ExecuteModel()
    result = chain.invoke(bundle)
    prompt, evidence = result.prompt, result.prompt.bundle

    print(f"question : {evidence.user_question}")
    print(
        f"policy   : {evidence.trace.policy_version} (sha256 {evidence.trace.policy_sha256[:12]}…)"
    )
    print("evidence :")
    for item in evidence.selected_evidence:
        print(f"  [{item.anchor}] rank {item.rank}  {item.chunk_id}  ({item.source_reference})")
    if evidence.metrics is not None:
        for row in evidence.metrics.dropped_rows:
            print(f"  dropped rank {row.rank}  {row.chunk_id}: {row.reason.value}")
    if prompt.tokens is not None:
        print(
            f"prompt   : {prompt.template_version}, sha256 {prompt.prompt_sha256}, "
            f"{prompt.tokens.total_prompt_tokens} tokens with the output reserve"
        )
    pinned = result.pinned
    print(
        f"model    : {pinned.model_name} (temperature {pinned.temperature}, "
        f"max {pinned.max_output_tokens} output tokens), {result.attempt_count} attempt(s), "
        f"status {result.generation_status.value}"
    )
    print("\nraw model answer (not yet validated):\n" + result.raw_model_text)


if __name__ == "__main__":
    main()
