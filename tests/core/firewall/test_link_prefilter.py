"""The unsafe-output rule asks the linkifier about an answer only where it could find a link.

``_may_link`` is what ``LinkifyIt.test`` needs before it can say yes (issue 29): skipping
the linkifier where it is false changes no verdict only if the linkifier never finds a link
there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundlock.core.firewall.rules.unsafe_output import _linkify, _may_link
from groundlock.policies.ruleset import load_ruleset

CORPUS = Path(__file__).parents[2] / "firewall" / "corpus" / "answers.jsonl"


@pytest.mark.parametrize("name", ["firewall_v2", "firewall_v3", "source_page_v2"])
def test_the_linkifier_finds_a_link_only_where_one_may_be(name: str) -> None:
    ruleset = load_ruleset(name)
    linkify = _linkify(ruleset)
    answers = [json.loads(line)["answer"] for line in CORPUS.read_text("utf-8").splitlines()]
    texts = [*answers, "see evil.com", "mail x@y.io", "HTTPS://a.b", "//cdn.x/y", "site.in now"]
    linked = skipped = 0
    for text in texts:
        if linkify.test(text):
            assert _may_link(text, ruleset), text
            linked += 1
        skipped += not _may_link(text, ruleset)
    assert linked > 20
    assert skipped > 100  # the filter does skip answers: the check is not vacuous
