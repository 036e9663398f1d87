"""Effective values (docs/design.md, "Effective values"): pure merging of layers, least specific
first."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore.merge.effective import (
    DEEP,
    SHALLOW,
    Layer,
    deep_merge,
    lookup_sources,
    merge_layers,
    merge_onto,
    shallow_merge,
    strip_knockouts,
    with_lookup,
)

NODE = "/nodes/1/"


def _chain(global_values=None, global_overrides=None, node_values=None, node_overrides=None):
    """The four layers of a request for `nodes/1`, in the order the store builds them."""
    return [
        Layer("/", "values", global_values, "global/values/r.yaml"),
        Layer("/", "overrides", global_overrides, "global/overrides/r.yaml"),
        Layer(NODE, "values", node_values, "nodes/1/values/r.yaml"),
        Layer(NODE, "overrides", node_overrides, "nodes/1/overrides/r.yaml"),
    ]


# -- precedence ------------------------------------------------------------------------------
def test_precedence_follows_the_chain():
    layers = _chain(
        {"a": 1, "b": 1, "c": 1, "d": 1}, {"b": 2, "c": 2, "d": 2}, {"c": 3, "d": 3}, {"d": 4}
    )
    assert merge_layers(layers) == {"a": 1, "b": 2, "c": 3, "d": 4}


@pytest.mark.parametrize("mode", [DEEP, SHALLOW])
def test_a_deeper_levels_values_beat_a_shallower_override(mode):
    layers = _chain({"key": "global value"}, {"key": "global override"}, {"key": "node value"})
    assert merge_layers(layers, mode) == {"key": "node value"}


@pytest.mark.parametrize("mode", [DEEP, SHALLOW])
def test_a_missing_layer_adds_nothing(mode):
    present = _chain({"a": 1}, None, {"b": 2}, None)
    assert merge_layers(present, mode) == {"a": 1, "b": 2}
    assert merge_layers(_chain(), mode) == {}
    assert merge_layers(_chain({}, {}, {}, {}), mode) == {}


def test_siblings_are_never_consulted():
    """Only the chain's layers count; data of another node in the same store does not."""
    node_1 = _chain({"a": 1}, None, {"b": 1})
    node_2_layer = Layer("/nodes/2/", "values", {"b": 2, "c": 2})
    assert merge_layers(node_1) == {"a": 1, "b": 1}
    assert "c" not in merge_layers(node_1)
    assert merge_layers([*node_1[:2], node_2_layer]) == {"a": 1, "b": 2, "c": 2}


# -- deep ------------------------------------------------------------------------------------
def test_deep_merges_mappings_and_replaces_lists_and_scalars():
    layers = _chain(
        {"db": {"host": "h", "port": 1, "opts": {"x": 1}}, "list": [1, 2], "s": "a"},
        {"db": {"port": 2, "opts": {"y": 2}}, "list": [3], "s": "b"},
    )
    assert merge_layers(layers, DEEP) == {
        "db": {"host": "h", "port": 2, "opts": {"x": 1, "y": 2}},
        "list": [3],
        "s": "b",
    }


def test_deep_a_scalar_replaces_a_mapping_and_back():
    assert deep_merge({"a": {"x": 1}}, {"a": 5}) == {"a": 5}
    assert deep_merge({"a": 5}, {"a": {"x": 1}}) == {"a": {"x": 1}}


def test_knockout_removes_an_inherited_key():
    layers = _chain({"a": 1, "b": 2}, None, {"--a": None})
    assert merge_layers(layers, DEEP) == {"b": 2}


def test_nested_knockout():
    layers = _chain({"db": {"host": "h", "port": 1}}, {"db": {"--port": None}})
    assert merge_layers(layers, DEEP) == {"db": {"host": "h"}}


def test_knockout_then_set_replaces_a_mapping_whole_in_any_key_order():
    base = {"db": {"host": "h", "port": 1}}
    assert deep_merge(base, {"--db": None, "db": {"port": 2}}) == {"db": {"port": 2}}
    assert deep_merge(base, {"db": {"port": 2}, "--db": None}) == {"db": {"port": 2}}


def test_knockouts_never_reach_the_result():
    layers = _chain({"a": {"--gone": 1, "kept": {"--also": 2, "x": 1}}}, None, {"--missing": 1})
    assert merge_layers(layers, DEEP) == {"a": {"kept": {"x": 1}}}
    assert strip_knockouts({"--": 1}) == {"--": 1}  # a bare `--` names no key


def test_a_later_layer_can_set_a_knocked_out_key_again():
    layers = _chain({"a": 1}, {"--a": None}, {"a": 3})
    assert merge_layers(layers, DEEP) == {"a": 3}


# -- shallow ---------------------------------------------------------------------------------
def test_shallow_replaces_nested_mappings_whole():
    layers = _chain({"db": {"host": "h", "port": 1}, "a": 1}, {"db": {"port": 2}})
    assert merge_layers(layers, SHALLOW) == {"db": {"port": 2}, "a": 1}


def test_deep_merges_what_shallow_replaces():
    layers = _chain({"db": {"host": "h", "port": 1}}, {"db": {"port": 2}})
    assert merge_layers(layers, DEEP) == {"db": {"host": "h", "port": 2}}


