"""A least-recently-used cache bounded by the *size* of what it holds, not by entry count.

Per-text caches (token counts, sanitised text, shingles) keep hot chunks cheap, but a count
bound is no memory bound when an attacker may send 50k-character chunks: 16,384 of those is
gigabytes. Each entry here is weighed (roughly in bytes) and the least recently used entries
are evicted once the total passes ``max_weight``. An entry heavier than ``max_weight / 64``
is computed but not kept, so a single huge text cannot flush the whole cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

__all__ = ["CacheInfo", "WeightedLRU"]


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """Counters for tests and benchmarks."""

    hits: int
    misses: int
    entries: int
    weight: int


class WeightedLRU(Generic[K, V]):
    """Memoise ``compute`` with an LRU policy bounded by total weight.

    >>> lengths = WeightedLRU(len, weigh=lambda key, value: len(key), max_weight=64 * 10)
    >>> lengths("abc"), lengths("abc"), lengths.info().hits
    (3, 3, 1)
    """

    def __init__(
        self, compute: Callable[[K], V], *, weigh: Callable[[K, V], int], max_weight: int
    ) -> None:
        self._compute = compute
        self._weigh = weigh
        self._max_weight = max_weight
        self._max_entry_weight = max_weight // 64
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def __call__(self, key: K) -> V:
        # A hit takes no lock: the OrderedDict's own operations are atomic under the GIL,
        # and a key evicted between the lookup and the recency update is simply not moved.
        # (Half the cost of a hit was the lock, and R2 looks up about 40 texts a request.)
        found = self._entries.get(key)
        if found is not None:
            try:  # noqa: SIM105  (contextlib.suppress would cost a third of the hit)
                self._entries.move_to_end(key)
            except KeyError:
                pass
            self._hits += 1  # exact single-threaded; may undercount under concurrency
            return found[0]
        with self._lock:
            self._misses += 1
        value = self._compute(key)  # outside the lock: computing may be slow
        weight = self._weigh(key, value)
        if weight > self._max_entry_weight:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, weight)
                self._weight += weight
                while self._weight > self._max_weight:
                    _, (_, evicted) = self._entries.popitem(last=False)
                    self._weight -= evicted
        return value

    def info(self) -> CacheInfo:
        """Current hits, misses, entry count and total weight."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self._weight)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._weight = self._hits = self._misses = 0
