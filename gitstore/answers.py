"""A read's answer with its JSON bytes, and the one cache of them the Store owns.

Encoding a large document costs more than the rest of a warm lookup, so the bytes of a shared
answer (`Served.shared`: data of the read caches, never mutated) are made once and kept with
it: `Answers.of(served)` gives the `Answer` (the `Served` and its bytes), kept by the identity
of the data, and a front end that gives an answer again without asking the service (the API's
fast path) keeps its replay of that same `Answer` in the same cache (`keep`/`replay`). Both
kinds of entry live in `Caches.answers`: one bound, one place to count and clear, and a second
Store of the same root starts empty.

The bytes are those of the front end's JSON settings (`Encoder`: the app hands the Store its
own when it is built, `Answers.use`), and a new answer's JSON is assembled from the JSON of
the entries it shares, by identity, with an earlier answer (`Fragments`; the identity contract
of gitstore/served.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from gitstore.backend.cache import LRUCache
from gitstore.served import Served

#: Fewer top-level entries than this are encoded whole (nothing to gain from fragments).
FRAGMENT_MIN_ENTRIES = 16
#: The answers kept as heads (`Fragments`), and the largest kept (its JSON's characters).
FRAGMENT_HEADS = 8
HEAD_BYTES = 4 * 1024 * 1024
#: What a replay weighs besides its answer's bytes (its headers and ids).
REPLAY_WEIGHT = 256


@dataclass(frozen=True)
class Answer:
    """A `Served` and its JSON bytes (`Encoder.encode` of its data)."""

    served: Served
    body: bytes


class Encoder:
    """JSON text as `json.dumps(data, default=default, ensure_ascii=ensure_ascii)` gives it
    (no sorted keys, the default separators): Flask's default JSON provider with those
    settings gives the same bytes (`settings` is what a front end compares to tell)."""

    def __init__(
        self, default: Callable[[Any], Any] | None = None, ensure_ascii: bool = True
    ) -> None:
        self.settings = (default, ensure_ascii)
        self._whole = json.JSONEncoder(default=default, ensure_ascii=ensure_ascii)
        self.fragments = Fragments(self._whole)

    def encode(self, data: Any) -> bytes:
        """The UTF-8 JSON of shared data (never mutated: the identity contract), assembled
        from kept fragments for a large mapping."""
        if type(data) is dict and len(data) >= FRAGMENT_MIN_ENTRIES:
            return self.fragments.body(data).encode("utf-8")
        return self.whole(data)

    def whole(self, data: Any) -> bytes:
        """The UTF-8 JSON of any data, encoded whole (its objects may change later)."""
        return self._whole.encode(data).encode("utf-8")


class Answers:
    """The Store's cache of answers with their bytes (`Caches.answers`, weighed by bytes)."""

    def __init__(self, cache: LRUCache, encoder: Encoder | None = None) -> None:
        self._cache = cache
        self.encoder = encoder or Encoder()
        self._lock = threading.Lock()

    def use(self, encoder: Encoder) -> None:
        """Encode with `encoder` from now on (the front end's JSON settings); bytes kept under
        other settings are dropped."""
        with self._lock:
            if encoder.settings != self.encoder.settings:
                self.encoder = encoder
                self._cache.clear()

    def of(self, served: Served) -> Answer:
        """`served` with its bytes: kept for a shared answer, by the identity of its data and
        by whether it reveals secrets (so bytes made for a caller who may reveal are never
        found for one who may not, whatever the services hand out); encoded anew otherwise.
        The entry holds the data, so its id is not reused while the entry lives."""
        encoder = self.encoder
        if not served.shared:
            return Answer(served, encoder.whole(served.data))
        key = ("data", id(served.data), bool(served.revealed))
        found = self._cache.get(key)
        if found is not None and found.served.data is served.data:
            # The same data read at another commit (inputs unchanged): its own provenance.
            return found if found.served is served else Answer(served, found.body)
        answer = Answer(served, encoder.encode(served.data))
        if encoder is self.encoder:  # not made under settings replaced meanwhile
            self._cache.put(key, answer, len(answer.body))
        return answer

    def replay(self, key: Hashable) -> Any:
        """What a front end kept under `key` (`keep`), or None."""
        return self._cache.get(("replay", key))

    def keep(self, key: Hashable, replay: Any, answer: Answer) -> None:
        """Keep a front end's `replay` of `answer` (which it holds) under its own `key`."""
        self._cache.put(("replay", key), replay, len(answer.body) + REPLAY_WEIGHT)

    def __len__(self) -> int:
        return len(self._cache)


