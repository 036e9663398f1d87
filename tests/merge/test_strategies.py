"""Per-key strategies fold values as Puppet's lookup does (the deep_merge gem's quirks kept).

The expected values are what real Puppet 7 answered for the same data (the end-to-end proof is
tests/hiera/test_hiera_adoption.py); these pin the rules one by one.
"""

from __future__ import annotations

import pytest

from gitstore.errors import InvalidInput
from gitstore.merge import strategies
from gitstore.merge.effective import DEEP, SHALLOW, Layer, merge_layers
from gitstore.merge.strategies import Strategy, fold


def _layers(*datas):
    return [Layer("/", "values", data) for data in datas]


def test_no_lookup_options_keeps_the_mode_string():
    assert strategies.parse(None, DEEP) == DEEP
    assert strategies.parse({}, SHALLOW) == SHALLOW


@pytest.mark.parametrize(
    "options",
    [
        {"k": {"merge": "sideways"}},
        {"k": {"merge": {"strategy": "hash", "knockout_prefix": "--"}}},
        {"^(": {"merge": "first"}},
        {"k": {"merge": {"strategy": "deep", "knockout_prefix": ""}}},
    ],
)
def test_bad_lookup_options_are_refused_naming_the_key(options):
    with pytest.raises(InvalidInput, match="lookup_options"):
        strategies.parse(options, DEEP)


def test_unique_flattens_and_keeps_the_most_specific_first():
    assert fold([["b", ["c"]], ["a", "b"]], Strategy("unique")) == ["b", "c", "a"]


def test_hash_merges_top_level_keys_most_specific_winning():
    assert fold(
        [{"ops": {"uid": 1}}, {"ops": {"uid": 0, "x": 1}, "root": {}}], Strategy("hash")
    ) == {
        "ops": {"uid": 1},
        "root": {},
    }


def test_deep_knocks_out_array_items_and_clears_with_the_bare_prefix():
    strategy = Strategy("deep", knockout_prefix="--")
    assert fold([["--b", "x"], ["a", "b"]], strategy) == ["a", "x"]
    assert fold([["--", "only"], ["a", "b"]], strategy) == ["only"]
    assert fold([{"shop": "--"}, {"shop": {"port": 1}}], strategy) == {"shop": ""}


def test_deep_sorts_and_merges_hash_arrays_by_index():
    assert fold([["c"], ["b", "a"]], Strategy("deep", sort_merged_arrays=True)) == ["a", "b", "c"]
    pools = fold(
        [[{"size": 5}], [{"name": "a", "size": 1}, {"name": "b"}]],
        Strategy("deep", merge_hash_arrays=True),
    )
    assert pools == [{"name": "a", "size": 5}, {"name": "b"}]


def test_a_single_value_is_answered_as_it_is():
    assert fold([["--x", "x"]], Strategy("deep", knockout_prefix="--")) == ["--x", "x"]


def test_merge_layers_uses_strategies_only_for_the_keys_they_name():
    mode = strategies.parse({"^p::.*_rules$": {"merge": "unique"}}, SHALLOW)
    layers = _layers({"p::ssh_rules": [22], "h": {"a": 1}}, {"p::ssh_rules": [23], "h": {"b": 2}})
    assert merge_layers(layers, mode) == {"p::ssh_rules": [23, 22], "h": {"b": 2}}
    inputs = [{"x": [1]}], [{"x": [2]}]
    assert fold([inputs[1][0]["x"], inputs[0][0]["x"]], Strategy("unique")) == [2, 1]
    assert inputs == ([{"x": [1]}], [{"x": [2]}])  # never mutated
