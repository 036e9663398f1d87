"""The bounded LRU cache, and the Store's `Caches` made of them."""

from __future__ import annotations

import threading

import pytest

from gitstore import Store
from gitstore.backend.cache import LRUCache
from gitstore.configdb.values import Query


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


def test_a_store_keeps_what_its_reads_learn_in_its_own_caches(fuel_store):
    """Every read cache is its Store's (`Caches`), handed to the snapshots its repositories
    read: a lookup fills its store's; a second store of the same root starts with none and
    answers the same."""

    def lookup(store):
        query = Query(effective=True)
        return store.config.read(1, [("nodes", "1")], "astute", "values", query).data

    layers = {((), "astute", "values"): {"a": 1}, ((("nodes", "1"),), "astute", "values"): {}}
    fuel_store.config.write_many(1, layers, "data")
    first = lookup(fuel_store)
    assert first == {"a": 1}
    assert len(fuel_store.caches.effective_documents) > 0
    assert fuel_store.environment_repo(1).snapshot().caches is fuel_store.caches
    other = Store(fuel_store.root)
    assert len(other.caches.effective_documents) == len(other.caches.parsed_blobs) == 0
    assert lookup(other) == first
    assert len(other.caches.effective_documents) > 0
    assert other.environment_repo(1).snapshot().caches is other.caches
