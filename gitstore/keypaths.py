"""Key paths into documents: get (`a.b.0`), and the atomic batch operations set and delete.

Pure functions on plain data. A segment that looks like an integer indexes a list; through a
mapping it is a key. Failures raise Conflict naming the dotted path, so a batch is all or nothing
(callers apply it to a copy).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from gitstore.errors import Conflict, InvalidInput

_MISSING = object()


def dotted(path: Sequence[Any]) -> str:
    return ".".join(str(segment) for segment in path)


def split_dotted(key: str) -> list[str]:
    if not key or any(part == "" for part in key.split(".")):
        raise InvalidInput(f"key {key!r} is not a dotted path like a.b.0", key="key")
    return key.split(".")


def _child(container: Any, segment: Any) -> Any:
    if isinstance(container, dict):
        if segment in container:
            return container[segment]
        as_int = _as_int(segment)
        if as_int is not None and as_int in container:
            return container[as_int]
        return _MISSING
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
    if isinstance(segment, str) and segment.lstrip("-").isdigit():
        return int(segment)
    return None


def _dict_key(container: dict, segment: Any) -> Any:
    if segment in container:
        return segment
    as_int = _as_int(segment)
    return as_int if as_int is not None and as_int in container else segment


def get_path(document: Any, path: Sequence[Any]) -> Any:
    """The value at `path`; a missing key or index raises Conflict naming the path."""
    node = document
    for depth, segment in enumerate(path):
        node = _child(node, segment)
        if node is _MISSING:
            raise Conflict(f"key {dotted(path[: depth + 1])!r} does not exist", key=dotted(path))
    return node


def check_batch(body: Any, op: str) -> list[list[Any]]:
    """A key-operation body: a list of lists, each long enough for `op`."""
    minimum = 2 if op == "set" else 1
    if not isinstance(body, list) or not all(isinstance(p, list) for p in body):
        raise InvalidInput("body must be a list of key paths (lists of segments)")
    for path in body:
        if len(path) < minimum:
            raise InvalidInput(f"key path {path!r} is too short for {op!r}")
        if not all(isinstance(seg, str | int) and not isinstance(seg, bool) for seg in path[:-1]):
            raise InvalidInput(f"key path {path!r}: segments must be strings or integers")
        if op == "delete" and isinstance(path[-1], bool | float | dict | list | None):
            raise InvalidInput(f"key path {path!r}: segments must be strings or integers")
    return body


def apply_batch(document: dict, op: str, paths: list[list[Any]]) -> dict:
    """A copy of `document` with every path set (`[..keys, value]`) or deleted."""
    result = copy.deepcopy(document)
    for path in paths:
        if op == "set":
            _set(result, path[:-1], path[-1])
        else:
            _delete(result, path)
    return result


def _set(document: dict, keys: list[Any], value: Any) -> None:
    node: Any = document
    for depth, segment in enumerate(keys[:-1]):
        child = _child(node, segment)
        if child is _MISSING and isinstance(node, dict):
            child = node[_dict_key(node, segment)] = {}
        if not isinstance(child, dict | list):
            raise Conflict(f"key {dotted(keys[: depth + 1])!r} is not a mapping or list",
                           key=dotted(keys))
        node = child
    _assign(node, keys, value)


def _assign(node: Any, keys: list[Any], value: Any) -> None:
    last = keys[-1]
    if isinstance(node, dict):
        node[_dict_key(node, last)] = value
        return
    index = _as_int(last)
    if index is None or not 0 <= index < len(node):
        raise Conflict(f"list index {dotted(keys)!r} does not exist", key=dotted(keys))
    node[index] = value


def _delete(document: dict, keys: list[Any]) -> None:
    parent = get_path(document, keys[:-1]) if len(keys) > 1 else document
    last = keys[-1]
    if _child(parent, last) is _MISSING:
        raise Conflict(f"key {dotted(keys)!r} does not exist", key=dotted(keys))
    if isinstance(parent, dict):
        del parent[_dict_key(parent, last)]
    else:
        del parent[_as_int(last)]
