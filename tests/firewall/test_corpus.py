"""Every frozen ruleset judges the corpus exactly as it did when it was frozen.

``corpus/answers.jsonl`` holds a few thousand answers over fixed bundles (see
``corpus/build.py``); ``corpus/verdicts_<ruleset>.jsonl`` the verdict each ruleset reached on
each when it was made (``firewall_v1``: by the code before rulesets existed, commit 9b69000;
``firewall_v2`` and ``firewall_v3``: when each was released; ``source_page_v1`` by the code
of commit 11f6d12, before ``source_page_v2`` was added, and ``source_page_v2`` when it was;
``firewall_v4`` and ``source_page_v3`` when each was released, reaching every verdict of
``firewall_v3`` and ``source_page_v2``: the corpus holds no claim of outside knowledge).
A moved verdict under an existing ruleset name is a defect: a change of verdicts is a new
ruleset version.

The ``source_page`` rulesets judge the answers translated into ``[Source: file, p.N]``
markers (2,708 of the 2,794; ``corpus/build.py``'s ``paged_bundles``), over bundles whose
one Markdown manual (``amm-29-11.md``) is a host name to a linkifier. ``source_page_v2``'s
verdicts differ from ``source_page_v1``'s on 757 answers, every one citing or naming that
file and withheld by ``source_page_v1`` as ``UNSAFE_OUTPUT``; on every answer it reaches
``source_page_v1``'s verdict on the same manual saved as ``amm-29-11.pdf``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundlock import load_policy
from tests.firewall.corpus.build import HERE, MANUAL_FILE
from tests.firewall.corpus.freeze import judged, verdict

FROZEN = {
    "R2_POLICY_V1": "firewall_v1",
    "R2_POLICY_V2": "firewall_v2",
    "R2_POLICY_V3": "firewall_v3",
    "SOURCE_PAGE_POLICY_V1": "source_page_v1",
    "SOURCE_PAGE_POLICY_V2": "source_page_v2",
    "R2_POLICY_V4": "firewall_v4",
    "SOURCE_PAGE_POLICY_V3": "source_page_v3",
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


@pytest.mark.slow
def test_source_page_v2_judges_a_markdown_file_as_source_page_v1_judges_a_pdf():
    """The one change of ``source_page_v2``: an admitted file's name is no link.

    Over the Markdown manual it reaches ``source_page_v1``'s verdict on the same manual saved
    as a PDF, message and metrics included; it moves ``source_page_v1``'s frozen verdict on
    757 answers, each naming the Markdown file and withheld by ``source_page_v1``.
    """
    pdf = "amm-29-11.pdf"
    as_pdf = {
        row["id"]: json.loads(json.dumps(verdict(result)).replace(pdf, MANUAL_FILE))
        for row, result in judged(load_policy("SOURCE_PAGE_POLICY_V1"), manual_file=pdf)
    }
    frozen_v1 = _frozen("source_page_v1")
    differing, moved = [], []
    for row, result in judged(load_policy("SOURCE_PAGE_POLICY_V2")):
        got = verdict(result)
        if got != as_pdf.pop(row["id"]):
            differing.append((row["id"], row["answer"][:80], got))
        want = frozen_v1[row["id"]]
        got["metrics"] = {k: v for k, v in got["metrics"].items() if k in want["metrics"]}
        if got != {k: v for k, v in want.items() if k != "id"}:
            moved.append((row, want["failure_reason"]))
    assert not as_pdf
    assert not differing, f"{len(differing)} verdicts differ, e.g. {differing[:3]}"
    assert len(moved) == 757
    assert {reason for _, reason in moved} == {"UNSAFE_OUTPUT"}
    assert all(MANUAL_FILE in row["answer"] for row, _ in moved)
