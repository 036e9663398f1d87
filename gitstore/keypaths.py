"""Key paths into documents: get (`a.b.0`), and the atomic batch operations set and delete.

Pure functions on plain data. A segment that looks like an integer indexes a list; through a
mapping it is a key. Failures raise Conflict naming the dotted path, so a batch is all or nothing
(callers apply it to a copy).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gitstore.errors import Conflict, InvalidInput

_MISSING = object()
#: ASCII digits only: `str.isdigit` also accepts `²` and other digits `int` refuses.
_INTEGER = re.compile(r"-?[0-9]+")
#: The batch operations of `.../keys/<op>`.
KEY_OPS = ("set", "delete")
#: Longest key path of a batch, so documents stay shallow enough for recursive YAML writers.
MAX_PATH = 64


def dotted(path: Sequence[Any]) -> str:
    return ".".join(str(segment) for segment in path)


def split_dotted(key: str) -> list[str]:
    if not key or any(part == "" for part in key.split(".")):
        raise InvalidInput(f"key {key!r} is not a dotted path like a.b.0", key="key")
    return key.split(".")


def _child(container: Any, segment: Any) -> Any:
    if isinstance(container, dict):
        key = _existing_key(container, segment)
        return _MISSING if key is _MISSING else container[key]
    if isinstance(container, list):
        index = _as_int(segment)
        if index is None or not 0 <= index < len(container):
            return _MISSING
        return container[index]
    return _MISSING


def _as_int(segment: Any) -> int | None:
    if isinstance(segment, bool):
        return None
    if isinstance(segment, int):
        return segment
    if isinstance(segment, str) and _INTEGER.fullmatch(segment):
        try:
            return int(segment)
        except ValueError:  # past Python's digit limit: no list is that long, no key that big
            return None
    return None


def _existing_key(container: dict[str, Any], segment: Any) -> Any:
    """The key of `container` that `segment` names: itself, or its integer or string form.

    YAML keys may be integers (`1: x`) while a dotted or JSON path gives strings, and the
    other way round.
    """
    for candidate in (segment, _as_int(segment), str(segment)):
        if candidate is not None and candidate in container:
            return candidate
    return _MISSING


def _dict_key(container: dict[str, Any], segment: Any) -> Any:
    """The key `segment` names in `container`; a new key is a string, as JSON's keys are."""
    key = _existing_key(container, segment)
    return str(segment) if key is _MISSING else key


#: The next step of a refusal about a key path: see which keys the document has.
SEE_KEYS = "; read the whole document to see its keys (`gitstore config get` without --key)"


def get_path(document: Any, path: Sequence[Any]) -> Any:
    """The value at `path`; a missing key or index raises Conflict naming the path."""
    node = document
    for depth, segment in enumerate(path):
        node = _child(node, segment)
        if node is _MISSING:
            raise Conflict(
                f"key {dotted(path[: depth + 1])!r} does not exist{SEE_KEYS}", key=dotted(path)
            )
    return node


def check_batch(body: Any, op: str) -> list[list[Any]]:
    """A key-operation body: a list of lists, each long enough for `op`."""
    minimum = 2 if op == "set" else 1
    if not isinstance(body, list) or not all(isinstance(p, list) for p in body):
        raise InvalidInput("body must be a list of key paths (lists of segments)")
    for path in body:
        if len(path) < minimum:
            raise InvalidInput(f"key path {path!r} is too short for {op!r}")
        if len(path) > MAX_PATH:
            raise InvalidInput(f"key path {dotted(path[:3])}... is longer than {MAX_PATH}")
        if not all(isinstance(seg, str | int) and not isinstance(seg, bool) for seg in path[:-1]):
            raise InvalidInput(f"key path {path!r}: segments must be strings or integers")
        if op == "delete" and isinstance(path[-1], bool | float | dict | list | None):
            raise InvalidInput(f"key path {path!r}: segments must be strings or integers")
    return body


def apply_batch(document: dict[str, Any], op: str, paths: list[list[Any]]) -> dict[str, Any]:
    """A copy of `document` with every path set (`[..keys, value]`) or deleted.

    Only the mappings and lists on the paths are copied; the rest is shared with `document`,
    which is never edited (it may be a shared cached parse). A deep copy of a large document
    cost more than the rest of a key write.
    """
    result = dict(document)
    owned = {id(result)}  # containers this batch made: edited in place
    for path in paths:
        if op == "set":
            _set(result, path[:-1], path[-1], owned)
        else:
            _delete(result, path, owned)
    return result


def _set(document: dict[str, Any], keys: list[Any], value: Any, owned: set[int]) -> None:
    node: Any = document
    for depth, segment in enumerate(keys[:-1]):
        child = _child(node, segment)
        if child is _MISSING and isinstance(node, dict):
            child = node[_dict_key(node, segment)] = {}
            owned.add(id(child))
        if child is _MISSING:
            raise Conflict(
                f"list index {dotted(keys[: depth + 1])!r} does not exist (set never appends)",
                key=dotted(keys),
            )
        if not isinstance(child, dict | list):
            raise Conflict(
                f"key {dotted(keys[: depth + 1])!r} is not a mapping or list", key=dotted(keys)
            )
        node = _own(node, segment, child, owned)
    _assign(node, keys, value)


def _own(parent: Any, segment: Any, child: Any, owned: set[int]) -> Any:
    """`child` (a mapping or list in `parent`), replaced by a copy unless this batch made it."""
    if id(child) in owned:
        return child
    mine = dict(child) if isinstance(child, dict) else list(child)
    if isinstance(parent, dict):
        parent[_existing_key(parent, segment)] = mine
    else:
        parent[_as_int(segment)] = mine
    owned.add(id(mine))
    return mine


def _assign(node: Any, keys: list[Any], value: Any) -> None:
    last = keys[-1]
    if isinstance(node, dict):
        node[_dict_key(node, last)] = value
        return
    index = _as_int(last)
    if index is None or not 0 <= index < len(node):
        raise Conflict(f"list index {dotted(keys)!r} does not exist", key=dotted(keys))
    node[index] = value


def _delete(document: dict[str, Any], keys: list[Any], owned: set[int]) -> None:
    parent: Any = document
    for depth, segment in enumerate(keys[:-1]):
        child = _child(parent, segment)
        if child is _MISSING:
            raise Conflict(
                f"key {dotted(keys[: depth + 1])!r} does not exist{SEE_KEYS}", key=dotted(keys[:-1])
            )
        parent = _own(parent, segment, child, owned) if isinstance(child, dict | list) else child
    last = keys[-1]
    if _child(parent, last) is _MISSING:
        raise Conflict(f"key {dotted(keys)!r} does not exist{SEE_KEYS}", key=dotted(keys))
    if isinstance(parent, dict):
        del parent[_dict_key(parent, last)]
    else:
        del parent[_as_int(last)]
