"""Walking documents leaf by leaf, with each leaf's key path and whether a rule makes it secret.

A leaf is anything that is not a mapping or a list; list items are addressed by their index.
Walks never edit their input (it may be a shared cached object): `rebuild` returns new
containers only where a leaf changed, and the input itself when nothing did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gitstore.names import is_number
from gitstore.secrets import cipher
from gitstore.secrets.rules import Rules

MISSING: Any = object()

#: (value, stored value at the same path or MISSING, key path, secret?) -> new value
Leaf = Callable[[Any, Any, tuple[str, ...], bool], Any]


def rebuild(
    value: Any,
    rules: Rules,
    leaf: Leaf,
    old: Any = MISSING,
    path: tuple[str, ...] = (),
    inherited: bool = False,
) -> Any:
    """`value` with `leaf` applied to every leaf; `old` is walked alongside it."""
    secret = inherited or rules.starts_here(path)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        changed = False
        result = {}
        for key, child in value.items():
            new = rebuild(child, rules, leaf, old_map.get(key, MISSING), (*path, str(key)), secret)
            changed = changed or new is not child
            result[key] = new
        return result if changed else value
    if isinstance(value, list):
        old_list = old if isinstance(old, list) else []
        items = [
            rebuild(
                child,
                rules,
                leaf,
                old_list[i] if i < len(old_list) else MISSING,
                (*path, str(i)),
                secret,
            )
            for i, child in enumerate(value)
        ]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return leaf(value, old, path, secret)


def secret_leaves(
    value: Any, rules: Rules, path: tuple[str, ...] = (), inherited: bool = False
) -> Iterator[tuple[tuple[str, ...], Any, bool]]:
    """(key path, value, secret?) of every leaf."""
    secret = inherited or rules.starts_here(path)
    if isinstance(value, dict):
        for key, child in value.items():
            yield from secret_leaves(child, rules, (*path, str(key)), secret)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from secret_leaves(child, rules, (*path, str(index)), secret)
    else:
        yield path, value, secret


def secret_paths(document: Any, rules: Rules) -> list[tuple[str, ...]]:
    """Key paths of the secret leaves of `document`: those a rule makes secret, and sealed ones.

    What a schema may not judge (`gitstore.validation`): REST sees these values in plain text,
    the push gate as `ENC[...]`, so only one rule is the same for both: not their values.
    """
    return [path for path, _, _ in marked_leaves(document, rules)]


def marked_leaves(document: Any, rules: Rules) -> list[tuple[tuple[str, ...], Any, bool]]:
    """(key path, value, secret?) of the leaves a rule makes secret or that look sealed, in
    `secret_leaves`' order: all that the push gate's secrets rule and a schema's exemptions
    look at, from one walk. The gate walks every pushed document: a plain recursion that keeps
    only these leaves, not a generator that hands every leaf up through each level."""
    found: list[tuple[tuple[str, ...], Any, bool]] = []
    _mark(document, rules, (), False, found)
    return found


def _mark(value: Any, rules: Rules, path: tuple[str, ...], inherited: bool, found: list) -> None:
    secret = inherited or rules.starts_here(path)
    if isinstance(value, dict):
        for key, child in value.items():
            _mark(child, rules, (*path, str(key)), secret, found)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _mark(child, rules, (*path, str(index)), secret, found)
    elif secret or cipher.is_sealed(value):
        found.append((path, value, secret))


def value_at(document: Any, path: tuple[str, ...]) -> Any:
    """The value at a key path of strings (list indexes as digits); MISSING if absent."""
    node = document
    for segment in path:
        if isinstance(node, dict):
            node = _child(node, segment)
        elif isinstance(node, list) and is_number(segment) and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return MISSING
        if node is MISSING:
            return MISSING
    return node


def replaced(document: Any, path: tuple[str, ...], value: Any) -> Any:
    """A copy of `document` with `value` at `path` (which exists); only the containers on the
    path are copied, everything else is shared."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, list):
        index = int(head)
        return [*document[:index], replaced(document[index], rest, value), *document[index + 1 :]]
    key = _key(document, head)
    return {**document, key: replaced(document[key], rest, value)}


def _child(mapping: dict, segment: str) -> Any:
    key = _key(mapping, segment)
    return MISSING if key is MISSING else mapping[key]


def _key(mapping: dict, segment: str) -> Any:
    if segment in mapping:
        return segment
    for key in mapping:  # a YAML key that is not a string (`1:`, `true:`)
        if not isinstance(key, str) and str(key) == segment:
            return key
    return MISSING
