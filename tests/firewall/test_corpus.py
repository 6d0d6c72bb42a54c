"""Every frozen ruleset judges the corpus exactly as it did when it was frozen.

``corpus/answers.jsonl`` holds a few thousand answers over fixed bundles (see
``corpus/build.py``); ``corpus/verdicts_<ruleset>.jsonl`` the verdict each ruleset reached on
each when it was made (``firewall_v1``: by the code before rulesets existed, commit 9b69000;
``firewall_v2`` and ``firewall_v3``: when each was released).
A moved verdict under an existing ruleset name is a defect: a change of verdicts is a new
ruleset version.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundlock import load_policy
from tests.firewall.corpus.build import HERE
from tests.firewall.corpus.freeze import judged, verdict

FROZEN = {
    "R2_POLICY_V1": "firewall_v1",
    "R2_POLICY_V2": "firewall_v2",
    "R2_POLICY_V3": "firewall_v3",
}


def _frozen(ruleset: str) -> dict[str, dict[str, Any]]:
    with (HERE / f"verdicts_{ruleset}.jsonl").open(encoding="utf-8") as rows:
        return {row["id"]: row for row in map(json.loads, rows)}


@pytest.mark.parametrize(("policy", "ruleset"), FROZEN.items())
@pytest.mark.slow
def test_a_frozen_ruleset_reaches_every_verdict_it_was_frozen_with(policy, ruleset):
    frozen = _frozen(ruleset)
    moved = []
    for row, result in judged(load_policy(policy)):
        want = frozen.pop(row["id"])
        got = verdict(result)
        # Metrics added since the freeze are not part of it.
        got["metrics"] = {k: v for k, v in got["metrics"].items() if k in want["metrics"]}
        if got != {k: v for k, v in want.items() if k != "id"}:
            moved.append((row["id"], row["answer"][:80], want["failure_reason"], got))
    assert not frozen, f"{len(frozen)} frozen verdicts have no answer in the corpus"
    assert not moved, f"{len(moved)} verdicts moved, e.g. {moved[:3]}"
    assert result.firewall_ruleset == ruleset
