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
from dataclasses import dataclass, field

from groundlock._caches import WeightedLRU, memoized
from groundlock.core.firewall.injection import instruction_parts
from groundlock.core.firewall.lexicon import singular, unaccented, words
from groundlock.core.firewall.superseded import old_spans
from groundlock.core.firewall.values import (
    Value,
    ValueIndex,
    Vocabulary,
    index_values,
    placed_values,
)
from groundlock.policies.ruleset import Ruleset
from groundlock.text.fold import caseless

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""

__all__ = [
    "Facts",
    "facts",
    "prefixes_of",
    "question_facts",
    "stem",
    "stems",
    "stopwords",
    "vocabulary",
]

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

    return Vocabulary(
        units=table("units"),
        currency=table("currency"),
        variants="value_variants" in ruleset.features,
        discourse=frozenset(ruleset.entries("values", "discourse")),
    )


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
    prefixes: frozenset[str] = frozenset()
    """Under ``loose_words``: the first five letters of its words of six letters or more, so
    that ``necessary`` meets ``necessity`` and ``prioritise`` meets ``priority`` (rule
    ``weak_support`` only: a loose match errs towards support)."""
    superseded: ValueIndex = field(default_factory=ValueIndex)
    """Under ``superseded``: values the statements mark as replaced, cancelled or wrong and
    do not also state elsewhere (:mod:`~groundlock.core.firewall.superseded`)."""


_REFERENCE_MARK_RE = re.compile(
    r"\[\s*\d{1,3}(?:\s*[,\u2013-]\s*\d{1,3})*\s*\]"
    r"|(?<=[^\W\d_]{3})[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+"
    r"|(?<=[.,;:)\]\"'\u2019\u201d])[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+"
    r"|(?<=[^\W\d_.,;:)\]])\(\d{1,2}\)"
)
"""A web page's or an article's reference marks: ``[1]``, ``[2, 3]``, ``[4-6]``, a
superscript after a word of three letters or more or after punctuation (``Smith\u00b2``,
``water.\u00b3``, but not ``m\u00b2``, a unit), and a bracketed number glued to a word
(``Jain(2)``; ``two (2) weeks`` and a step's ``(2) Wait ...`` are left)."""


def without_reference_marks(text: str) -> str:
    """``text`` with its reference marks blanked (``firewall_v3``'s ``reference_marks``).

    They point at a source list, not at anything the text states: read as values, an
    answer's ``2`` was found in ``... 1985)[2]`` (support that is not there), and a number
    of an uncited entry's marks made a misattribution.
    """
    if "[" not in text and "(" not in text and not _SUPERSCRIPT_RE.search(text):
        return text
    return _REFERENCE_MARK_RE.sub(" ", text)


_SUPERSCRIPT_RE = re.compile("[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]")


def _facts(key: tuple[Ruleset, str, bool]) -> Facts:
    ruleset, text, is_evidence = key
    if is_evidence and ruleset.has("reference_marks"):
        text = without_reference_marks(text)
    parts = instruction_parts(text, ruleset) if is_evidence else ((text, False),)
    statements = [part for part, instructs in parts if not instructs]
    instructions = [part for part, instructs in parts if instructs]
    said = " ".join(statements)
    told = " ".join(instructions)
    vocab = vocabulary(ruleset)
    values = index_values(said, vocab)
    return Facts(
        statements=said,
        instructions=told,
        values=values,
        instruction_values=index_values(told, vocab),
        words=_word_forms(said, variants=ruleset.has("name_variants")),
        instruction_words=_word_forms(told, variants=ruleset.has("name_variants")),
        sentences=tuple(statements),
        prefixes=prefixes_of(said) if ruleset.has("loose_words") else frozenset(),
        superseded=(
            _superseded(tuple(statements), said, vocab, ruleset)
            if is_evidence and ruleset.has("superseded")
            else ValueIndex()
        ),
    )


def _superseded(
    sentences: tuple[str, ...], text: str, vocab: Vocabulary, ruleset: Ruleset
) -> ValueIndex:
    """The values ``text`` marks as no longer valid and states nowhere else.

    Read in place over the whole text, so an old value keeps the unit its phrase gives it
    (``reduced from 4,000 to 2,500 operating hours``: 4,000 hours).
    """
    spans = old_spans(sentences, ruleset)
    if not spans:
        return ValueIndex()
    current, old = ValueIndex(), []
    for start, value in placed_values(text, vocab):
        if any(a <= start < b for a, b in spans):
            old.append(value)
        else:
            current.add(value)
    stale = ValueIndex()
    for value in old:
        # Reading by reading: "4,000" is 4000 or 4 (a decimal comma), and a 4 the text
        # states elsewhere leaves the 4,000 hours it replaced stale all the same.
        for key in value.keys:
            alone = Value(value.kind, value.surface, frozenset({key}))
            if not current.supports(alone):
                stale.add(alone)
    return stale


def prefixes_of(text: str) -> frozenset[str]:
    """The first five letters of ``text``'s words of six letters or more."""
    return frozenset(w[:5] for w in words(text) if len(w) >= 6)


def _word_forms(text: str, *, variants: bool = False) -> frozenset[str]:
    found = words(text)
    forms = (
        frozenset(found)
        | frozenset(stem(w) for w in found)
        | frozenset(unaccented(w) for w in found if not w.isascii())
    )
    if not variants:
        return forms
    # name_variants: a hyphenated word is also its parts joined (``e-mail`` is ``email``),
    # two capitalised words also one (``Hunter Girl`` is ``HunterGirl``), a word in camel
    # case also its parts, and a regular plural also its singular (``policies``: ``policy``).
    joined = {caseless(m.group()).replace("-", "") for m in _HYPHENATED_RE.finditer(text)}
    joined.update(caseless(a + b) for a, b in _CAPITALISED_PAIR_RE.findall(text))
    joined.update(caseless(p) for w in _CAMEL_RE.findall(text) for p in _CAMEL_PART_RE.findall(w))
    return forms | joined | {singular(w) for w in found}


_HYPHENATED_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)+")
_CAPITALISED_PAIR_RE = re.compile(r"(?=\b([A-Z][a-z]+)\s([A-Z][a-z]+)\b)")
_CAMEL_RE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")
_CAMEL_PART_RE = re.compile(r"[A-Z][a-z]+")


_FACTS: WeightedLRU[tuple[Ruleset, str, bool], Facts] = WeightedLRU(
    _facts, weigh=lambda key, _: 8 * len(key[1]) + 2000, max_weight=64 * 2**20
)


def facts(text: str, ruleset: Ruleset) -> Facts:
    """The facts of an evidence entry's text under ``ruleset`` (cached)."""
    return _FACTS((ruleset, text, True))


@memoized(4096)
def question_facts(question: str, ruleset: Ruleset) -> Facts:
    """The facts of a question: all of it counts (a value it names is not new)."""
    return _facts((ruleset, question, False))
