"""The one YAML module: parsing with named errors, and rewrites that keep people's files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore import yamlio
from gitstore.errors import InvalidInput

COMPUTE = Path(__file__).resolve().parent / "data" / "fuel" / "astute" / "compute.yaml"

COMMENTED = b"""\
# Deployment facts for the controller nodes.
b: 1    # why b is one
a:
  # nested comment
  x: "quoted"
  y: 'single'
list:
  - one
  - two
"""


# -- reading ---------------------------------------------------------------------------------
def test_load_parses_yaml_and_json():
    assert yamlio.load(b"a: 1\nb: [x, y]\n") == {"a": 1, "b": ["x", "y"]}
    assert yamlio.load('{"a": true}') == {"a": True}
    assert yamlio.load(b"") is None


def test_parse_errors_name_the_path_and_line():
    with pytest.raises(InvalidInput) as caught:
        yamlio.load(b"a: 1\nb: [1, 2\nc: 3\n", path="global/values/astute.yaml")
    assert str(caught.value).startswith("global/values/astute.yaml: line 3")
    assert caught.value.path == "global/values/astute.yaml"


def test_load_mapping_accepts_mappings_and_empty_files():
    assert yamlio.load_mapping(b"a: 1\n", path="f.yaml") == {"a": 1}
    assert yamlio.load_mapping(b"", path="f.yaml") == {}
    assert yamlio.load_mapping(b"# only a comment\n", path="f.yaml") == {}


@pytest.mark.parametrize(
    "data, kind", [(b"- 1\n", "list"), (b"just text\n", "str"), (b"42\n", "int")]
)
def test_a_document_that_is_not_a_mapping_is_invalid_input(data, kind):
    with pytest.raises(InvalidInput, match=f"nodes/1/values/r.yaml: .* not {kind}"):
        yamlio.load_mapping(data, path="nodes/1/values/r.yaml")


# -- writing new files -----------------------------------------------------------------------
def test_dump_keeps_key_order_in_block_style():
    text = yamlio.dump({"z": 1, "a": {"k": [1, 2]}, "ü": "ä"}).decode()
    assert text == "z: 1\na:\n  k:\n  - 1\n  - 2\nü: ä\n"


def test_rewrite_of_nothing_is_a_plain_dump():
    assert yamlio.rewrite(None, {"a": 1}) == b"a: 1\n"
    assert yamlio.rewrite(b"", {"a": 1}) == b"a: 1\n"


# -- rewriting -------------------------------------------------------------------------------
def test_an_unchanged_document_rewrites_byte_identical():
    same = {"list": ["one", "two"], "a": {"y": "single", "x": "quoted"}, "b": 1}
    assert yamlio.rewrite(COMMENTED, same) == COMMENTED
    flow = b"a: {x: 1, y: [1, 2]}\nb: 'q'\n"
    assert yamlio.rewrite(flow, {"a": {"x": 1, "y": [1, 2]}, "b": "q"}) == flow


def test_a_change_of_type_is_a_change():
    assert yamlio.load(yamlio.rewrite(b"a: 1\n", {"a": True})) == {"a": True}
    assert yamlio.load(yamlio.rewrite(b"a: 1\n", {"a": 1.0})) == {"a": 1.0}


def test_comments_key_order_and_quotes_survive_a_rewrite():
    new = {"b": 2, "a": {"x": "quoted", "y": "single"}, "list": ["one", "two"], "c": "new"}
    text = yamlio.rewrite(COMMENTED, new).decode()
    assert yamlio.load(text) == new
    for kept in (
        "# Deployment facts for the controller nodes.",
        "# why b is one",
        "# nested comment",
        'x: "quoted"',
        "y: 'single'",
    ):
        assert kept in text
    assert [line.split(":")[0] for line in text.splitlines() if line[:1].isalpha()] == [
        "b",
        "a",
        "list",
        "c",
    ]


def test_a_removed_key_goes_and_the_others_keep_their_comments():
    new = {"a": {"x": "quoted"}, "list": ["one", "two"]}
    text = yamlio.rewrite(COMMENTED, new).decode()
    assert yamlio.load(text) == new
    assert "# nested comment" in text and "y:" not in text


def test_a_file_without_comments_keeps_the_text_of_unchanged_entries():
    old = b'hand: {written: [1, 2]}\nquoted: "text"\nchanged: 1\ngone: 0\n'
    new = {
        "quoted": "text",
        "changed": {"now": "nested"},
        "hand": {"written": [1, 2]},
        "added": [1],
    }
    out = yamlio.rewrite(old, new)
    assert out == (
        b'hand: {written: [1, 2]}\nquoted: "text"\nchanged:\n  now: nested\nadded:\n- 1\n'
    )
    assert yamlio.load(out) == new


@pytest.mark.parametrize(
    "text, line",
    [
        (b"a: 1\nwhen: 2024-02-30\n", 2),  # a date that does not exist
        (b"- 2001-12-14t25:59:43Z\n", 1),  # nor does that hour
        (b"n: " + b"7" * 5000 + b"\n", 1),  # an integer past Python's conversion limit
        (b"- [1, " + b"1" * 4400 + b"]\n", 1),  # the same in a flow list
    ],
)
def test_scalars_python_cannot_build_are_invalid_input_naming_the_line(text, line):
    for read in (yamlio.load, yamlio.load_strict):
        with pytest.raises(InvalidInput, match=rf"^f\.yaml: line {line} YAML does not parse: "):
            read(text, path="f.yaml")


@pytest.mark.parametrize(
    "old",
    [
        b"base: &b {x: 1}\nuse: *b\nother: 1\n",  # anchors: a kept entry may name one
        b"---\na: 1\nb: 2\n",  # a document marker
        b"a: 1\nb: 2",  # no newline at the end
        b'a: "runs\nb: on"\nc: 1\n',  # a quoted scalar back at column 0
        b"? complex\n: key\na: 1\n",  # an explicit key
        b"  a: 1\n  b: 2\n",  # an indented mapping
        b"a: 1\n- not a mapping\n",  # does not parse
        b"- a list\n",  # not a mapping
    ],
)
def test_unusual_files_are_rewritten_correctly(old):
    new = {"a": 5, "b": "two", "use": {"x": 1}}
    assert yamlio.load(yamlio.rewrite(old, new)) == new


_keys = st.sampled_from(["a", "b", "c", "--d", "yes", "1", "key with space", "ü"])
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2), st.text(max_size=8)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=8,
)
_documents = st.dictionaries(_keys, _values, max_size=6)


def _exactly(document) -> str:
    """A form in which `1`, `1.0` and `True` differ (plain `==` says they are equal)."""
    return json.dumps(document, sort_keys=True)


@settings(max_examples=150, deadline=None)
@given(old=_documents, new=_documents, comment=st.booleans())
def test_any_rewrite_reads_back_as_the_new_document(old, new, comment):
    old_bytes = yamlio.dump(old)
    if comment:
        old_bytes = b"# a comment\n" + old_bytes
    assert _exactly(yamlio.load(yamlio.rewrite(old_bytes, new)) or {}) == _exactly(new)


def test_strings_that_yaml_1_1_reads_as_other_types_stay_strings_next_to_comments():
    new = {
        "b": "yes",
        "a": {"x": "on", "y": "single"},
        "list": ["0777", "1_000"],
        "no": "off",
        "when": "2024-01-01",
    }
    text = yamlio.rewrite(COMMENTED, new)
    assert _exactly(yamlio.load(text)) == _exactly(new)
    assert b"# why b is one" in text and b"# nested comment" in text


# -- hostile documents -----------------------------------------------------------------------
def test_an_alias_bomb_is_refused_at_once_naming_the_line():
    from hostile import alias_bomb

    with pytest.raises(InvalidInput) as caught:
        yamlio.load(alias_bomb(9), path="global/values/astute.yaml")
    assert caught.value.message.startswith("global/values/astute.yaml: line ")
    assert "YAML is refused: aliases expand it by more than 10000 nodes" in caught.value.message
    with pytest.raises(InvalidInput) as strict:
        yamlio.load_strict(alias_bomb(7), path="x.yaml")
    assert strict.value.errors[0]["file"] == "x.yaml" and strict.value.errors[0]["line"] == 5
    with pytest.raises(InvalidInput, match="is refused"):
        yamlio.load_all_first(alias_bomb(9) + "---\nb: 1\n")
    assert yamlio.key_lines(alias_bomb(9)) == {}


def test_a_recursive_alias_is_refused():
    with pytest.raises(InvalidInput, match="an alias refers to a node that contains it"):
        yamlio.load("a: &a [1, *a]\n", path="x.yaml")


def _nested(levels: int, *, flow: bool = False, leaf: str = "1") -> str:
    """A mapping `levels` deep whose innermost value is `leaf` (at depth `levels` + 1)."""
    if flow:
        return "{k: " * levels + leaf + "}" * levels + "\n"
    return "".join(f"{'  ' * depth}k:\n" for depth in range(levels - 1)) + (
        f"{'  ' * (levels - 1)}k: {leaf}\n"
    )


@pytest.mark.parametrize("flow", [False, True])
@pytest.mark.parametrize("reader", [yamlio.load, yamlio.load_strict])
def test_a_document_nests_as_deep_as_a_request_body_may(reader, flow):
    # The REST bound (limits.MAX_DEPTH): a leaf at depth 64 is stored, one at 65 is not.
    assert reader(_nested(63, flow=flow), path="x.yaml") is not None
    with pytest.raises(InvalidInput) as caught:
        reader(_nested(64, flow=flow), path="nodes/3/values/astute.yaml")
    assert caught.value.message.startswith("nodes/3/values/astute.yaml: line ")
    assert "nests deeper than 64 levels" in caught.value.message


@pytest.mark.parametrize("levels", [700, 990])
def test_a_very_deep_document_is_refused_not_a_recursion_error(levels):
    for flow in (False, True):
        for reader in (yamlio.load, yamlio.load_strict):
            with pytest.raises(InvalidInput, match="nests deeper than 64 levels"):
                reader(_nested(levels, flow=flow), path="x.yaml")


def test_depth_through_an_alias_counts_where_the_alias_is_written_out():
    shallow = _nested(40).replace("k:", "a: &deep\n  k:", 1)  # a 41-deep anchored value
    text = shallow + "b:\n" + "".join(f"{'  ' * (d + 1)}k:\n" for d in range(29))
    text += "  " * 30 + "k: *deep\n"  # written out 31 levels further down
    with pytest.raises(InvalidInput, match="nests deeper than 64 levels"):
        yamlio.load(text, path="x.yaml")
    with pytest.raises(InvalidInput, match="nests deeper than 64 levels"):
        yamlio.load_strict(text, path="x.yaml")


def test_shared_anchors_of_ordinary_documents_still_load():
    text = "d: &d {x: 1}\ne:\n  <<: *d\n  y: 2\nf: [*d, *d]\ng: &g [a, b]\nh: *g\n"
    assert yamlio.load(text) == {
        "d": {"x": 1},
        "e": {"x": 1, "y": 2},
        "f": [{"x": 1}, {"x": 1}],
        "g": ["a", "b"],
        "h": ["a", "b"],
    }
    assert yamlio.load("a: &a [" + ", ".join(["x"] * 5000) + "]\nb: *a\n")["b"][4999] == "x"


def test_strict_reading_of_plain_block_text_agrees_with_the_strict_loader():
    """`load_strict` reads plain block text with the line reader when it counts as many keys
    as key lines; repeated keys at any depth (in lists too) must still be refused."""
    rng = random.Random(40)
    base = yamlio.dump(yaml.safe_load(COMPUTE.read_text())).decode()
    base_lines = base.splitlines(keepends=True)
    for _ in range(80):
        lines = list(base_lines)
        for _ in range(2):
            index = rng.randrange(len(lines))
            lines.insert(index + rng.choice((1, 2, 3)), lines[index])  # often a repeated key
        text = "".join(lines)
        try:
            expected = yaml.load(text, Loader=yamlio._StrictLoader)
        except yaml.YAMLError:
            with pytest.raises(InvalidInput):
                yamlio.load_strict(text, path="f")
            continue
        assert yamlio.load_strict(text, path="f") == expected
