"""How far a change of inherited values reaches through a scope's own layers (`merge.reach`),
checked against full merges of random documents: knock-outs, shallow merge, shadows in values
and in overrides, nested keys, keys that are no strings."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore.merge.diff import differences
from gitstore.merge.effective import DEEP, MODES, SHALLOW, Layer, merge_layers, merge_onto
from gitstore.merge.reach import (
    KeyIndex,
    restricted,
    restricted_layers,
    touches,
    touches_indexed,
)

#: Few names, so that random layers often hold the keys a random change touches.
KEYS = st.sampled_from(["a", "b", "c", "a", "b", "--a", "--b", "--", 1, True])
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["x", "1", ""]),
    st.lists(st.integers(0, 2), max_size=2), st.builds(dict),
)  # fmt: skip
DOCUMENTS = st.recursive(
    LEAVES, lambda inner: st.dictionaries(KEYS, inner, max_size=4), max_leaves=20
).map(lambda value: value if isinstance(value, dict) else {"a": value})
LAYER_DATA = st.one_of(st.none(), DOCUMENTS)


def _layers(scope: str, values, overrides) -> list[Layer]:
    return [Layer(scope, "values", values), Layer(scope, "overrides", overrides)]


@st.composite
def edited(draw, document):
    """`document` with a few keys set or deleted, at random depths: mostly the same keys,
    so the changes are often nested and the own layers often hold keys on their paths."""
    edited = copy.deepcopy(document or {})
    for _ in range(draw(st.integers(1, 3))):
        node = edited
        while deeper := [key for key, child in node.items() if isinstance(child, dict)]:
            if not draw(st.integers(0, 3)):
                break
            node = node[draw(st.sampled_from(deeper))]
        key = draw(KEYS)
        if draw(st.booleans()) and key in node:
            del node[key]
        else:
            node[key] = draw(st.one_of(LEAVES, DOCUMENTS))
    return edited


def _shown(found) -> str:
    """The differences as text that tells `1`, `1.0` and `True` apart and keeps every order."""
    return repr(found)


@settings(max_examples=800, deadline=None)
@given(data=st.data(), mode=st.sampled_from(MODES), old_global=st.tuples(DOCUMENTS, LAYER_DATA))
def test_a_scope_changes_as_its_parent_did_unless_its_own_layers_touch_it(data, mode, old_global):
    new_global = (data.draw(edited(old_global[0])), data.draw(st.one_of(
        st.just(old_global[1]), LAYER_DATA, edited(old_global[1]))))  # fmt: skip
    near = st.one_of(st.none(), DOCUMENTS, edited(old_global[0]), edited(new_global[0]))
    own = (data.draw(near), data.draw(near))
    parent_old = merge_layers(_layers("/", *old_global), mode)
    parent_new = merge_layers(_layers("/", *new_global), mode)
    layers = _layers("/nodes/1/", *own)
    full = differences(merge_onto(parent_old, layers, mode), merge_onto(parent_new, layers, mode))
    inherited = differences(parent_old, parent_new)
    paths = [path for _, path, _, _ in inherited]
    indexes = [KeyIndex(layer.data) for layer in layers]
    assert touches_indexed(indexes, paths, mode) == touches(layers, paths, mode)
    if not touches(layers, paths, mode):
        assert _shown(full) == _shown(inherited)
        return
    keys = {path[0] for path in paths}
    cut = restricted_layers(layers, keys)
    fast = differences(
        merge_onto(restricted(parent_old, keys), cut, mode),
        merge_onto(restricted(parent_new, keys), cut, mode),
    )
    assert _shown(fast) == _shown(full)


def test_a_nested_key_beside_the_changed_one_does_not_touch_it():
    own = _layers("/nodes/1/", {"syslog": {"port": 514}}, None)
    assert not touches(own, [("syslog", "level")], DEEP)
    assert touches(own, [("syslog", "level")], SHALLOW)  # syslog is replaced whole
    assert touches(own, [("syslog",)], DEEP)  # the whole mapping changed: it merges into it


def test_a_knockout_or_a_scalar_above_the_changed_key_touches_it():
    assert touches(_layers("/n/", {"--syslog": None}, None), [("syslog", "level")], DEEP)
    assert touches(_layers("/n/", None, {"syslog": {"--level": 1}}), [("syslog", "level")], DEEP)
    assert touches(_layers("/n/", {"syslog": "off"}, None), [("syslog", "level")], DEEP)
    assert not touches(_layers("/n/", {"syslog": {"--port": 1}}, None), [("syslog", "level")], DEEP)


def test_no_layer_touches_nothing():
    assert not touches(_layers("/n/", None, {}), [("a",)], DEEP)
    assert not touches(_layers("/n/", {"a": 1}, None), [], DEEP)


@settings(max_examples=300, deadline=None)
@given(document=DOCUMENTS, path=st.lists(KEYS, min_size=1, max_size=4).map(tuple))
def test_a_key_index_answers_as_the_document_does(document, path):
    layer = [Layer("/n/", "values", document)]
    assert touches_indexed([KeyIndex(document)], [path], DEEP) == touches(layer, [path], DEEP)


def test_a_key_index_walks_knockouts_leaves_and_nested_keys():
    index = KeyIndex({"syslog": {"port": 514, "--level": None}, "debug": True, "x": {}})
    assert index.holds(("syslog", "port")) and index.holds(("syslog", "level"))
    assert index.holds(("debug", "deeper")) and index.holds(("x",))
    assert not index.holds(("syslog", "facility")) and not index.holds(("x", "y"))
    assert not KeyIndex(None).holds(("a",))
