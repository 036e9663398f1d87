"""The key splice's scanner: over Fuel's real astute.yaml files, a spliced key reads back as the
full path's edit of the whole document and every other line keeps its bytes; on text it cannot
be sure of, it answers None (the caller then takes the full path)."""

from __future__ import annotations

import json
import re

import pytest
from fuel_data import ASTUTE
from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore import keypaths, yamlio, yamlsplice
from gitstore.errors import Conflict

FILES = {path.stem: path.read_bytes() for path in sorted(ASTUTE.glob("*.yaml"))}
PARSED = {name: yamlio.load(data) for name, data in FILES.items()}
INTEGER = re.compile(r"-?[0-9]+")


def mapping_paths(document: dict, prefix: tuple = ()) -> list[tuple]:
    """Every key path that runs through mappings only."""
    found = []
    for key, value in document.items():
        found.append((*prefix, key))
        if isinstance(value, dict):
            found.extend(mapping_paths(value, (*prefix, key)))
    return found


PATHS = {name: mapping_paths(document) for name, document in PARSED.items()}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["yes", "on", "0777", "1.0", "2024-01-01", "x: y", "- a", "#c", "'q", ""])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
new_keys = st.text(min_size=0, max_size=12).filter(lambda key: not INTEGER.fullmatch(key))


def exact(value) -> str:
    """JSON keeps key order and tells 1, 1.0, true and "1" apart."""
    return json.dumps(value, sort_keys=False)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(FILES)),
    pick=st.integers(min_value=0),
    extra=st.lists(new_keys, max_size=2),
    value=values,
)
def test_a_spliced_key_reads_back_as_the_full_edit_and_keeps_every_other_line(
    name, pick, extra, value
):
    data, document = FILES[name], PARSED[name]
    existing = PATHS[name][pick % len(PATHS[name])]
    keys = [*map(str, existing), *extra]
    spot = yamlsplice.locate(data, keys)
    try:
        expected = keypaths.apply_batch(document, "set", [[*keys, value]])
    except Conflict:
        assert spot is None  # through a scalar: the full path names the conflict
        return
    if spot is None:
        # On these files only a repeated key (Fuel's own network_scheme.roles has two) or a
        # key no plain or single-quoted line can hold stops it.
        assert keys[:2] == ["network_scheme", "roles"] or not all(k.isprintable() for k in keys)
        return
    assert spot.start == 0 or data[spot.start - 1 : spot.start] == b"\n"
    assert data[spot.end - 1 : spot.end] == b"\n"
    spliced = yamlsplice.replace(data, spot, keys, value)
    assert exact(yamlio.load(spliced)) == exact(expected)
    assert spliced.startswith(data[: spot.start])
    assert spliced.endswith(data[spot.end :])
    if spot.exists:
        assert exact(yamlsplice.stored_value(data, spot, keys)) == exact(
            keypaths.get_path(document, keys)
        )


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(FILES)), pick=st.integers(min_value=0))
def test_a_removed_entry_reads_back_as_the_full_delete_and_keeps_every_other_line(name, pick):
    data, document = FILES[name], PARSED[name]
    keys = list(map(str, PATHS[name][pick % len(PATHS[name])]))
    spot = yamlsplice.locate(data, keys)
    if spot is None:
        assert keys[:2] == ["network_scheme", "roles"]  # Fuel's own repeated keys
        return
    assert spot.exists
    if spot.alone:
        return  # the mapping would read as null: the caller takes the full path
    removed = yamlsplice.remove(data, spot)
    expected = keypaths.apply_batch(document, "delete", [keys])
    assert exact(yamlio.load(removed)) == exact(expected)
    assert removed == data[: spot.start] + data[spot.end :]


