"""`FactsReader`: each distinct top-level entry parsed once, the result always PyYAML's."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from gitstore.errors import InvalidInput
from gitstore.factfiles import FactsReader
from gitstore.yamlio import RepeatedKey, load_facts

DATA = Path(__file__).resolve().parent / "data"
FUEL = sorted((DATA / "fuel" / "astute").glob("*.yaml"))
FIXTURE = DATA / "facts" / "repeated-roles.yaml"


@pytest.mark.parametrize("path", [*FUEL, FIXTURE], ids=lambda p: p.name)
def test_reads_what_pyyaml_reads_and_names_every_repeated_key(path):
    data = path.read_bytes()
    read = FactsReader().read(data, str(path))
    assert read.document == yaml.safe_load(data)
    assert read.repeats == load_facts(data, path=str(path))[1]


def test_the_same_entry_text_is_parsed_once_and_shared():
    reader = FactsReader()
    first = reader.read(b"nodes:\n- a\n- b\nuid: '1'\n", "1")
    second = reader.read(b"uid: '2'\nnodes:\n- a\n- b\n", "2")
    assert first.document["nodes"] is second.document["nodes"]
    assert second.document == {"uid": "2", "nodes": ["a", "b"]}


def test_a_repeated_top_level_key_keeps_its_place_and_last_value():
    data = b"a: 1\nb:\n  c: 1\n  c: 2\na: 3\n"
    read = FactsReader().read(data, "f")
    assert list(read.document.items()) == [("a", 3), ("b", {"c": 2})]
    assert read.repeats == [RepeatedKey(("b", "c"), 3, 4), RepeatedKey(("a",), 1, 5)]


@pytest.mark.parametrize(
    "text",
    [
        "---\na: 1\n",
        "%YAML 1.1\n---\na: 1\n",
        "a: &x [1]\nb: *x\n",
        "# comment\na: 1\nb: 2\n",
        "a: 'x\n  y'\nb: 1\n",
        "? complex\n: 1\n",
        "a: 1\n...\n",
        "{a: 1, a: 2}\n",
        "",
    ],
)
def test_text_that_does_not_cut_cleanly_is_read_whole(text):
    read = FactsReader().read(text.encode(), "f")
    assert read.document == (yaml.safe_load(text) or {})


def test_random_edits_of_fuel_facts_read_as_pyyaml_reads_them():
    rng = random.Random(35)
    base = FUEL[1].read_text().splitlines(keepends=True)
    for _ in range(60):
        lines = list(base)
        for _ in range(3):
            index = rng.randrange(len(lines))
            choice = rng.random()
            if choice < 0.4:
                lines.insert(rng.randrange(len(lines)), lines[index])  # a repeated line
            elif choice < 0.7:
                del lines[index]
            else:
                lines[index] = lines[index].lstrip(" ")  # a line moved to column 0
        data = "".join(lines).encode()
        try:
            expected = yaml.safe_load(data)
        except yaml.YAMLError:
            with pytest.raises(InvalidInput):
                FactsReader().read(data, "f")
            continue
        if not isinstance(expected, dict):
            continue
        assert FactsReader().read(data, "f").document == expected


def test_bad_input_names_the_file():
    with pytest.raises(InvalidInput, match="n/astute.yaml is not UTF-8: byte 0xff at line 2"):
        FactsReader().read(b"a: 1\nb: \xff\n", "n/astute.yaml")
    with pytest.raises(InvalidInput, match="n/x.yaml: document must be a mapping, not list"):
        FactsReader().read(b"- 1\n", "n/x.yaml")


def test_a_key_repeated_in_a_list_item_is_named_by_its_index():
    data = b"transformations:\n- action: add-br\n  name: br-mgmt\n  name: br-ex\n"
    read = FactsReader().read(data, "f")
    assert read.document == yaml.safe_load(data)
    assert read.repeats == [RepeatedKey(("transformations", "0", "name"), 3, 4)]
    assert read.repeats[0].describe("f") == (
        "f: key transformations.0.name is repeated (lines 3 and 4); the value of line 4 is kept"
    )
