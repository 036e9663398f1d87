"""Bounded caches keyed by immutable ids (blob and commit ids never change meaning).

A cache is bounded by its number of entries and, when given `max_weight`, by the sum of its
entries' weights (e.g. the bytes of the blobs parsed): a count alone does not bound memory when
one entry is a 20-byte id and another a 30 KB document.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from gitstore import metrics

_MISSING: Any = object()  # compared by identity; typed Any so a found entry indexes


class LRUCache:
    """A thread-safe least-recently-used mapping bounded by entries and optionally by weight."""

    def __init__(
        self, max_entries: int, max_weight: int | None = None, *, name: str = "other"
    ) -> None:
        self.name = name  # the `cache` label of gitstore_cache_requests_total
        self._max = max_entries
        self._max_weight = max_weight
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get_or_compute(
        self, key: Hashable, compute: Callable[[], Any], weigh: Callable[[Any], int] | None = None
    ) -> Any:
        """The cached value of `key`, else `compute()` stored with weight `weigh(value)`."""
        with self._lock:
            found = self._data.get(key, _MISSING)
            if found is not _MISSING:
                self._data.move_to_end(key)
        metrics.cache_lookup(self.name, found is not _MISSING)
        if found is not _MISSING:
            return found[0]
        value = compute()
        self.put(key, value, weigh(value) if weigh else 1)
        return value

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            found = self._data.get(key, _MISSING)
            if found is not _MISSING:
                self._data.move_to_end(key)
        metrics.cache_lookup(self.name, found is not _MISSING)
        return default if found is _MISSING else found[0]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weight = 0

    def put(self, key: Hashable, value: Any, weight: int = 1) -> None:
        if self._max_weight is not None and weight > self._max_weight:
            return  # would evict everything else and still not fit
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._data[key] = (value, weight)
            self._weight += weight
            while len(self._data) > self._max or (
                self._max_weight is not None and self._weight > self._max_weight
            ):
                _, (_, dropped) = self._data.popitem(last=False)
                self._weight -= dropped

    @property
    def weight(self) -> int:
        """The sum of the weights of the entries held now."""
        return self._weight

    def __len__(self) -> int:
        return len(self._data)


def parsed(
    cache: LRUCache, blob_id: str, data: Callable[[], bytes], parse: Callable[[bytes], Any]
) -> Any:
    """The parse of blob `blob_id` from `cache` (`Caches.parsed_blobs`), else `parse(data())`
    stored there weighed by the YAML's size."""
    found = cache.get(blob_id, _MISSING)
    if found is not _MISSING:
        return found
    raw = data()
    value = parse(raw)
    cache.put(blob_id, value, len(raw))
    return value


#: The most JSON bytes of answers kept (`Caches.answers`; part of a worker's memory budget).
ANSWER_BYTES = 32 * 1024 * 1024
#: The most SVG text the console's graph drawings keep (room for many drawings of Fuel's
#: default graph, the largest known).
DRAWINGS_BYTES = 32 * 1024 * 1024


