"""The pure data-level diff: dotted key paths, whole values for added/removed, strict types."""

from __future__ import annotations

from gitstore.merge.diff import changed_keys, diff_documents, leaf_paths, related, same_value


def test_equal_documents_have_no_diff():
    assert diff_documents({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2]}}) == {}
    assert diff_documents(None, {}) == {}


def test_nested_keys_are_reported_as_dotted_paths():
    old = {"a": {"b": 1, "c": {"d": 2}}, "gone": {"x": 1}, "list": [1, 2]}
    new = {"a": {"b": 2, "c": {"d": 2, "e": 3}}, "list": [1, 2, 3], "new": "v"}
    assert diff_documents(old, new) == {
        "added": {"a.c.e": 3, "new": "v"},
        "removed": {"gone": {"x": 1}},
        "changed": {"a.b": {"old": 1, "new": 2}, "list": {"old": [1, 2], "new": [1, 2, 3]}},
    }


def test_a_mapping_replaced_by_a_scalar_is_one_change():
    assert diff_documents({"a": {"b": 1}}, {"a": 5}) == {
        "added": {},
        "removed": {},
        "changed": {"a": {"old": {"b": 1}, "new": 5}},
    }


def test_types_are_strict():
    assert not same_value(1, True)
    assert not same_value(1, 1.0)
    assert same_value({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert diff_documents({"a": 1}, {"a": True})["changed"] == {"a": {"old": 1, "new": True}}


def test_changed_keys_lists_paths_per_section():
    assert changed_keys({"a": 1, "b": {"c": 1}}, {"b": {"c": 2}, "d": 1}) == {
        "keys_added": ["d"],
        "keys_removed": ["a"],
        "keys_changed": ["b.c"],
    }


def test_leaf_paths_stop_at_lists_and_empty_mappings():
    doc = {"a": {"b": 1, "c": {}}, "d": [{"e": 1}]}
    assert list(leaf_paths(doc)) == [("a", "b"), ("a", "c"), ("d",)]


def test_related_paths():
    assert related("a", "a.b") and related("a.b", "a") and related("a.b", "a.b")
    assert not related("a", "ab") and not related("a.b", "a.c")
