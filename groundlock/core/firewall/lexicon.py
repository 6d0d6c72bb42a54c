"""The one normalisation the rules compare answer and evidence text in.

Words are runs of letters and digits of the text made caseless (:func:`caseless`: folded as
``re.I`` folds, then casefolded); a phrase found in the answer and the evidence it may quote
are compared with every apostrophe straight (:func:`plain`), so ``don\u2019t`` quotes ``don't``.
Evidence texts recur across the sentences and checks of one answer, and across requests
that share chunks: their reductions are cached by text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from groundlock._caches import memoized
from groundlock.text.fold import caseless

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""

__all__ = [
    "APOSTROPHE",
    "apostrophes",
    "content_words",
    "entry_content_words",
    "folded_id",
    "one_search",
    "plain",
    "singular",
    "unaccented",
    "words",
]

APOSTROPHE = "['\u2019\u02bc\uff07]"
"""The apostrophe as models type it: straight, curly (U+2019), modifier letter, fullwidth."""
_WORD_RE = re.compile(r"[^\W_]+")
_APOSTROPHE_MAP = str.maketrans(dict.fromkeys("\u2019\u02bc\uff07", "'"))


def apostrophes(pattern: str) -> str:
    """``pattern`` with each apostrophe matching every way of typing one (none is in a class)."""
    return pattern.replace("'", APOSTROPHE)


def _one_alternative(pattern: str) -> bool:
    """Whether ``pattern`` has no ``|`` outside its groups (a prefix binds all of it)."""
    depth, escaped, in_class = 0, False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            return False
    return True


def one_search(patterns: Iterable[str]) -> re.Pattern[str]:
    r"""One alternation of ``patterns``: it matches a text exactly when one of them does.

    For a vocabulary of phrases searched in every sentence, where the usual sentence holds
    none (issue 29). Branch by branch at every position, a plain alternation costs as much
    as the searches one by one; here the patterns that open with ``\b`` share it and are
    tried only where a word starts (``\b(?=\w)``), exact as long as each goes on with a
    word character (tests pin it for the rulesets' vocabularies). None may use a
    backreference or an inline flag.
    """
    bounded: list[str] = []
    others: list[str] = []
    for pattern in patterns:
        if pattern.startswith(r"\b") and _one_alternative(pattern[2:]):
            bounded.append(f"(?:{pattern[2:]})")
        else:
            others.append(f"(?:{pattern})")
    if bounded:
        others.insert(0, rf"\b(?=\w)(?:{'|'.join(bounded)})")
    return re.compile("|".join(others))


def words(text: str) -> list[str]:
    """The caseless words of ``text``, in order."""
    return _WORD_RE.findall(caseless(text))


@memoized(16384)
def unaccented(word: str) -> str:
    """``word`` without its accents (``zürich``: ``zurich``, ``são``: ``sao``).

    Models drop and add diacritics in names the evidence spells the other way.
    """
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@memoized(1024, max_key_chars=_MAX_KEY_CHARS)
def plain(text: str) -> str:
    """``text`` caseless, with every apostrophe straight.

    How a found phrase and the evidence it may quote are compared: a curly apostrophe
    (U+2019) in an answer quotes a straight one in the evidence.
    """
    return caseless(text).translate(_APOSTROPHE_MAP)


@memoized(1024, max_key_chars=_MAX_KEY_CHARS)
def folded_id(text: str) -> str:
    """An id made caseless, once per id (ids keep their apostrophes, as sentences do)."""
    return caseless(text)


def content_words(text: str, stopwords: frozenset[str]) -> set[str]:
    """The words of ``text`` that are not stop words."""
    return {w for w in words(text) if w not in stopwords}


@memoized(1024, max_key_chars=_MAX_KEY_CHARS)
def entry_content_words(text: str, stopwords: frozenset[str]) -> frozenset[str]:
    """:func:`content_words` of an evidence text, cached by text."""
    return frozenset(content_words(text, stopwords))


def singular(word: str) -> str:
    """A caseless word's singular where it reads as a regular plural, else the word.

    ``policies``: ``policy``, ``valves``: ``valve``, ``boxes``: ``box``. The light stem
    reduces ``policies`` and ``policy`` differently; a name written in the
    plural (``the Valves``) is still the evidence's ``valve``.
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