class _Head:
    """An earlier answer's entries (the very key and value objects, in order) and the JSON of
    each, encoded when an answer first shares it."""

    __slots__ = ("keys", "values", "texts")

    def __init__(self, data: dict) -> None:
        self.keys = tuple(data)
        self.values = tuple(data.values())
        self.texts: list[str | None] = [None] * len(self.keys)


class Fragments:
    """The JSON of a shared answer assembled from the entries it shares, in place, with an
    earlier answer (a head), so that only its other entries are encoded: a node's effective
    document is its parent scope's kept document with the node's keys merged over it
    (`configdb.scopes`), so every node of a scope shares the head's entries but its own: a
    cold node's answer costs a fraction of encoding it whole. Bytes are exactly
    `encoder.encode(data)`'s: entries in the same order, joined by its item separator.

    A head is found by its first value (the same object: answers of one document, whoever's
    node, start with the parent's first entry), so the answers of several resources each find
    theirs, and an answer sharing nothing (`show_lookup` wraps every entry) finds none: it is
    encoded whole and kept as a head, replacing the least recently used of `FRAGMENT_HEADS`.
    A head that an answer shares fewer than `FRAGMENT_MIN_ENTRIES` entries with (its document
    changed) is replaced by that answer.

    Used only for shared answers (`Served.shared`: documents of the read caches, never
    mutated), so an entry's objects keep their JSON; answers share entries only as the
    identity contract (gitstore/served.py) says. An entry's JSON is used only while the
    answer holds that very key and value at the same place (`is`), and the head holds those
    objects, so a reused id can never serve another object's JSON. A head's JSON is at most
    its answer's, and answers of more than `HEAD_BYTES` are not kept as heads.
    """

    def __init__(self, encoder: json.JSONEncoder) -> None:
        self.encode = encoder.encode
        self.heads: dict[int, _Head] = {}  # by the id of the first value, oldest use first
        self._mutex = threading.Lock()  # threaded workers: one thread reorders, one evicts

    def body(self, data: dict) -> str:
        first = next(iter(data.values()))
        head = self._head(first)
        if head is None:
            text = self.encode(data)
            self._keep(first, data, text)
            return text
        encode, texts = self.encode, head.texts
        parts: list[str] = []
        run: dict = {}
        shared = 0
        items = iter(data.items())
        # The head first: zip stops before taking an entry of `items` once the head is done.
        for index, kept_key, kept_value, (key, value) in zip(
            range(len(texts)), head.keys, head.values, items, strict=False
        ):
            if key is not kept_key or value is not kept_value:
                run[key] = value  # encoded with its unshared neighbours
                continue
            piece = texts[index]
            if piece is None:
                piece = texts[index] = encode({key: value})[1:-1]
            if run:
                parts.append(encode(run)[1:-1])
                run = {}
            parts.append(piece)
            shared += 1
        run.update(items)  # entries past the head's
        if run:
            parts.append(encode(run)[1:-1])
        text = "{" + ", ".join(parts) + "}"
        if shared < FRAGMENT_MIN_ENTRIES:
            self._keep(first, data, text)  # its document changed: this answer is the new head
        return text

    def _head(self, first: Any) -> _Head | None:
        """The head of answers starting with `first`, now the most recently used."""
        with self._mutex:
            head = self.heads.pop(id(first), None)
            if head is None or head.values[0] is not first:
                return None
            self.heads[id(first)] = head
            return head

    def _keep(self, first: Any, data: dict, text: str) -> None:
        """Keep `data` as the head of answers starting with `first`."""
        if len(text) > HEAD_BYTES:
            return
        head = _Head(data)
        with self._mutex:
            self.heads.pop(id(first), None)
            if len(self.heads) >= FRAGMENT_HEADS:
                del self.heads[next(iter(self.heads))]  # the least recently used
            self.heads[id(first)] = head