def test_the_last_entry_of_a_mapping_is_alone():
    data = b"a:\n  b: 1\nc: 2\n"
    assert yamlsplice.locate(data, ["a", "b"]).alone
    assert not yamlsplice.locate(data, ["a"]).alone


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_fuel_file_is_text_the_scanner_reads(name):
    assert yamlsplice.safe(FILES[name])
    located = [p for p in PATHS[name] if yamlsplice.locate(FILES[name], list(map(str, p)))]
    assert len(located) >= 0.9 * len(PATHS[name])


def test_a_new_key_goes_last_in_its_mapping_and_new_mappings_are_made():
    data = b"a:\n  b: 1\n\n  c: 2\nd: 3\n\n"
    spot = yamlsplice.locate(data, ["a", "x", "y"])
    assert not spot.exists and spot.found == 1
    spliced = yamlsplice.replace(data, spot, ["a", "x", "y"], [1])
    assert spliced == b"a:\n  b: 1\n\n  c: 2\n  x:\n    y:\n    - 1\nd: 3\n\n"


def test_an_entry_with_an_indentless_list_is_replaced_whole():
    data = b"a:\n- 1\n- 2\nb: 3\n"
    spot = yamlsplice.locate(data, ["a"])
    assert yamlsplice.replace(data, spot, ["a"], "x") == b"a: x\nb: 3\n"
    assert yamlsplice.locate(data, ["a", "k"]) is None  # a list, not a mapping


@pytest.mark.parametrize(
    "text, keys",
    [
        # a quoted scalar may run on below any indentation: PyYAML reads `a` as 'x b: c'
        (b'a: "x\nb: c"\nd: 1\n', ["b"]),
        (b"a: 'x\nb: c'\nd: 1\n", ["b"]),
        (b"z:\n  a: 'x\n  b: c'\n", ["z", "b"]),
        (b"- 'x\nb: c'\n", ["b"]),
        # a flow collection may too
        (b"a: {x: 1,\nb: 2}\n", ["b"]),
        (b"a: [1,\nb: 2]\n", ["b"]),
        # anchors, aliases, tags, escapes, markers, tabs
        (b"a: &x\n  k: 1\nb: *x\n", ["a", "k"]),
        (b"a: !!str 1\nb: 2\n", ["b"]),
        (b'a: "\\u00e9"\nb: 2\n', ["b"]),
        (b"---\na: 1\n", ["a"]),
        (b"a:\n\tb: 1\n", ["a", "b"]),
        (b"a: 1\r\nb: 2\r\n", ["b"]),
        ("a: x\u2028b: 1\n".encode(), ["b"]),  # a line break to YAML
        # a block scalar that keeps its trailing blank lines
        (b"a: |+\n  text\n\nb: 1\n", ["a"]),
        # not finite: the full path refuses the document
        (b"a: .nan\nb: 1\n", ["b"]),
        (b"a: 1.0e+999\nb: 1\n", ["b"]),
        (b"a: " + b"1" * 310 + b".0\nb: 1\n", ["b"]),
        # nesting that could reach validation.MAX_DEPTH
        (b"a:\n" + b"".join(b" " * (2 * i) + b"k:\n" for i in range(1, 16)) + b"b: 1\n", ["b"]),
        (b"a:\n" + b"- " * 16 + b"x\nb: 1\n", ["b"]),
        # no newline at the end
        (b"a: 1", ["a"]),
    ],
)
def test_text_the_scanner_cannot_be_sure_of_is_refused(text, keys):
    assert not yamlsplice.safe(text)


@pytest.mark.parametrize(
    "text, keys",
    [
        (b"a: 1\na: 2\n", ["a"]),  # a repeated key: YAML keeps the last
        (b"a: 1\n'a': 2\n", ["a"]),
        (b"1: x\n", ["1"]),  # not a string key
        (b"yes: x\n", ["yes"]),
        (b"a: 1\n", ["a\x00"]),  # no line holds it plainly or single-quoted
        (b'"a": 1\n', ["a"]),  # double-quoted keys are left to the full path
        (b"? a\n: 1\n", ["a"]),
        (b"a: 1\n", ["a", "b"]),  # through a scalar: the full path names the conflict
        (b"a:\nb: 1\n", ["a", "b"]),  # through null
        (b"a:\n  - k: 1\n", ["a", "k"]),  # through a list
        (b"  a: 1\n", ["a"]),  # indented at the top
        (b"- a: 1\n", ["b"]),  # a list, not a mapping
    ],
)
def test_keys_the_scanner_cannot_be_sure_of_are_not_located(text, keys):
    assert yamlsplice.locate(text, keys) is None


