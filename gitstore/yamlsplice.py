"""One key's entry found in the text of a block-style YAML mapping, so that a key write replaces
that entry's lines and keeps every other byte, without parsing the document (a 27 KB
astute.yaml takes ~10 ms to parse; finding a key's lines takes a few hundred µs).

The scanner is conservative. It reads gitstore's own output (PyYAML block style) and the common
hand-written subset: block mappings of plain or single-quoted string keys, each key on its own
line. It answers None, so that the caller takes the full path (parse, edit, rewrite), for
anything it cannot be sure of:

- anywhere in the file: anchors (`&`: without them there is no alias), tags at a node, tabs,
  carriage returns and Unicode line breaks, backslashes (escapes), `---`/`...`/`%` markers, a
  flow collection other than `[]` and `{}`, a quote opened and not closed on its line (a quoted
  scalar may run on at any indentation), `.nan`/`.inf`, block scalars that keep trailing blank
  lines (`|+`);
- in each mapping on the key path: a line that is not a plain or single-quoted string key, a
  comment or a list item of the entry above it, a repeated key; on the path, a value that is
  not a block mapping (a list, flow, a scalar, null);
- in the replaced entry: a comment (the full path keeps comments).

Everything the scanner reads of the file's structure is a line whose indentation is at most the
mapping's: YAML ends any block, plain multi-line scalar or block scalar that is less indented,
so only quoted scalars and flow collections could run across such a line, and those are refused
above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from gitstore import yamlio

#: Text the scanner cannot be sure of anywhere in a file.
#: `\x85`, `\u2028` and `\u2029` (in UTF-8) are line breaks to YAML, not to the scanner.
_REFUSED_BYTES = (b"&", b"\t", b"\r", b"\\", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
_REFUSED_STARTS = (b"---", b"...", b"%", b"\xef\xbb\xbf")
#: What may not start a node: a quote not closed on its line (a quoted scalar may run on at any
#: indentation), a tag, a flow collection with content, a block scalar keeping its trailing
#: blank lines (`|+`). Nodes start a line (after `- ` or `? `) or follow `: `; each pattern
#: starts with a literal, which the regex engine finds fast (one pattern with both took ~1 ms
#: for 27 KB, these ~0.1 ms).
_NODE = rb"""(?:[-?] ++)*+(?:'(?:[^'\n]|'')*$|"[^"\n]*$|!|[\[{](?![\]}])|[|>][0-9]?\+)"""
_REFUSED_AT_LINE = re.compile(rb"\n(?:---|\.\.\.|%| *+" + _NODE + rb")", re.M)
_REFUSED_AFTER_KEY = re.compile(rb": ++" + _NODE, re.M)
_NOT_FINITE = re.compile(rb"\.(?:nan|NaN|NAN|inf|Inf|INF)\b")
_STR = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()


@dataclass(frozen=True)
class Spot:
    """Where a key path's entry is, or would go, in a document's text.

    `exists`: `data[start:end]` is the entry of the path's last key, its lines from the key to
    the last line of its value. Otherwise `start == end` is where `keys[found]` is added (the
    first `found` keys exist): after the last entry of the deepest mapping found. `indent` is
    the column of that entry's key. `alone`: the entry is the only one of its mapping.
    """

    start: int
    end: int
    indent: int
    found: int
    exists: bool
    alone: bool = False


@dataclass
class _Mapping:
    """The entries of one block mapping, in order (lists, not an object per entry: a write
    reads the ~100 top-level entries of a large document)."""

    index: dict[str, int]  # key -> its entry's number
    starts: list[int]  # each key line's first byte
    rests: list[bytes]  # what follows each `key:` on its line
    items: set[int]  # entries followed by `- ` lines at their key's column (an indentless list)


def safe(data: bytes) -> bool:
    """Whether the file as a whole is text the scanner may read (see the module's list)."""
    if not data.endswith(b"\n") or data.startswith(_REFUSED_STARTS):
        return False
    if any(part in data for part in _REFUSED_BYTES):
        return False
    first = data[: data.find(b"\n") + 1]
    return not (
        _REFUSED_AT_LINE.search(b"\n" + first)
        or _REFUSED_AT_LINE.search(data)
        or _REFUSED_AFTER_KEY.search(data)
        or _NOT_FINITE.search(data)
    )


def locate(data: bytes, keys: Sequence[str]) -> Spot | None:
    """The spot of key path `keys` (strings) in `data`, a file `safe` accepted; None if unsure."""
    start, end, indent = 0, len(data), 0
    first = _first_line(data, 0, end)
    if first is None or first[0] != 0:
        return None  # an empty file or one that does not start with a key at column 0
    for depth, key in enumerate(keys):
        mapping = _entries(data, start, end, indent)
        if mapping is None:
            return None
        index = mapping.index.get(key)
        if index is None:
            at = _trimmed_end(data, start, end)
            return Spot(at, at, indent, depth, exists=False)
        entry_start = mapping.starts[index]
        entry_end = mapping.starts[index + 1] if index + 1 < len(mapping.starts) else end
        if depth == len(keys) - 1:
            at = _trimmed_end(data, entry_start, entry_end)
            alone = len(mapping.starts) == 1
            return Spot(entry_start, at, indent, depth, exists=True, alone=alone)
        if mapping.rests[index].strip() or index in mapping.items:
            return None  # not a block mapping: the full path sets it or names the conflict
        start = data.index(b"\n", entry_start) + 1
        end = entry_end
        child = _first_line(data, start, end)
        if child is None or child[0] <= indent or child[1].startswith(b"-"):
            return None  # an empty value (null) or a list
        indent = child[0]
    return None


def stored_value(data: bytes, spot: Spot, keys: Sequence[str]) -> Any:
    """The value of the entry at `spot` (which exists): its lines alone, parsed. Raises
    ValueError when they hold a comment or do not read as exactly that one key."""
    text = data[spot.start : spot.end]
    if has_comment(data, spot):
        raise ValueError("a comment in the entry")
    pad = spot.indent
    lines = [line[pad:] if line.strip() else line for line in text.splitlines(keepends=True)]
    parsed = yamlio.load(b"".join(lines))
    if not isinstance(parsed, dict) or list(parsed) != [keys[-1]]:
        raise ValueError("the entry does not read as its key")
    return parsed[keys[-1]]


def has_comment(data: bytes, spot: Spot) -> bool:
    """Whether the entry at `spot` may hold a comment (which replacing it would lose)."""
    text = data[spot.start : spot.end]
    return b" #" in text or b"\n#" in text


def remove(data: bytes, spot: Spot) -> bytes:
    """`data` without the entry at `spot` (which exists, and is not alone in its mapping: the
    mapping would read as null, not as `{}`)."""
    return data[: spot.start] + data[spot.end :]


def replace(data: bytes, spot: Spot, keys: Sequence[str], value: Any) -> bytes:
    """`data` with the entry at `spot` replaced by (or the missing keys added as) `value`."""
    entry: Any = value
    for key in reversed(keys[spot.found :]):
        entry = {key: entry}
    pad = b" " * spot.indent
    text = yamlio.dump(entry)
    if pad:
        text = b"".join(
            pad + line if line.strip() else line for line in text.splitlines(keepends=True)
        )
    return data[: spot.start] + text + data[spot.end :]


def key_count_bound(data: bytes) -> int:
    """At least the keys and list items of a file `safe` accepted: each key of a block mapping
    is followed by a `:` (or led by `?`), each list item led by a `-`, and no flow collection
    holds anything."""
    return data.count(b":") + data.count(b"-") + data.count(b"?")


def _entries(data: bytes, start: int, end: int, indent: int) -> _Mapping | None:
    """The entries of the block mapping whose keys are at column `indent` in `data[start:end]`;
    None for a line the scanner does not read as a key, or a repeated key."""
    mapping = _Mapping({}, [], [], set())
    index, starts, rests = mapping.index, mapping.starts, mapping.rests
    for line in _lines_in(data, start, end, indent):
        column, comment, dash, plain, rest, quoted, quoted_rest, _ = line.groups()
        if comment:
            continue  # a comment line, at any indentation
        if len(column) < indent:
            return None
        if dash:
            if not starts:
                return None  # a list, not a mapping
            mapping.items.add(len(starts) - 1)
            continue
        key = _key(plain, quoted) if plain is not None or quoted is not None else None
        if key is None or key in index:
            return None  # another kind of line, a key that is not a string, a repeated key
        index[key] = len(starts)
        starts.append(line.start(1))
        rests.append((rest if plain is not None else quoted_rest) or b"")
    return mapping


def _lines_in(data: bytes, start: int, end: int, indent: int):
    """The `_shallow(indent)` matches of the lines in `data[start:end]` (whole lines)."""
    pattern = _shallow(indent)
    if start == 0:
        first = pattern.match(b"\n" + data[: data.find(b"\n") + 1])
        if first is not None:
            yield _Shifted(first)
        start = data.find(b"\n") + 1
    yield from pattern.finditer(data, start - 1, end)


class _Shifted:
    """A match on the first line, made with a newline put before it: positions moved back."""

    def __init__(self, match: re.Match[bytes]) -> None:
        self._match = match

    def groups(self) -> tuple:
        return self._match.groups()

    def start(self, group: int) -> int:
        return self._match.start(group) - 1


@lru_cache(maxsize=64)
def _shallow(indent: int) -> re.Pattern[bytes]:
    """A newline and the next line if it is indented by at most `indent` spaces and not blank:
    its indentation, then what it is: a comment, a list item, a plain or single-quoted key
    with what follows its `:`, or anything else (the last group)."""
    return re.compile(
        rb"\n( {0,%d})(?=[^ \n])(?:(#)|(-)(?=[ \n])|" % indent
        + rb"""([^\s'"#\-?:,\[\]{}&*!|>%@`][^:#\n]*?) *:(?: +([^\n]*))?$|"""
        + rb"""'((?:[^'\n]|'')*)' *:(?: +([^\n]*))?$|([^\n]*))""",
        re.M,
    )


@lru_cache(maxsize=4096)
def _key(plain: bytes | None, quoted: bytes | None) -> str | None:
    """The string a key line's key reads as; None if it is not a string (`1:`, `yes:`)."""
    try:
        if quoted is not None:
            return quoted.decode("utf-8").replace("''", "'")
        text = plain.decode("utf-8")  # type: ignore[union-attr]
    except UnicodeDecodeError:
        return None
    return text if _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR else None


_FIRST = re.compile(rb"^( *)([^ \n][^\n]*)$", re.M)


def _first_line(data: bytes, start: int, end: int) -> tuple[int, bytes] | None:
    """The indentation and text of the first line in `data[start:end]` that is neither blank
    nor a comment."""
    for line in _FIRST.finditer(data, start, end):
        if not line[2].startswith(b"#"):
            return len(line[1]), line[2]
    return None


def _trimmed_end(data: bytes, start: int, end: int) -> int:
    """`end` moved back over the blank and comment lines that end `data[start:end]`: they
    belong to no entry and stay where they are."""
    while end > start:
        previous = data.rfind(b"\n", start, end - 1) + 1
        line = data[max(previous, start) : end].strip()
        if line and not line.startswith(b"#"):
            break
        end = max(previous, start)
    return end
