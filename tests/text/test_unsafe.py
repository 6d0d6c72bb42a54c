"""The substring gates in front of the slow unsafe-output searches never change a verdict."""

from __future__ import annotations

import random

from groundlock.text import unsafe
from groundlock.text.unsafe import unsafe_output

_ALPHABET = [*"aw W.:/\\@-_[]()!<>&#;x1 \n", "www.", "http", "tel", "data", "mailto", "\u212a"]


def _ungated(text: str) -> str | None:
    folded = text.casefold()
    for kind, pattern, on_folded in unsafe._CHECKS:
        if pattern.search(folded if on_folded else text):
            return kind
    return None


def test_gates_agree_with_running_every_search_on_random_text():
    rng = random.Random(20261122)
    texts = ["".join(rng.choices(_ALPHABET, k=rng.randint(0, 12))) for _ in range(30000)]
    flagged = [text for text in texts if _ungated(text) is not None]
    assert len(flagged) > 1000  # the sample reaches the URL and script checks
    assert [unsafe_output(t) for t in texts] == [_ungated(t) for t in texts]


def test_every_gated_check_names_what_it_needs():
    kinds = {kind for kind, _, _ in unsafe._CHECKS}
    assert set(unsafe._NEEDS) <= kinds
    for needs in unsafe._NEEDS.values():
        assert needs
        assert all(needs)


def test_slashes_in_ordinary_units_and_part_numbers_are_not_links():
    for text in ("Flow 2 l/min at 3.5 bar/50 psi.", "P/N 123-45 and/or w/o", "Use SAE J1926/1.",
                 "Item 4.2.a/b of AMM 29-11/2 (v1.2/v1.3), e.g./i.e. notes"):  # fmt: skip
        assert unsafe_output(text) is None, text