@pytest.mark.parametrize(
    "text, keys",
    [
        (b"a: 1\na: 2\nb: 3\n", ["b"]),  # another key repeated: its lines stay, read the same
        (b"a  : 1\nb: 2\n", ["a"]),  # spaces before the colon
        (b"x:\n a: 1\n", [" a"]),  # a key with a leading space is not the deeper `a`
        (b"ab: 1\nb: 2\n", ["a"]),  # a key that starts another is not it
        (b"'it''s': 1\n", ["it's"]),
        (b"it's: 1\n", ["it's"]),
        (b"x:\n  'y': 1\n  z: 2\n", ["x", "y"]),
        (b"x:\n  y:\n    k: 1\n  z: 2\n", ["x", "y", "k"]),
        (b"x:\n  y:\n    k: 1\n  z: 2\n", ["x", "y", "new"]),
        (b"x:\n  y:\n    k: 1\n\n# about z\n  z: 2\n", ["x", "y", "new"]),
        (b"x:\n- 1\ny: 2\n", ["x"]),
        ("ä: 1\nb: 2\n".encode(), ["ä"]),
        (b"x:\n  y: 1\nz: 2\n", ["x", "k" * 200]),  # written as `? k...` by PyYAML
    ],
)
def test_a_located_key_splices_to_the_full_edit(text, keys):
    spot = yamlsplice.locate(text, keys)
    assert spot is not None
    spliced = yamlsplice.replace(text, spot, keys, {"v": [1, "two"]})
    expected = keypaths.apply_batch(yamlio.load(text), "set", [[*keys, {"v": [1, "two"]}]])
    assert exact(yamlio.load(spliced)) == exact(expected)


def test_a_comment_in_the_replaced_entry_is_not_lost_silently():
    data = b"a:\n  # why\n  b: 1\nc: 2\n"
    spot = yamlsplice.locate(data, ["a"])
    with pytest.raises(ValueError):
        yamlsplice.stored_value(data, spot, ["a"])
    # a comment elsewhere stays where it is
    data = b"# facts\na:\n  b: 1\n# trailing\nc: 2\n"
    spot = yamlsplice.locate(data, ["a", "b"])
    assert yamlsplice.stored_value(data, spot, ["a", "b"]) == 1
    assert (
        yamlsplice.replace(data, spot, ["a", "b"], 5) == b"# facts\na:\n  b: 5\n# trailing\nc: 2\n"
    )


def test_the_key_count_bound_is_at_least_the_keys_and_items():
    for name, data in FILES.items():
        counted, stack = 0, [PARSED[name]]
        while stack:
            item = stack.pop()
            if isinstance(item, dict | list):
                counted += len(item)
                stack.extend(item.values() if isinstance(item, dict) else item)
        assert yamlsplice.key_count_bound(data) >= counted


def test_values_of_secret_named_keys_are_read_by_lines_or_refused():
    data = b"a:\n  db_Password: ENC[x]\n  x_token: ~\n  b: 'my password: no'\n"
    values = yamlsplice.values_of_keys_ending(data, [b"password", b"token"])
    assert sorted(values) == [b"ENC[x]", b"no'", b"~"]  # text that looks like a key counts too
    assert yamlsplice.values_of_keys_ending(b"my_secret:\n  k: v\n", [b"secret"]) is None
    assert yamlsplice.values_of_keys_ending(b"my_secret:\n- v\n", [b"secret"]) is None
    assert yamlsplice.values_of_keys_ending(b"my_secret:\nb: 1\n", [b"secret"]) == [b""]
