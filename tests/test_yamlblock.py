"""The line reader (`yamlblock.read`) gives exactly what PyYAML's safe loader gives, or leaves
the text to PyYAML: over every YAML file of the repository and Fuel's, generated block-style
documents, and Fuel's facts with small edits of every kind (a text PyYAML refuses is never
read here)."""

from __future__ import annotations

import pytest
import yaml
from fuel_data import FUEL
from hypothesis import given, settings
from hypothesis import strategies as st
from test_yamlio_quick import _SCALARS, TRICKY, _scalar, _yaml_files, flow, same

from gitstore import yamlblock, yamlio

ASTUTE = sorted((FUEL / "astute").glob("*.yaml"))


def pyyaml(text: str):
    """("ok", value) or ("error",) from PyYAML's pure-Python and C safe loaders, which agree."""
    try:
        value = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        with pytest.raises(yaml.YAMLError):
            yaml.load(text, Loader=yamlio._FastLoader)
        return ("error",)
    assert same(yaml.load(text, Loader=yamlio._FastLoader), value)
    return ("ok", value)


def check(text: str) -> bool:
    """The reader gives PyYAML's value or declines; True when it read the text."""
    try:
        mine = yamlblock.read(text)
    except yamlblock.NotPlainBlock:
        return False
    theirs = pyyaml(text)
    assert theirs[0] == "ok", f"read a text PyYAML refuses: {text!r}"
    assert same(mine, theirs[1]), text
    return True


def test_the_reader_assumes_pyyamls_plain_resolution():
    assert None not in yaml.SafeLoader.yaml_implicit_resolvers
    assert yaml.SafeLoader.yaml_implicit_resolvers is yamlio._FastLoader.yaml_implicit_resolvers


def test_no_number_or_date_has_two_dots():
    # `plain_tag` calls a digit-led text with two dots a string without asking the resolvers:
    # true of these three, each with one `\.` in any alternative at most.
    for first in "0123456789":
        resolvers = yaml.SafeLoader.yaml_implicit_resolvers[first]
        assert [tag.rpartition(":")[2] for tag, _ in resolvers] == ["float", "int", "timestamp"]
        for _, regexp in resolvers:
            assert all(part.count("\\.") <= 1 for part in regexp.pattern.split("|"))
    for text in ["10.20.0.2", "1.2.3", "1..", "1.5.e+3", "2024-01-01t00:00:00.5.5", "0.0.0.0"]:
        assert yamlblock.plain_tag(text) == "tag:yaml.org,2002:str"
        assert check(f"a: {text}\n")


@pytest.mark.parametrize("source", _yaml_files(), ids=str)
def test_real_files_read_the_same_or_go_to_pyyaml(source):
    check(source.read_text())


def test_fuels_facts_are_read_here_and_through_load():
    assert len(ASTUTE) == 5
    for source in ASTUTE:
        text = source.read_text()
        assert check(text), source  # wrapped plain scalars, indentless lists, quotes
        assert same(yamlio.load(text.encode(), path="f"), yaml.load(text, Loader=yaml.SafeLoader))


#: Edits that turn a line into something else YAML-wise.
_INSERTS = [
    " ", "  ", "-", "- ", ":", ": ", "#", " #", "'", '"', "\\", "[", "]", "{", "}", "&a ", "*a",
    "!", "!!str ", "|", ">", "%", "@", "`", "?", ",", "---", "...", "\t", "\r", "\n", "\n\n",
    "\n  ", "\n#c\n", "~", "0", "1.5", "yes", "<<", "=", "\u2028", "\x85",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(ASTUTE), st.data())
def test_edited_facts_read_the_same_or_go_to_pyyaml(source, data):
    text = source.read_text()[:6000]
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        kind = data.draw(st.sampled_from(["insert", "delete", "indent"]))
        if kind == "insert":
            text = text[:at] + data.draw(st.sampled_from(_INSERTS)) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 4)) :]
        else:
            start = text.rfind("\n", 0, at) + 1
            text = text[:start] + " " * data.draw(st.integers(1, 3)) + text[start:]
    check(text)


#: Keys a person or Fuel writes plain (and TRICKY's that may be), and a few quoted ones.
_KEYS = st.one_of(
    st.from_regex(r"(--)?[A-Za-z_][A-Za-z0-9_./-]{0,10}", fullmatch=True),
    st.sampled_from([k for k in TRICKY if k and _scalar(k, "plain") == k]),
    _SCALARS.filter(bool),
).map(lambda key: ("scalar", key, "plain"))
_TREES = st.recursive(
    st.tuples(st.just("scalar"), _SCALARS, st.sampled_from(["plain", "single", "double"])),
    lambda inner: (
        st.tuples(st.just("list"), st.lists(inner, max_size=4), st.just(""))
        | st.tuples(st.just("map"), st.lists(st.tuples(_KEYS, inner), max_size=5), st.just(""))
    ),
    max_leaves=25,
)


def block(node, indent: int, step: int, items: str) -> str:
    """Block-style text with `step` spaces per level; list items at the key's own indent
    (`items="indentless"`) or deeper, a mapping item's first entry on the item's line."""
    kind, value, _ = node
    pad = " " * indent
    if kind == "scalar" or not value:
        return " " + flow(node) + "\n"
    if kind == "list":
        inner = indent if items == "indentless" else indent + step
        lines = []
        for item in value:
            text = block(item, inner + 2, step, items)
            if item[0] == "map" and item[1]:
                text = " " + text.lstrip("\n")[inner + 2 :]  # `- key: value` on one line
            lines.append(f"{' ' * inner}-{text}")
        return "\n" + "".join(lines)
    return "\n" + "".join(
        f"{pad}{flow(k)}:{block(v, indent + step, step, items)}" for k, v in value
    )


@settings(max_examples=600, deadline=None)
@given(_TREES, st.sampled_from([2, 4]), st.sampled_from(["indentless", "indented"]))
def test_generated_block_documents_read_the_same(node, step, items):
    text = "top:" + block(node, step, step, items)
    if "*" not in text:
        check(text)
        check("---\n" + text)
        check("# a comment\n\n" + text.replace("\n", "\n\n", 3) + "\n")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_SCALARS, st.lists(_SCALARS, min_size=1, max_size=4)), max_size=8))
def test_wrapped_plain_scalars_read_as_pyyaml_folds_them(entries):
    text = ""
    for key, words in entries:
        parts = [_scalar(word, "plain") for word in words]
        text += f"{_scalar(key, 'plain')}: " + "\n    ".join(parts) + "\n"
    check(text)


def test_tricky_scalars_as_keys_values_and_items():
    read = 0
    for key in TRICKY:
        for value in TRICKY:
            read += check(f"{_scalar(key, 'plain')}: {_scalar(value, 'plain')}\n")
            read += check(f"- {_scalar(value, 'single')}\n- {_scalar(key, 'double')}\n")
    assert read > len(TRICKY) ** 2  # most of them are read here, not handed on
