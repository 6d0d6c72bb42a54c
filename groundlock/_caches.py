"""Every process-wide cache of groundlock, in one registry, with one way to clear them.

groundlock memoises pure functions of immutable input, under three policies:

* **weighted** (:class:`WeightedLRU`): per-text results (token counts, sanitised text,
  shingles, evidence facts), bounded by the bytes they hold;
* **counted** (:func:`memoized` with a ``maxsize``): results bounded by entry count; a
  function of a text that may be long (a clause's polarity, an entry's instructions) also
  sets ``max_key_chars``, so only short texts are kept and entries x that bound its size;
* **frozen** (:func:`memoized` with ``maxsize=None``): what is loaded from the package's own
  hash-locked files (policies, templates, rulesets, tokenizers), one entry per file.

Every cache registers here when it is created. :func:`clear_caches` empties them all (a
long-running process that wants its memory back, a test that must start cold) and
:func:`cache_report` says what each holds. A guard test keeps ``functools`` caches out of
every other module, so nothing escapes the registry.

Per-text caches (token counts, sanitised text, shingles) keep hot chunks cheap, but a count
bound is no memory bound when an attacker may send 50k-character chunks: 16,384 of those is
gigabytes. Each entry here is weighed (roughly in bytes) and the least recently used entries
are evicted once the total passes ``max_weight``. An entry heavier than ``max_weight / 64``
is computed but not kept, so a single huge text cannot flush the whole cache.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

__all__ = [
    "CacheInfo",
    "Memoized",
    "WeightedLRU",
    "cache_report",
    "clear_caches",
    "memoized",
    "registered_dict",
]

_FUNCTION_CACHES: dict[str, Memoized[Any]] = {}
_WEIGHTED: weakref.WeakValueDictionary[str, WeightedLRU[Any, Any]] = weakref.WeakValueDictionary()
_DICTS: dict[str, dict[Any, Any]] = {}
_REGISTRY_LOCK = threading.Lock()


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
        self,
        compute: Callable[[K], V],
        *,
        weigh: Callable[[K, V], int],
        max_weight: int,
        name: str | None = None,
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
        module = getattr(compute, "__module__", None) or type(compute).__module__
        label = name or f"{module}.{getattr(compute, '__qualname__', 'compute')}"
        with _REGISTRY_LOCK:  # (weakly: a cache owned by an object goes with it)
            _WEIGHTED[f"{label}#{id(self):x}"] = self

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


class Memoized(Protocol[T_co]):
    """A memoised function: callable, and clearable like an ``lru_cache`` wrapper."""

    def __call__(self, *args: Hashable) -> T_co: ...

    def cache_clear(self) -> None: ...

    def cache_info(self) -> functools._CacheInfo: ...


class _TextBounded(Generic[T_co]):
    """An ``lru_cache`` that only keeps results whose text arguments are short enough.

    A count bound is a memory bound only while keys are small: a text past
    ``max_key_chars`` is computed and not kept, so entries x ``max_key_chars`` bounds what
    the cache holds whatever the input.
    """

    def __init__(self, function: Callable[..., T_co], maxsize: int, max_key_chars: int) -> None:
        self._function = function
        self._cached = functools.lru_cache(maxsize=maxsize)(function)
        self._max_key_chars = max_key_chars
        functools.update_wrapper(self, function)

    def __call__(self, *args: Hashable) -> T_co:
        # (A loop, not sum() over a generator: this runs on every call, a hundred times an
        # answer in the firewall, and the generator was most of its cost.)
        chars = 0
        for arg in args:
            if isinstance(arg, str):
                chars += len(arg)
        if chars > self._max_key_chars:
            return self._function(*args)
        return self._cached(*args)

    def cache_clear(self) -> None:
        self._cached.cache_clear()

    def cache_info(self) -> functools._CacheInfo:
        return self._cached.cache_info()


def memoized(
    maxsize: int | None, *, max_key_chars: int | None = None
) -> Callable[[Callable[..., T]], Memoized[T]]:
    """``functools.lru_cache(maxsize)``, registered so that :func:`clear_caches` reaches it.

    ``maxsize=None`` is for the frozen policy only: results loaded from the package's own
    files, whose number bounds the cache. ``max_key_chars`` is for functions of a text that
    may be long (a sentence, an evidence text): longer texts are computed, not kept.
    """

    def register(function: Callable[..., T]) -> Memoized[T]:
        cached: Memoized[T]
        if max_key_chars is None:
            cached = functools.lru_cache(maxsize=maxsize)(function)
        else:
            if maxsize is None:
                raise ValueError("max_key_chars bounds a counted cache; give maxsize too")
            cached = _TextBounded(function, maxsize, max_key_chars)
        with _REGISTRY_LOCK:
            _FUNCTION_CACHES[f"{function.__module__}.{function.__qualname__}"] = cached
        return cached

    return register


def clear_caches() -> None:
    """Empty every groundlock cache in this process (results are recomputed on demand)."""
    with _REGISTRY_LOCK:
        functions = list(_FUNCTION_CACHES.values())
        weighted = list(_WEIGHTED.values())
    for function in functions:
        function.cache_clear()
    for cache in weighted:
        cache.clear()
    with _REGISTRY_LOCK:
        for table in _DICTS.values():
            table.clear()


def registered_dict(name: str) -> dict[Any, Any]:
    """A plain dict that :func:`clear_caches` empties, for a cache filled by hand.

    For values built from other caches' results (a resolved policy holds the loaded
    ruleset): cleared with them, it never hands out an object they no longer would.
    """
    with _REGISTRY_LOCK:
        return _DICTS.setdefault(name, {})


def cache_report() -> dict[str, CacheInfo]:
    """What each registered cache holds now, by name (weight is 0 for counted caches)."""
    with _REGISTRY_LOCK:
        functions = dict(_FUNCTION_CACHES)
        weighted = dict(_WEIGHTED)
    report = {
        name: CacheInfo(info.hits, info.misses, info.currsize, 0)
        for name, info in ((n, f.cache_info()) for n, f in functions.items())
    }
    report.update({name: cache.info() for name, cache in weighted.items()})
    return report
