"""Masking entry by entry (`mask._mask_entries`, kept by the entries' identity) gives exactly the
whole-document walk, for shared entries, under any key and rules, called again and again."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitstore.secrets import mask
from gitstore.secrets.rules import Rules

FUEL = Path(__file__).resolve().parents[1] / "data" / "fuel" / "astute"
RULES = [
    Rules(),
    Rules(patterns=(("nodes", "*", "name"), ("network_scheme",))),
    Rules(defaults=False),
    Rules(everything=True),
]


def walked(document, rules):
    """The reference: one walk of the whole document, as before entries were kept."""
    return mask._mask_walk(document, rules, (), False)


@pytest.mark.parametrize("rules", RULES, ids=["defaults", "patterns", "none", "everything"])
@pytest.mark.parametrize("source", sorted(FUEL.glob("*.yaml")), ids=lambda p: p.stem)
def test_entry_by_entry_is_the_whole_walk(source, rules):
    document = yaml.safe_load(source.read_text())
    expected = walked(document, rules)
    for _ in range(2):  # the second time from the kept entries
        assert mask.mask_paths(document, rules) == expected
    shared = {"renamed_password": document["nodes"], **document}  # one object, two keys
    assert mask.mask_paths(shared, rules) == walked(shared, rules)


def test_an_unmasked_document_is_returned_itself():
    document = {"a": {"b": [1, 2]}, "c": "d"}
    assert mask.mask_paths(document, Rules())[0] is document
    masked, paths = mask.mask_paths({"a": {"db_password": "x"}}, Rules())
    assert masked == {"a": {"db_password": mask.MASK}} and paths == [("a", "db_password")]
