"""The bounded LRU cache that holds parsed blobs and commit depths."""

from __future__ import annotations

import threading

import pytest

from gitstore.backend.cache import LRUCache


def test_get_and_put():
    cache = LRUCache(max_entries=2)
    assert cache.get("a") is None and cache.get("a", 0) == 0
    cache.put("a", 1)
    assert cache.get("a") == 1 and len(cache) == 1


def test_the_least_recently_used_entry_is_evicted():
    cache = LRUCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c")) == (1, 3)
    assert len(cache) == 2


def test_put_replaces_and_refreshes():
    cache = LRUCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert cache.get("a") == 10 and cache.get("b") is None


def test_get_or_compute_computes_once_and_caches_falsy_values():
    cache = LRUCache(max_entries=4)
    calls = []

    def compute():
        calls.append(1)
        return None

    assert cache.get_or_compute("k", compute) is None
    assert cache.get_or_compute("k", compute) is None
    assert len(calls) == 1


def test_a_failing_computation_caches_nothing():
    cache = LRUCache(max_entries=4)

    def fail():
        raise ValueError("no")

    for _ in range(2):
        with pytest.raises(ValueError):
            cache.get_or_compute("k", fail)
    assert len(cache) == 0


def test_the_bound_holds_under_threads():
    cache = LRUCache(max_entries=50)
    errors = []

    def hammer(offset: int) -> None:
        try:
            for i in range(2000):
                cache.get_or_compute((offset, i % 120), lambda i=i: i)
                cache.get((offset, (i * 7) % 120))
        except Exception as exc:  # noqa: BLE001 - any failure fails the test below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(cache) == 50
