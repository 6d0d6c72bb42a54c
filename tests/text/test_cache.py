"""The size-bounded LRU stays correct and bounded when threads share it."""

from __future__ import annotations

import threading

from groundlock._caches import WeightedLRU


def test_hits_refresh_recency_so_the_least_recent_entry_is_evicted():
    cache = WeightedLRU(str.upper, weigh=lambda key, value: 10, max_weight=64 * 30)
    for key in ("a", "b", "c"):
        cache(key)
    cache("a")  # a is now more recent than b
    for key in (f"k{i}" for i in range(189)):  # 192 entries of weight 10 fit; one more evicts
        cache(key)
    cache("overflow")
    before = cache.info().misses
    cache("a")
    assert cache.info().misses == before  # a survived
    cache("b")
    assert cache.info().misses == before + 1  # b, the least recent, was evicted


def test_threads_hitting_and_evicting_at_once_get_right_values_and_keep_the_bound():
    max_weight = 64 * 100
    cache = WeightedLRU(lambda key: key * 2, weigh=lambda key, value: 100, max_weight=max_weight)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(20000):
                key = f"k{(i * 7 + offset) % 150}"  # more keys than fit: constant eviction
                assert cache(key) == key * 2
        except BaseException as exc:  # noqa: BLE001  (reported by the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    info = cache.info()
    assert errors == []
    assert info.weight == 100 * info.entries <= max_weight
