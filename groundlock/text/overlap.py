"""Near-duplicate detection by word-shingle coverage.

Retrievers often return the same passage twice: from two revisions of a manual, or once on
its own and once inside a larger overlapping chunk. A candidate chunk is a near-duplicate of
an already admitted chunk when most of *its* word 3-shingles are already in the admitted
text: ``|candidate ∩ admitted| / |candidate|``. The measure is asymmetric on purpose:

* a short chunk contained in an admitted long one scores 1.0 and adds nothing: dropped;
* a long chunk that contains an admitted short one scores low and adds what the short one
  lacked: kept. (A symmetric overlap coefficient would drop it and lose that content.)

Shingles are built from case-folded word characters only, so punctuation and spacing
differences do not hide a copy. A shingle is stored as its words joined by one space: a
``str`` caches its hash, where a tuple recomputes it on every set lookup.
"""

from __future__ import annotations

import re

from groundlock._caches import WeightedLRU

__all__ = ["SHINGLE_CACHE", "covered_fraction", "shingle_set", "shingles"]

_WORD_RE = re.compile(r"\w+")


def _shingles(key: tuple[str, int]) -> frozenset[str]:
    text, size = key
    words = _WORD_RE.findall(text.casefold())
    if len(words) <= size:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))


SHINGLE_CACHE: WeightedLRU[tuple[str, int], frozenset[str]] = WeightedLRU(
    _shingles,
    weigh=lambda key, value: len(key[0]) + 120 * len(value) + 256,
    max_weight=64 * 2**20,
)
"""Shingle sets per (text, size); about 100 bytes per shingle, bounded at about 64 MB."""


def shingle_set(text: str, size: int) -> frozenset[str]:
    """:func:`shingles` without the cache, for callers that keep the result themselves."""
    return _shingles((text, size))


def shingles(text: str, size: int) -> frozenset[str]:
    """Return the set of ``size``-word shingles of ``text`` (one shingle if it is shorter).

    >>> sorted(shingles("Check the seal. Check the pump.", 3))[:2]
    ['check the pump', 'check the seal']
    """
    return SHINGLE_CACHE((text, size))


def covered_fraction(candidate: frozenset[str], admitted: frozenset[str] | set[str]) -> float:
    """Share of ``candidate``'s shingles already present in ``admitted``; 0.0 if either is empty.

    >>> covered_fraction(shingles("a b c d", 3), shingles("x a b c d y", 3))
    1.0
    >>> covered_fraction(shingles("x a b c d y", 3), shingles("a b c d", 3))
    0.5
    """
    if not candidate or not admitted:
        return 0.0
    return len(candidate & admitted) / len(candidate)
