"""Effective values: layers merged from the least to the most specific (docs/design.md,
"Effective values").

Pure functions. Layer data may come from a shared parse cache, so nothing here mutates its
inputs: merged mappings are new dicts that share unchanged subtrees with their layers, by
identity: masking and the API's JSON rely on it (the identity contract, gitstore/served.py).

We do not use `deepmerge` here: its Merger edits the base in place (cached layers would need a
deep copy per request) and it has no notion of the `--key` knockout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from gitstore.merge.strategies import Strategies, merge_keys

DEEP = "deep"
SHALLOW = "shallow"
MODES = (DEEP, SHALLOW)
KNOCKOUT = "--"


@dataclass(frozen=True)
class Layer:
    """One document of the chain: a scope (`/` or `/nodes/1/`), a kind and its data."""

    scope: str
    kind: str  # "values" or "overrides"
    data: Mapping[str, Any] | None
    file: str = ""


def _knocked(key: Any) -> str | None:
    if isinstance(key, str) and key.startswith(KNOCKOUT) and len(key) > len(KNOCKOUT):
        return key[len(KNOCKOUT) :]
    return None


def strip_knockouts(value: Any) -> Any:
    """A value with every `--key` entry removed (nothing below it to knock out).

    `value` itself, or the very same sub-mappings, where there is nothing to remove: a merged
    document shares them with its (cached) layers instead of copying every layer whole.
    """
    if not _is_mapping(value):
        return value
    knocking = _knocking(value)
    result = None
    for index, (key, child) in enumerate(value.items()):
        if knocking and key in knocking:
            if result is None:
                result = dict(islice(value.items(), index))
            continue
        kind = type(child)
        if kind is dict or (kind not in _LEAVES and isinstance(child, Mapping)):
            stripped = strip_knockouts(child)  # only mappings hold keys: no call per leaf
            if stripped is not child and result is None:
                result = dict(islice(value.items(), index))
            child = stripped
        if result is not None:
            result[key] = child
    return value if result is None else result


def _knocking(mapping: Mapping[str, Any]) -> set[Any] | None:
    """The `--key` keys of `mapping` (None when it has none: the usual case).

    Asked of every mapping of a node's facts: one search of the keys joined (in C) answers
    "none" without a call per key; only a hit, or a key that is no string, looks key by key.
    """
    try:
        if _KNOCK_LINE not in "\n" + "\n".join(mapping):
            return None
    except TypeError:  # a key that is not a string
        pass
    found = {key for key in mapping if _knocked(key) is not None}
    return found or None


_KNOCK_LINE = "\n" + KNOCKOUT


def _is_mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)`, quick for the dicts and leaves parsed YAML is made of
    (an ABC check per leaf was a visible share of merging a node's facts)."""
    kind = type(value)
    if kind is dict:
        return True
    if kind in _LEAVES:
        return False
    return isinstance(value, Mapping)


_LEAVES = frozenset({str, int, float, bool, type(None), list})


def _without_knocked(base: Mapping[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `base` without the keys `layer` knocks out.

    Knock-outs apply to what the layer inherits, before its own keys: `{--a: ~, a: {x: 1}}`
    replaces an inherited mapping `a` whole instead of merging into it, in any key order.
    """
    result = dict(base)
    for key in layer:
        target = _knocked(key)
        if target is not None:
            result.pop(target, None)
    return result


def deep_merge(base: Any, layer: Any) -> Any:
    """`layer` over `base`: mappings merge recursively, lists and scalars are replaced."""
    if not _is_mapping(base) or not _is_mapping(layer):
        return strip_knockouts(layer)
    knocking = _knocking(layer)
    result = _without_knocked(base, layer) if knocking else dict(base)
    for key, value in layer.items():
        if knocking and key in knocking:
            continue
        kind = type(value)
        if kind is dict or (kind not in _LEAVES and isinstance(value, Mapping)):
            inherited = result.get(key)
            if _is_mapping(inherited):
                result[key] = deep_merge(inherited, value)
                continue
            value = strip_knockouts(value)
        result[key] = value  # a list or scalar: kept as it is (no keys to strip)
    return result


def shallow_merge(base: Mapping[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """`layer` over `base`, top-level keys replaced whole (the legacy ConfigDB behaviour).

    A top-level `--key` knocks an inherited key out here too; no `--` key reaches the result.
    """
    result = _without_knocked(base, layer)
    for key, value in layer.items():
        if _knocked(key) is None:
            result[key] = strip_knockouts(value)
    return result


def merge_layers(layers: Iterable[Layer], mode: str | Strategies = DEEP) -> dict[str, Any]:
    """The effective document of `layers`, given least specific first.

    With per-key strategies (`mode` a Strategies), the keys they name are folded as Hiera folds
    them (`strategies.py`), every other key by the environment's mode.
    """
    if isinstance(mode, Strategies):
        layers = list(layers)
        result = merge_onto({}, layers, mode.mode)
        return merge_keys(result, [layer.data for layer in layers], mode)
    return merge_onto({}, layers, mode)


def merge_onto(
    base: dict[str, Any], layers: Iterable[Layer], mode: str | Strategies = DEEP
) -> dict[str, Any]:
    """`layers` merged over `base`, the effective document of the layers before them.

    `merge_layers` is a left fold, so `merge_onto(merge_layers(a), b)` is `merge_layers(a + b)`:
    a caller may keep the document of a shared prefix of layers and merge only the rest.
    Not so with per-key strategies: `merge_layers` merges those from all their layers.
    """
    if isinstance(mode, Strategies):
        raise ValueError("per-key strategies merge from all layers: use merge_layers")
    merge = shallow_merge if mode == SHALLOW else deep_merge
    result = base
    for layer in layers:
        if layer.data:
            result = merge(result, layer.data)
    return result


def lookup_sources(layers: Iterable[Layer]) -> dict[str, str]:
    """For each top-level key of the result, the scope of the most specific layer that set it."""
    sources: dict[str, str] = {}
    for layer in layers:
        data = layer.data or {}
        sources = _without_knocked(sources, data)
        sources.update((key, layer.scope) for key in data if _knocked(key) is None)
    return sources


def with_lookup(result: Mapping[str, Any], sources: Mapping[str, str]) -> dict[str, list[Any]]:
    """`show_lookup` form: every top-level key becomes `[value, scope]`."""
    return {key: [value, sources.get(key, "/")] for key, value in result.items()}
