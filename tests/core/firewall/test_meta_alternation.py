"""The meta-commentary rule's one-pass alternation finds something exactly when a pattern does.

``any_meta`` lets a sentence that holds no meta phrase skip the per-pattern searches (issue
29); the verdict is unchanged only if the alternation and the patterns agree on every text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from groundlock.core.firewall.lexicon import _one_alternative
from groundlock.core.firewall.refusal import _disguised, _phrases
from groundlock.core.firewall.rules.leaks import any_meta, meta_patterns
from groundlock.policies.ruleset import load_ruleset

CORPUS = Path(__file__).parents[2] / "firewall" / "corpus" / "answers.jsonl"
RULESETS = [
    "firewall_v1",
    "firewall_v2",
    "firewall_v3",
    "source_page_v1",
    "source_page_v2",
    "semantic_id_v1",
    "cit_label_v1",
]
VOCABULARIES = [("meta",), ("refusal",), ("refusal", "disguised")]


def _texts() -> list[str]:
    texts = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        answer = json.loads(line)["answer"]
        texts.extend(part for part in re.split(r"(?<=[.!?])\s+|\n", answer) if part)
    return texts


@pytest.mark.parametrize("name", RULESETS)
def test_the_alternation_matches_where_and_only_where_a_pattern_does(name: str) -> None:
    ruleset = load_ruleset(name)
    folded = [pattern for pattern, on_folded in meta_patterns(ruleset) if on_folded]
    anything = any_meta(ruleset)
    texts = [text.lower() for text in _texts()]
    assert len(texts) > 5_000
    hits = 0
    for text in texts:
        expected = any(pattern.search(text) for pattern in folded)
        assert (anything.search(text) is not None) == expected, text
        hits += expected
    assert hits > 50  # the corpus holds meta phrases: the agreement is not all-negative


@pytest.mark.parametrize("name", RULESETS)
@pytest.mark.parametrize("search", [_phrases, _disguised])
def test_the_refusal_phrases_one_search_matches_where_and_only_where_a_phrase_does(
    name: str, search: object
) -> None:
    patterns, union = search(load_ruleset(name))  # type: ignore[operator]
    texts = [text.lower() for text in _texts()]
    hits = 0
    for text in texts:
        expected = any(pattern.search(text) for pattern in patterns)
        assert (union.search(text) is not None) == expected, text
        hits += expected
    assert hits > 20


def _first_characters(parsed: object) -> set[str] | None:
    """The characters a parsed pattern's match can open with, or None if unsure or empty."""
    from re import _constants as c  # noqa: PLC0415  (private: only to prove a property)

    found: set[str] = set()
    for op, arg in parsed:  # type: ignore[attr-defined]
        if op is c.LITERAL:
            return found | {chr(arg)}
        if op is c.SUBPATTERN:
            inner = _first_characters(arg[-1])
        elif op is c.BRANCH:
            parts = [_first_characters(branch) for branch in arg[1]]
            inner = None if None in parts else set().union(*parts)  # type: ignore[arg-type]
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
            inner = _first_characters(arg[2])
        elif op is c.IN and all(kind is c.LITERAL for kind, _ in arg):
            inner = {chr(code) for _, code in arg}
        else:
            return None
        if inner is None:
            return None
        return found | inner
    return None


@pytest.mark.parametrize("name", RULESETS)
@pytest.mark.parametrize("vocabulary", VOCABULARIES)
def test_every_pattern_opening_with_a_boundary_goes_on_with_a_word_character(
    name: str, vocabulary: tuple[str, ...]
) -> None:
    # one_search tries those patterns only where a word starts (\b(?=\w)): exact only so.
    from re import _parser  # noqa: PLC0415

    for pattern in load_ruleset(name).entries(*vocabulary):
        if pattern.startswith(r"\b") and _one_alternative(pattern[2:]):  # what it shares \b in
            first = _first_characters(_parser.parse(pattern[2:]))
            assert first, pattern
            assert all(re.fullmatch(r"\w", char) for char in first), pattern
