"""Key paths: dotted reads and the atomic set/delete batches of `.../keys/<op>`."""

from __future__ import annotations

import copy

import pytest

from gitstore import keypaths
from gitstore.errors import Conflict, InvalidInput

DOC = {"a": {"b": {"c": 1}}, "list": [{"x": 1}, 2], 5: "int key", "s": "scalar"}


# -- dotted paths ----------------------------------------------------------------------------
def test_split_and_join_dotted():
    assert keypaths.split_dotted("a.b.0") == ["a", "b", "0"]
    assert keypaths.dotted(["a", 0, "b"]) == "a.0.b"


@pytest.mark.parametrize("key", ["", ".", "a..b", "a.", ".a"])
def test_malformed_dotted_paths_are_invalid(key):
    with pytest.raises(InvalidInput, match="dotted path"):
        keypaths.split_dotted(key)


# -- get -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, value",
    [
        (["a", "b", "c"], 1),
        (["a", "b"], {"c": 1}),
        (["list", "0", "x"], 1),
        (["list", 1], 2),
        (["5"], "int key"),
        ([5], "int key"),
        ([], DOC),
    ],
)
def test_get_path(path, value):
    assert keypaths.get_path(DOC, path) == value


def test_an_integer_segment_finds_a_string_key():
    assert keypaths.get_path({"a": {"0": "zero"}}, ["a", 0]) == "zero"


@pytest.mark.parametrize(
    "path, named",
    [
        (["a", "x"], "a.x"),
        (["list", "2"], "list.2"),
        (["list", "-1"], "list.-1"),
        (["list", "first"], "list.first"),
        (["s", "deeper"], "s.deeper"),
        (["list", "²"], "list.²"),  # a unicode digit is not an index, and no crash
        (["list", "--1"], "list.--1"),
    ],
)
def test_a_missing_key_or_index_is_a_conflict_naming_the_path(path, named):
    with pytest.raises(Conflict) as caught:
        keypaths.get_path(DOC, path)
    assert repr(named) in str(caught.value)


# -- batches: checking -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        {"a": 1},
        "a",
        [["a", 1], "b"],
        [("a", 1)],
        None,
    ],
)
def test_a_body_that_is_not_a_list_of_lists_is_invalid(body):
    with pytest.raises(InvalidInput, match="list of key paths"):
        keypaths.check_batch(body, "set")


def test_paths_too_short_for_their_op_are_invalid():
    with pytest.raises(InvalidInput, match="too short"):
        keypaths.check_batch([["only-a-key"]], "set")
    with pytest.raises(InvalidInput, match="too short"):
        keypaths.check_batch([[]], "delete")
    assert keypaths.check_batch([["a"]], "delete") == [["a"]]


@pytest.mark.parametrize(
    "body, op",
    [
        ([[True, 1]], "set"),
        ([[1.5, 1]], "set"),
        ([[None, "x", 1]], "set"),
        ([["a", None]], "delete"),
        ([["a", {"x": 1}]], "delete"),
        ([[False]], "delete"),
    ],
)
def test_segments_must_be_strings_or_integers(body, op):
    with pytest.raises(InvalidInput, match="segments must be strings or integers"):
        keypaths.check_batch(body, op)


def test_a_set_value_may_be_anything():
    body = [["a", {"x": [1, None]}], ["b", None], ["c", True]]
    assert keypaths.check_batch(body, "set") == body


# -- batches: applying -----------------------------------------------------------------------
def test_set_creates_missing_mappings():
    assert keypaths.apply_batch({}, "set", [["a", "b", "c", 1]]) == {"a": {"b": {"c": 1}}}


def test_set_replaces_values_and_indexes_lists():
    doc = keypaths.apply_batch(
        DOC, "set", [["a", "b", "c", 2], ["list", "0", "x", 3], ["list", 1, "two"], [5, "five"]]
    )
    assert doc["a"]["b"]["c"] == 2
    assert doc["list"] == [{"x": 3}, "two"]
    assert doc[5] == "five" and "5" not in doc


@pytest.mark.parametrize(
    "path, named",
    [
        (["s", "x", 1], "'s'"),  # through a scalar
        (["list", "5", "x", 1], "list.5"),  # a list index that does not exist
        (["list", "2", 1], "list.2"),  # no append
        (["list", "name", 1], "list.name"),  # a list has no keys
    ],
)
def test_set_refuses_to_walk_through_scalars_or_missing_indexes(path, named):
    with pytest.raises(Conflict) as caught:
        keypaths.apply_batch(DOC, "set", [path])
    assert named in str(caught.value)


def test_delete_removes_keys_and_list_items():
    doc = keypaths.apply_batch(DOC, "delete", [["a", "b", "c"], ["list", "0"], ["5"]])
    assert doc["a"] == {"b": {}}
    assert doc["list"] == [2]
    assert 5 not in doc


@pytest.mark.parametrize(
    "path, named",
    [
        (["a", "zz"], "a.zz"),
        (["nope", "x"], "nope"),
        (["list", 9], "list.9"),
        (["s", "x"], "s.x"),
    ],
)
def test_delete_of_what_does_not_exist_is_a_conflict(path, named):
    with pytest.raises(Conflict) as caught:
        keypaths.apply_batch(DOC, "delete", [path])
    assert named in str(caught.value)


def test_a_batch_is_all_or_nothing_and_never_touches_its_input():
    frozen = copy.deepcopy(DOC)
    with pytest.raises(Conflict, match="key .s. is not a mapping"):
        keypaths.apply_batch(DOC, "set", [["a", "b", "c", 99], ["s", "x", "y", 1]])
    assert frozen == DOC
    updated = keypaths.apply_batch(DOC, "set", [["a", "b", "c", 99]])
    assert frozen == DOC and updated["a"]["b"]["c"] == 99


def test_later_paths_of_a_batch_see_earlier_ones():
    doc = keypaths.apply_batch({}, "set", [["a", {"b": 1}], ["a", "c", 2]])
    assert doc == {"a": {"b": 1, "c": 2}}
