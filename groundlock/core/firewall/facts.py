"""What an evidence text offers the substantive rules, computed once per text and ruleset.

An entry's text splits into what it states and what it tells the model (its instruction
parts, :mod:`~groundlock.core.firewall.injection`): only the statements support an answer.
Of the statements the rules need their values (:mod:`~groundlock.core.firewall.values`),
their words reduced to light stems, and their sentences split into clauses with the
negations and modal verbs each carries (:mod:`~groundlock.core.firewall.polarity`). All of it
depends only on the text and the ruleset, so it is cached: R5 asks about the same entries for
every answer that cites them, and requests share chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundlock._caches import WeightedLRU, memoized
from groundlock.core.firewall.injection import instruction_parts
from groundlock.core.firewall.lexicon import unaccented, words
from groundlock.core.firewall.values import ValueIndex, Vocabulary, index_values
from groundlock.policies.ruleset import Ruleset

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""

__all__ = ["Facts", "facts", "question_facts", "stem", "stems", "stopwords", "vocabulary"]

_SUFFIXES = (
    "ations", "ation", "ments", "ment", "ings", "ing", "ions", "ion", "ies", "ied", "ers",
    "er", "ed", "es", "ly", "s", "e",
)  # fmt: skip
_POSSESSIVE_RE = re.compile(r"['\u2019]s$")


_IRREGULAR = {
    "found": "find", "made": "make", "took": "take", "taken": "take", "gave": "give",
    "given": "give", "held": "hold", "paid": "pay", "sold": "sell", "bought": "buy",
    "kept": "keep", "left": "leave", "met": "meet", "said": "say", "told": "tell",
    "went": "go", "gone": "go", "ran": "run", "began": "begin", "begun": "begin",
    "brought": "bring", "chose": "choose", "chosen": "choose", "wrote": "write",
    "written": "write", "shown": "show", "known": "know", "knew": "know", "seen": "see",
    "saw": "see", "done": "do", "did": "do", "got": "get", "won": "win", "lost": "lose",
    "rose": "rise", "risen": "rise", "fell": "fall", "fallen": "fall", "grew": "grow",
    "grown": "grow", "sent": "send", "spent": "spend", "built": "build",
    "led": "lead", "struck": "strike", "broke": "break", "broken": "break", "drew": "draw",
    "drawn": "draw", "withdrew": "withdraw", "withdrawn": "withdraw", "upheld": "uphold",
}  # fmt: skip
"""Irregular verb forms, so ``found`` meets ``find`` (a stemmer alone cannot)."""


@memoized(65536)
def stem(word: str) -> str:
    """A light stem of a caseless word: crude on purpose, both sides reduce alike.

    ``replaced``, ``replaces``, ``replacement`` and ``replacing`` all reduce to ``replac``.
    """
    word = _POSSESSIVE_RE.sub("", word)
    if word in _IRREGULAR:
        word = _IRREGULAR[word]
    for _ in range(2):
        for suffix in _SUFFIXES:
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        else:
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # "admitted" and "admits", "stopped" and "stops"
    return word


@memoized(4096, max_key_chars=_MAX_KEY_CHARS)
def stems(text: str, stopwords: frozenset[str]) -> frozenset[str]:
    """The stems of ``text``'s words that are not stop words.

    Cached: several rules ask about the same sentence.
    """
    return frozenset(stem(w) for w in words(text) if w not in stopwords)


def _vocabulary(ruleset: Ruleset) -> Vocabulary:
    def table(file: str) -> dict[str, str]:
        entries: dict[str, str] = {}
        for line in ruleset.entries(file):
            name, _, spellings = line.partition("=")
            for spelling in spellings.split("|"):
                entries[" ".join(spelling.lower().split())] = name.strip()
        return entries

    return Vocabulary(units=table("units"), currency=table("currency"))


def _stopwords(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("stopwords"))


def stopwords(ruleset: Ruleset) -> frozenset[str]:
    """The ruleset's stop words (``stopwords.words``), as a set built once."""
    return ruleset.compiled("stopwords", _stopwords)


def vocabulary(ruleset: Ruleset) -> Vocabulary:
    """The unit and currency spellings of ``ruleset``, built once."""
    return ruleset.compiled("values.vocabulary", _vocabulary)


@dataclass(frozen=True)
class Facts:
    """One evidence text (or a question) as the substantive rules read it."""

    statements: str
    """The text without its instruction parts."""
    instructions: str
    """Its instruction parts, joined (empty for an entry that addresses nobody)."""
    values: ValueIndex
    """Values of the statements."""
    instruction_values: ValueIndex
    """Values of the instruction parts."""
    words: frozenset[str]
    """Caseless words of the statements, as written and as stems."""
    instruction_words: frozenset[str]
    """Caseless words and stems of the instruction parts."""
    sentences: tuple[str, ...]
    """The statements' sentences."""


def _facts(key: tuple[Ruleset, str, bool]) -> Facts:
    ruleset, text, is_evidence = key
    parts = instruction_parts(text, ruleset) if is_evidence else ((text, False),)
    statements = [part for part, instructs in parts if not instructs]
    instructions = [part for part, instructs in parts if instructs]
    said = " ".join(statements)
    told = " ".join(instructions)
    vocab = vocabulary(ruleset)
    return Facts(
        statements=said,
        instructions=told,
        values=index_values(said, vocab),
        instruction_values=index_values(told, vocab),
        words=_word_forms(said),
        instruction_words=_word_forms(told),
        sentences=tuple(statements),
    )


def _word_forms(text: str) -> frozenset[str]:
    found = words(text)
    return (
        frozenset(found)
        | frozenset(stem(w) for w in found)
        | frozenset(unaccented(w) for w in found if not w.isascii())
    )


_FACTS: WeightedLRU[tuple[Ruleset, str, bool], Facts] = WeightedLRU(
    _facts, weigh=lambda key, _: 8 * len(key[1]) + 2000, max_weight=64 * 2**20
)


def facts(text: str, ruleset: Ruleset) -> Facts:
    """The facts of an evidence entry's text under ``ruleset`` (cached)."""
    return _FACTS((ruleset, text, True))


@memoized(256)
def question_facts(question: str, ruleset: Ruleset) -> Facts:
    """The facts of a question: all of it counts (a value it names is not new)."""
    return _facts((ruleset, question, False))