class Caches:
    """The read caches one Store owns: created with it and handed to the services that use
    them (never found through a module), so what a service keeps shows in its constructor and
    two stores share nothing. Each is bounded; the bounds are part of a worker's memory budget.
    The repositories hand them to the snapshots they read, so what reads one commit through its
    view (`Snapshot.caches`) keeps what it learns by immutable id there.
    """

    def __init__(self) -> None:
        self._backend()
        self._documents()
        self._answers()
        self._services()

    def _backend(self) -> None:
        """What the repositories keep (`backend/repository.py`, `backend/snapshot.py`)."""
        #: First-parent depth (the integer version) by (repository path, commit id): immutable.
        self.depths = LRUCache(max_entries=200_000, name="depths")
        #: First-parent chain of main by repository path: (head, commit ids root first).
        #: Weighed by length: at most 400,000 ids (~36 MB) in all.
        self.chains = LRUCache(max_entries=64, max_weight=400_000, name="chains")
        #: main's chain read from its index, by repository path (`chainindex.ChainView`).
        self.chain_views = LRUCache(max_entries=256, name="chain_views")
        #: Parsed YAML by blob id, shared by every repository of the store; read-only values.
        #: Weighed by the YAML's size: parsed objects take 6-7x that, so this holds ~40 MiB.
        self.parsed_blobs = LRUCache(20_000, 6 * 1024 * 1024, name="parsed_blobs")

    def _documents(self) -> None:
        """What reads and writes of documents keep, each keyed by immutable ids."""
        #: Stored texts judged safe to splice, by their bytes (`documents._judged`).
        self.spliced_texts = LRUCache(256, 8 * 1024 * 1024, name="spliced_texts")
        #: Checked schema validators by the schema's text (`schemas.validator`).
        self.schema_validators = LRUCache(max_entries=256, name="schema_validators")
        #: Merged effective documents by (mode, layer blob ids): shared, never mutated
        #: (`configdb/scopes.py`); ~40 KB per Fuel node document.
        self.effective_documents = LRUCache(max_entries=512, name="effective_documents")
        #: fqdn -> node id maps of an inventory by its tree id (`layout.EnvironmentView`).
        self.fqdn_maps = LRUCache(max_entries=256, name="fqdn_maps")
        #: Canonical graph documents by blob id (`deployment/graphs.py`).
        self.graphs = LRUCache(max_entries=1024, name="graphs")
        #: The `KeyIndex` of layer blobs by blob id (`versions/diffs.py`): ~12 KB for a node's
        #: ~1,600 facts, so 16 MiB hold the layers of several thousand nodes.
        self.key_indexes = LRUCache(50_000, 16 * 1024 * 1024, name="key_indexes")
        #: Layer blobs `restricted` to some top-level keys, by (blob id, keys): what the nodes
        #: that touch a change merge, kept so the pages that show one change (REST diff, commit
        #: page, preview) parse each node's facts once. Weighed by their share of the bytes.
        self.restricted_layers = LRUCache(100_000, 16 * 1024 * 1024, name="restricted_layers")
        #: Key lines of a YAML file by blob id (`versions/explain.py`).
        self.explain_lines = LRUCache(max_entries=4096, name="explain_lines")

    def _answers(self) -> None:
        """What services keep of their answers and of masking."""
        #: Answers with their JSON bytes (`gitstore/answers.py`): a shared answer's by the
        #: identity of its data, and the API fast path's replays of them by request. Weighed
        #: by the bytes (a replay counts its answer's again: it may outlive that entry).
        self.answers = LRUCache(2048, ANSWER_BYTES, name="answers")
        #: Masked documents by (immutable key, rules) (`secrets/mask.py`).
        self.masked_documents = LRUCache(max_entries=1024, name="masked_documents")
        #: Masked entries per (rules, inherited): a table of key -> (entry, masked entry,
        #: masked paths), each emptied past `mask.MAX_ENTRIES` (see `mask._mask_entries`).
        self.masked_entries = LRUCache(max_entries=32, name="masked_entries")
        #: Compiled secret rules (`mask._Plan`) by their `Rules` (equal rules share one).
        self.secret_rules = LRUCache(max_entries=256, name="secret_rules")
        #: Explain answers by (repository, commit, scope, resource, key): fixed for a commit.
        self.explain_answers = LRUCache(max_entries=512, name="explain_answers")
        #: Masked explain answers of the versions service.
        self.masked_explains = LRUCache(max_entries=256, name="masked_explains")

    def _services(self) -> None:
        """The secrets service's, the values', Hiera's and the console's."""
        #: Resource definitions by (catalog commit, attached components): immutable inputs.
        self.secret_definitions = LRUCache(max_entries=256, name="secret_definitions")
        #: Revealed documents by (environment, the masked cache key, rules, keyring epoch):
        #: plain-text secrets in the worker's memory, as in every answer that reveals them;
        #: bounded like `masked_documents`, whose documents they share most of their subtrees with.
        self.revealed_documents = LRUCache(max_entries=256, name="revealed_documents")
        #: Masked answers of values by (repository, commit, catalog commit, request): immutable
        #: ids. The data is shared with the merge and mask caches: never mutate it.
        self.value_answers = LRUCache(max_entries=512, name="value_answers")
        #: Catalog views by (thread, catalog commit id); read only.
        self.catalogs = LRUCache(max_entries=32, name="catalogs")
        #: Hiera's instance groupings by (environment, inventory tree, environment.yaml,
        #: catalog commit): reading them walks every node file, which a Puppet master asking
        #: for node after node must not repeat while the inventory stays the same.
        self.hiera_instances = LRUCache(max_entries=256, name="hiera_instances")
        #: Hiera's effective values by (merge mode, blob ids of the layers in order): merging a
        #: large resource costs milliseconds; a Puppet master asks for the same node again.
        self.hiera_documents = LRUCache(max_entries=2048, name="hiera_documents")
        #: Whole Hiera node documents by (repository, commit, catalog commit, request, keyring
        #: epoch when revealed): most of each shared with `hiera_documents` and the secrets'.
        self.hiera_answers = LRUCache(max_entries=256, name="hiera_answers")
        #: The console's drawings of deployment graphs (SVG by the SHA-256 of their DOT).
        self.graph_drawings = LRUCache(32, DRAWINGS_BYTES, name="graph_drawings")
