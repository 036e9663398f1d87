"""A line reader for the plain block-style YAML that node facts are written in.

Fuel writes a node's facts one entry per line: `key: value`, `key:` above a deeper block,
`- item`, with plain, single-quoted or simply double-quoted scalars (a long plain scalar wrapped
onto deeper lines). PyYAML's C parser builds a Python node object per scalar and calls back into
Python to resolve and construct each one: much of what a first (cold) lookup of a node's facts
cost. Here such a text is read line by line with str methods into the same values, scalars
resolved by PyYAML's own YAML 1.1 rules and built by its SafeConstructor, in a fraction of that
time (docs/performance.md).

It is conservative, like `yamlsplice`: anything it does not fully understand (anchors, aliases,
tags, flow collections with content, block scalars, quoted scalars over several lines, blank
lines or comments inside a wrapped scalar, escapes, complex or quoted keys, document markers
other than a leading `---`, tabs, unusual characters, deep nesting) raises `NotPlainBlock` at
once, and the caller gives the text to PyYAML, which reads it or raises its own error. So a text
read here gives exactly what PyYAML gives (tests/test_yamlblock.py compares them over every YAML
file of the repository, Fuel's, generated documents and Fuel's facts with random edits).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["NotPlainBlock", "plain_tag", "read"]


class NotPlainBlock(Exception):
    """The text uses YAML this reader leaves to PyYAML."""


#: What PyYAML reads as is and this reader handles: printable characters and newlines only (no
#: tab, carriage return, BOM or the YAML 1.1 line breaks U+0085, U+2028, U+2029).
_UNUSUAL_CHARACTER = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
#: Keys read here: plain, no space, quote, colon or indicator (`--name` knock-outs included).
_PLAIN_KEY = re.compile(r"(?!---)(?:[A-Za-z0-9_./=+]|-[A-Za-z0-9_./=+-])[A-Za-z0-9_./=+-]*")
#: First characters of a value that start something other than a plain scalar, or may.
_INDICATORS = frozenset("[]{}#&*!|>%@`,?:'\"-")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_DIGITS = frozenset("0123456789")
_ITEM_STARTS = frozenset({"-", "- "})  # a line's first two characters that make it an item
#: The deepest block read here (the document itself is 0): its values lie at a document's depth
#: 64, `yamlio.MAX_DEPTH`. Anything deeper goes to PyYAML, where yamlio refuses it.
_MAX_DEPTH = 62

_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_BUILT = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null", "timestamp")
)
_RESOLVERS = yaml.SafeLoader.yaml_implicit_resolvers
_CONSTRUCTOR = yaml.SafeLoader.yaml_constructors
_SAFE = yaml.constructor.SafeConstructor()

#: Plain scalars' tags by text, for the short ones that may be something else than a string.
_RESOLVED: dict[str, str] = {}
#: Keys by text: key names repeat across documents (a node's facts are named alike).
_KEYS: dict[str, Any] = {}
_KEPT_MAX = 8192
_KEPT_LENGTH = 64
_MISSING = object()


def plain_tag(text: str) -> str:
    """The tag YAML 1.1 (PyYAML's implicit resolvers, in their order) gives a plain scalar."""
    resolvers = _RESOLVERS.get(text[:1])
    if resolvers is None:
        return _STR_TAG
    if text[:1] in _DIGITS and text.count(".") > 1:
        return _STR_TAG  # an address or a version: no float, int or timestamp has two dots
    tag = _RESOLVED.get(text)
    if tag is None:
        tag = _STR_TAG
        for candidate, regexp in resolvers:
            if regexp.match(text):
                tag = candidate
                break
        _keep(_RESOLVED, text, tag)
    return tag


def _keep(kept: dict[str, Any], text: str, value: Any) -> None:
    if len(text) <= _KEPT_LENGTH:
        if len(kept) >= _KEPT_MAX:
            kept.clear()
        kept[text] = value


def read(text: str) -> Any:
    """The document `text` holds, as PyYAML's safe loader would build it.

    Raises NotPlainBlock when the text is not in the subset read here.
    """
    if _UNUSUAL_CHARACTER.search(text):
        raise NotPlainBlock
    lines = _lines(text)
    if not lines:
        return None
    if lines[0][0] != 0:
        raise NotPlainBlock
    value, end = _block(lines, 0, 0, 0)
    if end != len(lines):
        raise NotPlainBlock
    return value


def _lines(text: str) -> list[tuple[Any, ...]]:
    """(indent, content, is_item, gap) of each line that holds something (not blank, not a
    comment): `is_item` for `- ...`, `gap` when blank or comment lines come before it (they
    end a multi-line plain scalar)."""
    lines = []
    gap = False
    for raw in text.split("\n"):
        content = raw.lstrip(" ")
        if not content or content[0] == "#":
            gap = True
            continue
        indent = len(raw) - len(content)
        if content[-1] == " ":
            content = content.rstrip(" ")
        lines.append((indent, content, content[:2] in _ITEM_STARTS, gap))
        gap = False
    if lines and lines[0][1].startswith("---"):
        if lines[0][1] != "---":
            raise NotPlainBlock  # `--- value`, `--- !tag`, `---x`: PyYAML decides
        del lines[0]
    for indent, content, _, _ in lines:
        if indent == 0 and content.startswith(("---", "...", "%")):
            raise NotPlainBlock  # another document, an end marker or a directive
    return lines


def _is_item(content: str) -> bool:
    return content[0] == "-" and (len(content) == 1 or content[1] == " ")


def _block(lines: list[tuple[Any, ...]], i: int, indent: int, depth: int) -> tuple[Any, int]:
    """The mapping or sequence whose first line is `lines[i]`, at `indent`."""
    if depth > _MAX_DEPTH:
        raise NotPlainBlock
    if lines[i][2]:
        return _sequence(lines, i, indent, depth, inside_mapping=False)
    return _mapping(lines, i, indent, depth)


def _mapping(
    lines: list[tuple[Any, ...]], i: int, indent: int, depth: int
) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    count = len(lines)
    while i < count and lines[i][0] == indent and not lines[i][2]:
        key, rest = _entry(lines[i][1])
        i += 1
        if rest:
            if i < count and lines[i][0] > indent:
                result[key], i = _folded(rest, lines, i, indent)
            else:
                result[key] = _scalar(rest)
        elif i == count or lines[i][0] < indent:
            result[key] = None
        elif lines[i][0] > indent:
            result[key], i = _block(lines, i, lines[i][0], depth + 1)
        elif lines[i][2]:
            result[key], i = _sequence(lines, i, indent, depth + 1, inside_mapping=True)
        else:
            result[key] = None
    if i < count and lines[i][0] >= indent:
        raise NotPlainBlock  # a deeper line (a multi-line scalar?) or an item among keys
    return result, i


def _sequence(
    lines: list[tuple[Any, ...]], i: int, indent: int, depth: int, *, inside_mapping: bool
) -> tuple[list[Any], int]:
    """Items `- ...` at `indent`; `inside_mapping` for the items a mapping's key may hold at
    its own indent (`key:` then `- a` below it)."""
    result: list[Any] = []
    count = len(lines)
    while i < count and lines[i][0] == indent and lines[i][2]:
        content = lines[i][1]
        rest = content[1:].lstrip(" ")
        if not rest:
            i += 1
            if i < count and lines[i][0] > indent:
                value, i = _block(lines, i, lines[i][0], depth + 1)
            else:
                value = None
        elif _is_item(rest):
            raise NotPlainBlock  # `- - a`
        elif rest[-1] == ":" or ": " in rest:
            # `- key: value`: a mapping whose first entry shares the item's line.
            lines[i] = (indent + len(content) - len(rest), rest, False, False)
            value, i = _mapping(lines, i, lines[i][0], depth + 1)
        elif i + 1 < count and lines[i + 1][0] > indent:
            value, i = _folded(rest, lines, i + 1, indent)
        else:
            value = _scalar(rest)
            i += 1
        result.append(value)
    if i < count and lines[i][0] >= indent and not (inside_mapping and lines[i][0] == indent):
        raise NotPlainBlock
    return result, i


def _entry(content: str) -> tuple[Any, str]:
    """A mapping line's key and the text after its `: ` (empty for `key:`)."""
    split = content.find(": ")
    if split < 0:
        if content[-1] != ":":
            raise NotPlainBlock  # a scalar among keys: multi-line, or an error PyYAML names
        key_text, rest = content[:-1], ""
    else:
        key_text, rest = content[:split], content[split + 2 :].lstrip(" ")
    key = _KEYS.get(key_text, _MISSING)
    if key is _MISSING:
        if not _PLAIN_KEY.fullmatch(key_text):
            raise NotPlainBlock
        key = _plain(key_text)
        _keep(_KEYS, key_text, key)
    return key, rest


def _folded(text: str, lines: list[tuple[Any, ...]], i: int, indent: int) -> tuple[Any, int]:
    """The plain scalar starting with `text`, folded with the lines after it (from `lines[i]`,
    at least one) that are deeper than the collection's `indent`: PyYAML's dumper wraps long
    plain scalars so. Returns it and the index of the first line after it."""
    count = len(lines)
    if text[0] in _INDICATORS:
        raise NotPlainBlock  # a quoted or flow scalar over several lines
    parts = [text]
    while i < count and lines[i][0] > indent:
        if lines[i][3]:
            raise NotPlainBlock  # a blank line is a line break in the value; a comment ends it
        parts.append(lines[i][1])
        i += 1
    return _scalar(" ".join(parts)), i


def _scalar(text: str) -> Any:
    """A value written on its line: plain, quoted, or an empty flow collection."""
    first = text[0]
    if first not in _INDICATORS:
        if ": " in text or " #" in text or text.endswith(":"):
            raise NotPlainBlock
        return _plain(text)
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            raise NotPlainBlock
        return inner.replace("''", "'")
    if first == '"':
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != '"' or '"' in inner or "\\" in inner:
            raise NotPlainBlock
        return inner
    if text == "[]":
        return []
    if text == "{}":
        return {}
    if first == "-" and len(text) > 1 and text[1] != " ":
        if ": " in text or " #" in text or text.endswith(":"):
            raise NotPlainBlock
        return _plain(text)  # `-1`, `-foo`
    raise NotPlainBlock


def _plain(text: str) -> Any:
    try:
        if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1):
            return int(text)  # what the int resolver and constructor make of decimal digits
        tag = plain_tag(text)
        if tag == _STR_TAG:
            return text
        if tag == _INT_TAG and _DECIMAL.fullmatch(text):
            return int(text)
        if tag == _NULL_TAG:
            return None
        if tag == _BOOL_TAG:
            return _SAFE.bool_values[text.lower()]
        if tag not in _BUILT:
            raise NotPlainBlock  # `<<` merge keys, `=` value keys
        return _CONSTRUCTOR[tag](_SAFE, yaml.ScalarNode(tag, text))
    except ValueError as exc:  # `2024-02-30`, 5,000 digits: PyYAML names the line
        raise NotPlainBlock from exc
