"""The quick loader (`yamlio._QuickLoader`, documents without aliases) gives exactly what
PyYAML's C safe loader gave: the same YAML 1.1 types, values, key order and errors (the same
`InvalidInput` message, line included), over Fuel's real files, every YAML file of the sample
repository and of the tests, and generated documents mixing every form of scalar."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from fuel_data import FUEL
from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore import yamlio
from gitstore.errors import InvalidInput

ROOT = Path(__file__).resolve().parent.parent
SHARED_FUEL = Path("/work/shared/data/fuel")
#: Plain scalars YAML 1.1 reads as something else than a string, and near misses.
TRICKY = [
    "yes", "No", "ON", "off", "y", "n", "Y", "N", "true", "False", "TRUE", "tRue", "~", "null",
    "Null", "NULL", "nULL", "", "1", "-0", "+12", "017", "0o17", "0x1F", "-0x1f", "0xG", "0b101",
    "+0b1_0", "0b2", "1_000", "1:20", "-1:30:00", "1:60", "190:20:30", "1,000", "09", "0_7",
    "1.5", "1.5e3", "1.5e+3", "1e3", ".5", "-.inf", ".Inf", "+.INF", ".inF", ".nan", ".NaN",
    ".NAN", "1.", "6.8523015e+5", "1_0.5_0", "1:20.5", "2024-01-01", "2024-1-1", "2024-02-30",
    "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2001-12-14T21:59:43Z",
    "2001-12-15 2:59:43.10", "2024-13-01x", "=", "<<", "<<x", "10.20.0.2", "192.168.0.1/24",
    "value-1-2", "a b", "x:y", "0.0.0.0", "1e", "-", "+", ".", "_", "0", "00", "0x", "0b",
]  # fmt: skip


def same(a, b) -> bool:
    """Equal values of equal types all the way down, in the same key order (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def outcome(loader, text: bytes):
    """What `yaml.load` with `loader` gives: ("ok", value) or ("error", type, message)."""
    try:
        return ("ok", yaml.load(text, Loader=loader))
    except Exception as exc:  # noqa: BLE001 - any error must be the same error
        return ("error", type(exc), str(exc))


def through_load(text: bytes, monkeypatch, loader):
    """What `yamlio.load` gives when it reads alias-free text with `loader`."""
    monkeypatch.setattr(yamlio, "_QuickLoader", loader)
    try:
        return ("ok", yamlio.load(text, path="f.yaml"))
    except Exception as exc:  # noqa: BLE001 - any error must be the same error
        return ("error", type(exc), str(exc))


def check(text: bytes) -> None:
    """The quick loader gives what PyYAML's C safe loader gives, or fails exactly as it did."""
    assert b"*" not in text
    old, new = outcome(yamlio._FastLoader, text), outcome(yamlio._QuickLoader, text)
    if old[0] == "ok":
        assert new[0] == "ok" and same(new[1], old[1]), text
    else:
        assert new == old, text


def test_the_quick_loader_is_used_and_its_assumptions_hold():
    assert yamlio._QuickLoader is not yamlio._FastLoader
    assert None not in yamlio._FastLoader.yaml_implicit_resolvers
    assert not yamlio._FastLoader.yaml_path_resolvers
    # The strict loader (validation) keeps refusing repeated keys: it is not the quick one.
    assert not issubclass(yamlio._StrictLoader, yamlio._QuickLoader)
    with pytest.raises(InvalidInput, match="line 2.*repeated"):
        yamlio.load_strict(b"a: 1\na: 2\n", path="f.yaml")


def _yaml_files() -> list[Path]:
    found = set(FUEL.rglob("*.yaml")) | set(SHARED_FUEL.rglob("*.yaml"))
    for top in (ROOT / "sample_repo", ROOT / "tests"):
        found |= set(top.rglob("*.yaml")) | set(top.rglob("*.yml"))
    return sorted(found)


@pytest.mark.parametrize("source", _yaml_files(), ids=str)
def test_real_files_load_the_same(source, monkeypatch):
    text = source.read_bytes()
    check(text.replace(b"*", b"_"))  # without aliases (so the quick loader reads it)
    # And through `load`, aliases or not: same value or the same InvalidInput message.
    old = through_load(text, monkeypatch, yamlio._FastLoader)
    new = through_load(text, monkeypatch, yamlio._QuickLoader)
    assert new[0] == old[0]
    assert same(new[1], old[1]) if old[0] == "ok" else new == old


def test_the_real_fuel_files_are_all_read():
    names = {p.relative_to(FUEL) for p in _yaml_files() if p.is_relative_to(FUEL)}
    assert {Path("astute/compute.yaml"), Path("release-newton-10.0.yaml")} <= names
    assert len([p for p in _yaml_files() if "sample_repo" in p.parts]) >= 20


def _numbers() -> st.SearchStrategy[str]:
    ints = st.integers(-(10**20), 10**20)
    return st.one_of(
        ints.map(str),
        ints.map(lambda i: ("-" if i < 0 else "") + hex(abs(i))),
        ints.map(lambda i: ("-" if i < 0 else "") + "0" + oct(abs(i))[2:]),
        ints.map(lambda i: ("-" if i < 0 else "") + bin(abs(i))),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.dates().map(str),
        st.tuples(st.datetimes(), st.sampled_from(" Tt")).map(lambda x: x[0].isoformat(x[1])),
    )


_NEAR = st.text("0123456789._:-+eExXoObB ~yesnoYNtrufalsTRUFALSinfINFNa", max_size=8)
_SCALARS = st.sampled_from(TRICKY) | _numbers() | _NEAR | st.text(max_size=6)


def _quoted(value: str, style: str) -> str:
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scalar(value: str, style: str) -> str:
    if style != "plain":
        return _quoted(value, style)
    if value != value.strip() or any(c in value for c in "#,[]{}&*!|>'\"%@`\n\t?:-"):
        return _quoted(value, "double")  # no plain form: quoted, so the text still parses
    return value


_TREES = st.recursive(
    st.tuples(st.just("scalar"), _SCALARS, st.sampled_from(["plain", "single", "double"])),
    lambda inner: (
        st.tuples(st.just("list"), st.lists(inner, max_size=4), st.just(""))
        | st.tuples(
            st.just("map"),
            st.lists(
                st.tuples(
                    st.tuples(st.just("scalar"), _SCALARS, st.sampled_from(["plain", "single"])),
                    inner,
                ),
                max_size=5,
            ),
            st.just(""),
        )
    ),
    max_leaves=25,
)


def flow(node) -> str:
    kind, value, style = node
    if kind == "scalar":
        return _scalar(value, style)
    if kind == "list":
        return "[" + ", ".join(flow(item) for item in value) + "]"
    return "{" + ", ".join(f"{flow(k)}: {flow(v)}" for k, v in value) + "}"


def block(node, indent: int = 0) -> str:
    """Block-style text (keys and items on lines of their own); empty containers in flow."""
    kind, value, _ = node
    pad = " " * indent
    if kind == "scalar" or not value:
        return " " + flow(node) + "\n"
    if kind == "list":
        return "\n" + "".join(f"{pad}-{block(item, indent + 2)}" for item in value)
    return "\n" + "".join(f"{pad}{flow(k)}:{block(v, indent + 2)}" for k, v in value)


@settings(max_examples=600, deadline=None)
@given(_TREES)
def test_generated_documents_load_the_same_or_fail_the_same(node):
    for text in ("top: " + flow(node) + "\n", "top:" + block(node, 2), flow(node) + "\n"):
        if "*" not in text:
            check(text.encode())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_SCALARS, _SCALARS), max_size=12), st.sampled_from(["plain", "single"]))
