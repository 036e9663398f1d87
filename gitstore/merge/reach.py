"""How far a change of inherited values reaches through a scope's own layers, without merging.

A scope's effective document is its parent scope's document with the scope's own layers merged
over it (`effective.merge_onto`). When only the parent's document changed, the scope's change
follows from the parent's change and the keys its own layers hold:

- **untouched**: where no own layer holds a key on a changed path (the path itself, a key above
  it, a key below it, or a `--key` knocking one of them out), the scope's effective values change
  exactly as the parent's did, at the same paths, with the same values, in the same order;
- **touched**: otherwise the scope's change lies within the top-level keys the parent's change
  names (merging a key depends on that key's entries alone), so merging just those keys, of the
  parent's documents and of the own layers, gives the scope's change exactly.

In a `shallow` merge a layer's top-level key replaces the inherited one whole, so a layer
touches a path when it holds the path's top-level key (or knocks it out).

A `KeyIndex` answers the same question from a few bytes per key instead of the parsed layer: a
caller keeps one per layer blob, so asking whether 1,000 nodes' facts touch a changed key does
not parse 1,000 files. Its answers may say "touched" where the layer does not (a hash
collision: the caller then merges, which is exact), never the reverse.

Pure functions over documents; tests/merge/test_reach.py compares them with full merges.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Set
from typing import Any, overload

from gitstore.merge.effective import KNOCKOUT, SHALLOW, Layer
from gitstore.merge.strategies import Strategies

__all__ = ["KeyIndex", "restricted", "restricted_layers", "touches", "touches_indexed"]


def touches(
    layers: Iterable[Layer], paths: Iterable[tuple[Any, ...]], mode: str | Strategies
) -> bool:
    """Whether any layer holds a key on any of `paths` (see the module docstring)."""
    datas = [layer.data for layer in layers if layer.data]
    if not datas:
        return False
    depth = 1 if mode == SHALLOW else None
    return any(_holds(data, path[:depth]) for path in paths for data in datas)


def touches_indexed(
    indexes: Iterable[KeyIndex], paths: Iterable[tuple[Any, ...]], mode: str | Strategies
) -> bool:
    """`touches` asked of the layers' `KeyIndex`es: True wherever `touches` is (and, rarely,
    where it is not)."""
    depth = 1 if mode == SHALLOW else None
    return any(index.holds(path[:depth]) for path in paths for index in indexes)


class KeyIndex:
    """The key paths of one layer document, and which of them hold no mapping, as sorted
    32-bit hashes: `holds` walks a path as `_holds` walks the document."""

    __slots__ = ("_hashes",)

    def __init__(self, document: Mapping[str, Any] | None) -> None:
        found = set()
        stack: list[tuple[tuple[Any, ...], Mapping[str, Any]]] = [((), document or {})]
        while stack:
            prefix, mapping = stack.pop()
            for key, value in mapping.items():
                path = (*prefix, key)
                found.add(_key_hash(path))
                if isinstance(value, Mapping):
                    stack.append((path, value))
                else:
                    found.add(_leaf_hash(path))
        self._hashes = array("I", sorted(found))

    @property
    def size(self) -> int:
        """Bytes held (the weight of a cache of indexes)."""
        return self._hashes.itemsize * len(self._hashes) + 64

    def holds(self, path: tuple[Any, ...]) -> bool:
        for depth, segment in enumerate(path):
            prefix = path[:depth]
            if depth and self._has(_leaf_hash(prefix)):
                return True
            if (
                isinstance(segment, str)
                and segment
                and self._has(_key_hash((*prefix, KNOCKOUT + segment)))
            ):
                return True
            if not self._has(_key_hash((*prefix, segment))):
                return False
        return True

    def _has(self, value: int) -> bool:
        at = bisect_left(self._hashes, value)
        return at < len(self._hashes) and self._hashes[at] == value


_MASK = 0xFFFFFFFF


def _key_hash(path: tuple[Any, ...]) -> int:
    """Equal keys hash equal (`1` and `True` too, as a dict finds them): no miss is possible."""
    return hash(path) & _MASK


def _leaf_hash(path: tuple[Any, ...]) -> int:
    return hash(("leaf", path)) & _MASK


def _holds(data: Mapping[str, Any], path: tuple[Any, ...]) -> bool:
    """Whether `data` holds a key on `path` or knocks one out: walking down `path`, a
    non-mapping on the way (it replaces what is below) or a `--segment` key is a hit, a
    missing segment a miss; reaching the end of `path` is a hit."""
    node: Any = data
    for segment in path:
        if not isinstance(node, Mapping):
            return True
        if isinstance(segment, str) and segment and KNOCKOUT + segment in node:
            return True
        if segment not in node:
            return False
        node = node[segment]
    return True


@overload
def restricted(document: Mapping[str, Any], keys: Set[Any]) -> dict[str, Any]: ...
@overload
def restricted(document: None, keys: Set[Any]) -> None: ...
@overload
def restricted(document: Mapping[str, Any] | None, keys: Set[Any]) -> dict[str, Any] | None: ...
def restricted(document: Mapping[str, Any] | None, keys: Set[Any]) -> dict[str, Any] | None:
    """`document` with only the top-level `keys` and the `--key` knock-outs of them."""
    if document is None:
        return None
    return {key: value for key, value in document.items() if key in keys or _knocks(key, keys)}


def restricted_layers(layers: Iterable[Layer], keys: Set[Any]) -> list[Layer]:
    """Each layer `restricted` to `keys`."""
    return [
        Layer(layer.scope, layer.kind, restricted(layer.data, keys), layer.file) for layer in layers
    ]


def _knocks(key: Any, keys: Set[Any]) -> bool:
    return (
        isinstance(key, str)
        and key.startswith(KNOCKOUT)
        and len(key) > len(KNOCKOUT)
        and key[len(KNOCKOUT) :] in keys
    )
