"""Quick start: assemble the evidence for a real-looking maintenance question, offline.

Run from the repository root:  python examples/quickstart.py
"""

from __future__ import annotations

import json
from pathlib import Path

from groundlock import AssembleEvidence

BUNDLE = Path(__file__).parent / "data" / "hydraulic_pump_bundle.json"


def main() -> None:
    """Run R2 on the sample bundle and show what a model would be allowed to see."""
    bundle = json.loads(BUNDLE.read_text(encoding="utf-8"))
    result = AssembleEvidence(policy="R2_POLICY_V1").invoke(bundle)

    print(f"question : {result.user_question}")
    print(f"status   : {result.assembly_status.value}")
    print(f"policy   : {result.trace.policy_version} (sha256 {result.trace.policy_sha256[:12]}…)")
    for item in result.selected_evidence:
        source = item.source_reference or "unknown source"
        print(f"  [{item.anchor}] rank {item.rank}  {item.chunk_id}  ({source})")
    if result.metrics is not None:
        for row in result.metrics.dropped_rows:
            print(f"  dropped rank {row.rank}  {row.chunk_id}: {row.reason.value}")
        print(f"evidence : {result.metrics.evidence_token_count} tokens")
    print("\n" + result.evidence_block_text, end="")


if __name__ == "__main__":
    main()