def test_generated_flat_mappings_with_repeated_and_typed_keys(pairs, style):
    pairs = pairs + pairs[: len(pairs) // 2]  # repeated keys: the last value wins, first place
    text = "".join(f"{_scalar(k, 'plain')}: {_scalar(v, style)}\n" for k, v in pairs)
    if "*" not in text:
        check(text.encode())


def test_tricky_scalars_as_keys_and_values_in_block_style():
    for key in TRICKY:
        for value in TRICKY:
            check(f"{_scalar(key, 'plain')}: {_scalar(value, 'plain')}\n".encode())
            check(f"- {_scalar(key, 'plain')}\n- {{{key or '~'}: {value or '~'}}}\n".encode())
    check(("\n".join(f"k{i}: {_scalar(v, 'plain')}" for i, v in enumerate(TRICKY)) + "\n").encode())


@pytest.mark.parametrize(
    "text",
    [
        b"base: {a: 1}\nother:\n  <<: {a: 2, b: 3}\n  c: 4\n",
        b"<<: [{a: 1}, {b: 2}]\na: 3\n",
        b"<<: 1\n",
        b"=: 1\nx: {=: 2}\n",
        b"a: !!str 1\nb: !!float 2\nc: !!binary aGk=\nd: !!set {x, y}\n",
        b"a: !!int '0x10'\nb: !!bool 'yes'\nc: !!null x\nd: !!timestamp '2024-01-01'\n",
        b"a: !!omap [x: 1]\nb: !!pairs [x: 1, x: 2]\n",
        b"a: !!map {b: 1}\nc: !!seq [1]\nd: !!str {b: 1}\n",
        b"a: !!timestamp nope\n",
        b"? [1, 2]\n: x\n",
        b"? {a: 1}\n: x\n",
        b"1: a\n1.0: b\ntrue: c\n~: d\n2024-01-01: e\n0x1: f\n",
        b"a: 1\na: 2\nb: 3\na: 4\n",
        b"a: 2024-02-30\n",
        b"a: {b: 2024-02-30}\nc: !custom x\n",
        b"a: !custom x\n",
        b"a: ! 12\nb: !<tag:yaml.org,2002:int> '7'\n",
        b"",
        b"# only a comment\n",
        b"---\n",
        b"--- 12\n",
        b"plain text\n",
        b"- 1\n- [2, '3']\n- ~\n",
        b"'quoted'\n",
        b"a: &x 1\nb: 2\n",
        b"a: [1, 2\n",
        b"a: b: c\n",
        b"a:\n  - 1\n - 2\n",
        b"key: 'unclosed\n",
        b"--- 1\n--- 2\n",
        b"\t- tab\n",
    ],
)
def test_special_documents_load_the_same_or_fail_the_same(text, monkeypatch):
    check(text)
    old = through_load(text, monkeypatch, yamlio._FastLoader)
    new = through_load(text, monkeypatch, yamlio._QuickLoader)
    assert new[0] == old[0]
    assert same(new[1], old[1]) if old[0] == "ok" else new == old


def test_load_uses_it_and_still_names_errors():
    assert yamlio.load(b"a: yes\nb: [1, '1', 1.0, ~]\n") == {"a": True, "b": [1, "1", 1.0, None]}
    with pytest.raises(InvalidInput, match="f.yaml: line 1"):
        yamlio.load(b"? [1]\n: x\n", path="f.yaml")
    with pytest.raises(InvalidInput, match="f.yaml: line 3 YAML does not parse"):
        yamlio.load(b"a: 1\nb: [1\n", path="f.yaml")