def test_shallow_knockout_at_the_top_level():
    assert shallow_merge({"a": 1, "b": 2}, {"--a": None}) == {"b": 2}
    assert shallow_merge({}, {"a": {"--x": 1, "y": 2}}) == {"a": {"y": 2}}


# -- purity ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [DEEP, SHALLOW])
def test_inputs_are_never_mutated(mode):
    data = [
        {"db": {"host": "h", "opts": {"x": 1}}, "l": [1]},
        {"db": {"opts": {"y": 2}, "--host": None}, "--l": None},
        {"db": {"opts": {"x": 3}}},
        None,
    ]
    frozen = copy.deepcopy(data)
    layers = _chain(*data)
    result = merge_layers(layers, mode)
    lookup_sources(layers)
    with_lookup(result, lookup_sources(layers))
    assert data == frozen
    # Layers come from a shared parse cache; the result is new where it differs from them
    # (unchanged subtrees are shared, so callers treat it as read only, as they do layers).
    assert all(result is not layer for layer in data)
    assert merge_layers(layers, mode) == result


# -- show_lookup -----------------------------------------------------------------------------
def test_lookup_sources_names_the_most_specific_layer_per_top_level_key():
    layers = _chain({"a": 1, "b": 1, "c": {"x": 1}}, {"b": 2}, {"c": {"y": 2}})
    assert lookup_sources(layers) == {"a": "/", "b": "/", "c": NODE}


def test_lookup_of_a_deep_merged_mapping_reports_the_last_contributor():
    layers = _chain({"db": {"host": "h"}}, None, {"db": {"port": 2}}, None)
    result = merge_layers(layers, DEEP)
    assert with_lookup(result, lookup_sources(layers)) == {"db": [{"host": "h", "port": 2}, NODE]}


def test_lookup_follows_knockouts():
    layers = _chain({"a": 1, "b": 1}, None, {"--a": None}, {"--b": None, "b": 4})
    assert lookup_sources(layers) == {"b": NODE}
    layers = _chain({"a": 1}, None, {"--a": None})
    assert lookup_sources(layers) == {}


def test_with_lookup_pairs_every_key_with_its_scope():
    assert with_lookup({"a": 1, "b": [2]}, {"a": "/", "b": NODE}) == {
        "a": [1, "/"],
        "b": [[2], NODE],
    }


# -- merging onto a kept prefix (configdb.scopes keeps each parent scope's document) ----------
# Also keys that are no strings, and one holding a line that starts with `--` (not a knockout).
_KEYS = st.sampled_from(["a", "b", "c", "--a", "--b", "--c", "--", "b\n--a", "---a", "-a"]) | (
    st.integers(0, 1)
)
_VALUES = st.recursive(
    st.none() | st.integers(0, 3) | st.sampled_from(["x", "y"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)
_LAYER = st.none() | st.dictionaries(_KEYS, _VALUES, max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_LAYER, min_size=1, max_size=6), st.integers(0, 6), st.sampled_from([DEEP, SHALLOW])
)
def test_merging_onto_a_prefix_is_merging_every_layer(data, split, mode):
    layers = [Layer("/", "values", layer, f"f{index}") for index, layer in enumerate(data)]
    frozen = copy.deepcopy(data)
    prefix = merge_layers(layers[:split], mode)
    assert merge_onto(prefix, layers[split:], mode) == merge_layers(layers, mode)
    assert data == frozen  # neither the layers nor the kept prefix were edited
    assert prefix == merge_layers(layers[:split], mode)


def _reference_strip(value):
    if not isinstance(value, Mapping):
        return value
    return {k: _reference_strip(v) for k, v in value.items() if not _reference_knocked(k)}


def _reference_knocked(key) -> bool:
    return isinstance(key, str) and key.startswith("--") and len(key) > 2


def _reference_merge(base, layer):
    """Deep merge as docs/design.md ("Effective values") says, written plainly (copies
    everything)."""
    if not isinstance(base, Mapping) or not isinstance(layer, Mapping):
        return _reference_strip(layer)
    gone = {key[2:] for key in layer if _reference_knocked(key)}
    result = {k: _reference_strip(v) for k, v in base.items() if k not in gone}
    for key, value in layer.items():
        if _reference_knocked(key):
            continue
        both = isinstance(result.get(key), Mapping) and isinstance(value, Mapping)
        result[key] = _reference_merge(result[key], value) if both else _reference_strip(value)
    return result


@settings(max_examples=300, deadline=None)
@given(st.lists(_LAYER, min_size=1, max_size=5), st.booleans())
def test_deep_merge_is_the_plain_reference(data, proxies):
    # Any Mapping merges like a dict (read-only views, as a cache might hand out).
    wrap = (lambda d: MappingProxyType(d)) if proxies else (lambda d: d)
    layers = [Layer("/", "values", wrap(layer) if layer else layer, "f") for layer in data]
    expected: dict = {}
    for layer in data:
        if layer:
            expected = _reference_merge(expected, layer)
    assert _ordered(merge_layers(layers)) == _ordered(expected)  # the keys' order too


def _ordered(value):
    if isinstance(value, Mapping):
        return [(key, _ordered(child)) for key, child in value.items()]
    return [_ordered(item) for item in value] if isinstance(value, list) else value
