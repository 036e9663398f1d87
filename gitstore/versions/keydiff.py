"""The key paths whose values differ between two effective documents, and where each side's
value comes from (its winning layer).

Pure functions over parsed documents and layers. Mappings are entered; any other value (a list,
a scalar) is compared whole, the granularity at which effective values merge (as
`gitstore.merge.diff`). A key present on one side only is reported with its whole value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gitstore.merge.diff import same_value
from gitstore.merge.effective import Layer

#: A side's value where it has none.
MISSING: Any = object()


def differences(a: Mapping, b: Mapping, prefix: tuple = ()) -> Iterator[tuple[tuple, Any, Any]]:
    """`(key path, a's value, b's value)` of every path that differs (MISSING on a side that
    lacks it), in `a`'s order, then the paths only `b` has."""
    for key, before in a.items():
        path = (*prefix, key)
        after = b.get(key, MISSING)
        if after is MISSING:
            yield path, before, MISSING
        elif isinstance(before, Mapping) and isinstance(after, Mapping):
            yield from differences(before, after, path)
        elif not same_value(before, after):
            yield path, before, after
    for key, after in b.items():
        if key not in a:
            yield (*prefix, key), MISSING, after


def value_at(document: Any, path: tuple) -> Any:
    """The value at `path` through mappings only (MISSING where there is none)."""
    node = document
    for segment in path:
        if not isinstance(node, Mapping) or segment not in node:
            return MISSING
        node = node[segment]
    return node


def winner(layers: Sequence[Layer], path: tuple) -> Layer | None:
    """The most specific layer holding a value at `path` (the one whose value won)."""
    for layer in reversed(layers):
        if layer.data is not None and value_at(layer.data, path) is not MISSING:
            return layer
    return None
