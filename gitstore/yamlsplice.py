"""One key's entry found in the text of a block-style YAML mapping, so that a key write replaces
that entry's lines and keeps every other byte, without parsing the document (finding a key's
lines costs a small fraction of parsing a large astute.yaml).

The scanner is conservative. It reads gitstore's own output (PyYAML block style) and the common
hand-written subset: block mappings of plain or single-quoted string keys, each key on its own
line. It answers None, so that the caller takes the full path (parse, edit, rewrite), for
anything it cannot be sure of:

- anywhere in the file: anchors (`&`: without them there is no alias), tags at a node, tabs,
  carriage returns and Unicode line breaks, backslashes (escapes), `---`/`...`/`%` markers, a
  flow collection other than `[]` and `{}`, a quote opened and not closed on its line (a quoted
  scalar may run on at any indentation), `.nan`/`.inf` and floats too large to be finite, block
  scalars that keep trailing blank lines (`|+`), a line indented by 30 columns or more (the
  bound of how deeply the document nests);
- in each mapping on the key path: a line at its column that is not a plain or single-quoted
  key, a comment or a list item of the entry above it; the key repeated, or written plain where
  plain it reads as no string (`yes`); on the path, a value that is not a block mapping (a
  list, flow, a scalar, null);
- in the replaced entry: a comment (the full path keeps comments).

Everything the scanner reads of the file's structure is a line whose indentation is at most the
mapping's: YAML ends any block, plain multi-line scalar or block scalar that is less indented,
so only quoted scalars and flow collections could run across such a line, and those are refused
above. The text is a stored document, so it parses (REST writes it, the push gate refuses what
does not): what the scanner does not read, the lines deeper than a mapping on the path, it
keeps byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gitstore import yamlio

#: Text the scanner cannot be sure of anywhere in a file.
_REFUSED_BYTES = (b"&", b"\t", b"\r", b"\\")
#: `\x85`, `\u2028` and `\u2029` (in UTF-8) are line breaks to YAML, not to the scanner.
_REFUSED_BREAKS = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
_REFUSED_STARTS = (b"---", b"...", b"%", b"\xef\xbb\xbf")
#: What may not start a node: a quote not closed on its line (a quoted scalar may run on at any
#: indentation), a tag, a flow collection with content, a block scalar keeping its trailing
#: blank lines (`|+`). Nodes start a line (after `- ` or `? `) or follow `: `; each pattern
#: starts with a literal, which the regex engine finds fast (one pattern with both was several
#: times slower).
_NODE = rb"""(?:[-?] ++)*+(?:'(?:[^'\n]|'')*$|"[^"\n]*$|!|[\[{](?![\]}])|[|>][0-9]?\+)"""
#: ... and a line starting with 30 columns of indentation, `- ` or `? `: below that, no node nests
#: deeper than 61 (every two levels move a block node right by a column at least), so the
#: document keeps within the 64 levels of `limits.MAX_DEPTH` without being walked.
_REFUSED_AT_LINE = re.compile(rb"\n(?:---|\.\.\.|%|[ ?\-]{30}| *+" + _NODE + rb")", re.M)
_REFUSED_AFTER_KEY = re.compile(rb": ++" + _NODE, re.M)
#: Floats that are not finite: named, or too large (a mantissa of 300 digits; an exponent of 3
#: digits, `_EXPONENTS`, after a digit or a dot).
_NOT_FINITE = (
    re.compile(rb"\.(?:nan|NaN|NAN|inf|Inf|INF)\b"),
    re.compile(rb"\.(?<=[0-9_]{300}\.)"),
)
#: One pattern per letter: a literal first is found fast, `[eE]` first is not.
_EXPONENTS = (re.compile(rb"e[-+][0-9]{3}"), re.compile(rb"E[-+][0-9]{3}"))


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


def safe(data: bytes) -> bool:
    """Whether the file as a whole is text the scanner may read (see the module's list).

    Every rule is one of lines, so whole lines put into a file `safe` accepted keep it
    acceptable when `safe` accepts them alone (cutting whole lines out does too)."""
    if not data.endswith(b"\n") or data.startswith(_REFUSED_STARTS):
        return False
    if any(part in data for part in _REFUSED_BYTES):
        return False
    if not data.isascii() and any(part in data for part in _REFUSED_BREAKS):
        return False
    first = data[: data.find(b"\n") + 1]
    return not (
        _REFUSED_AT_LINE.search(b"\n" + first)
        or _REFUSED_AT_LINE.search(data)
        or _REFUSED_AFTER_KEY.search(data)
        or any(pattern.search(data) for pattern in _NOT_FINITE)
        or any(
            data[found.start() - 1 : found.start()] in b"0123456789."
            for pattern in _EXPONENTS
            for found in pattern.finditer(data)
        )
    )


def locate(data: bytes, keys: Sequence[str]) -> Spot | None:
    """The spot of key path `keys` (strings) in `data`, a file `safe` accepted; None if unsure.

    Each mapping on the path is read by regular expressions, not line by line in Python: one
    pass refuses any line at the mapping's column that is not a comment, a list item or a
    plain or single-quoted key, then the key's own spellings are searched for. A key repeated
    elsewhere in the mapping does not matter (its entry keeps its text, and YAML reads it as
    the full path would write it); the key itself repeated does.
    """
    start, end, indent = 0, len(data), 0
    first = _first_line(data, 0, end)
    if first is None or first[0] != 0 or first[1].startswith(b"-"):
        return None  # an empty file, a list, or one that does not start at column 0
    for depth, key in enumerate(keys):
        if _odd_line(data, start, end, indent):
            return None
        found = _key_line(data, start, end, indent, key)
        if found is None:
            return None
        if not found:
            at = _trimmed_end(data, start, end)
            return Spot(at, at, indent, depth, exists=False)
        line_start, line_end, rest = found
        entry_end = _next_entry(data, line_end, end, indent)
        if depth == len(keys) - 1:
            at = _trimmed_end(data, line_start, entry_end)
            alone = not (
                _any_key_line(data, start, line_start, indent)
                or _any_key_line(data, entry_end, end, indent)
            )
            return Spot(line_start, at, indent, depth, exists=True, alone=alone)
        if rest.strip():
            return None  # not a block mapping: the full path sets it or names the conflict
        start, end = line_end, entry_end
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
    return data[: spot.start] + entry_text(spot, keys, value) + data[spot.end :]


def entry_text(spot: Spot, keys: Sequence[str], value: Any) -> bytes:
    """The lines that replace the entry at `spot` (or are added there) to hold `value`."""
    entry: Any = value
    for key in reversed(keys[spot.found :]):
        entry = {key: entry}
    pad = b" " * spot.indent
    text = yamlio.dump(entry)
    if pad:
        text = b"".join(
            pad + line if line.strip() else line for line in text.splitlines(keepends=True)
        )
    return text


def key_count_bound(data: bytes) -> int:
    """At least the keys and list items of a file `safe` accepted (and at most its length):
    each key of a block mapping is followed by a `:` (or led by `?`), each list item led by a
    `-`, and no flow collection holds anything."""
    return data.count(b":") + data.count(b"-") + data.count(b"?")


def values_of_keys_ending(data: bytes, suffixes: Sequence[bytes]) -> list[bytes] | None:
    """What follows the `:` of each key line of `data` (a file `safe` accepted) whose key ends
    with one of `suffixes` (lowercase; compared without case), stripped; None when such a key
    has lines below it (a mapping or a list, or maybe: the caller cannot judge it by lines).
    Text that only looks like such a key (inside a quoted value) counts too: more, never less."""
    lower = data.lower()
    values = []
    for suffix in suffixes:
        at = 0
        while (hit := lower.find(suffix, at)) >= 0:
            at = hit + 1
            after = _AFTER_NAME.match(data, hit + len(suffix))
            if after is None:
                continue  # not the end of a key (`password_file:`, or text)
            value = (after[1] or b"").strip()
            if not value:
                line = data.rfind(b"\n", 0, hit) + 1
                spaces = _SPACES.match(data, line)
                assert spaces is not None  # `_SPACES` matches the empty string too
                indent = spaces.end() - line
                below = _first_line(data, after.end(), len(data))
                if below is not None and (
                    below[0] > indent or (below[0] == indent and below[1].startswith(b"-"))
                ):
                    return None
            values.append(value)
    return values


_AFTER_NAME = re.compile(rb"'? *:(?: ([^\n]*))?\n")
_SPACES = re.compile(rb" *")


def _odd_line(data: bytes, start: int, end: int, indent: int) -> bool:
    """Whether a line of `data[start:end]` (whole lines) indented by at most `indent` is other
    than a comment, a list item at `indent` or a plain or single-quoted key at `indent`."""
    odd = _at_indent(_odd, indent)
    if start == 0 and odd.match(b"\n" + data[: data.find(b"\n") + 1]):
        return True
    return odd.search(data, max(start - 1, 0), end) is not None


#: A plain key as the scanner reads it: no indicator first, no `:` or `#`, no space last.
_PLAIN = rb"""[^\s'"#\-?:,\[\]{}&*!|>%@`](?:[^:#\n]*[^\s:#])?"""


@lru_cache(maxsize=192)
def _at_indent(pattern: Callable[[int], re.Pattern[bytes]], indent: int) -> re.Pattern[bytes]:
    """`pattern(indent)`, compiled once per column: a pure memo of this module's three
    patterns of a column (`_odd`, `_next`, `_key_at`), keyed by the function and the column."""
    return pattern(indent)


def _odd(indent: int) -> re.Pattern[bytes]:
    return re.compile(
        rb"\n(?= {0,%d}[^ \n])(?! *#)(?! {%d}-(?: |$))" % (indent, indent)
        + rb"(?! {%d}" % indent
        + _PLAIN
        + rb" *:(?: |$))(?! {%d}'(?:[^'\n]|'')*' *:(?: |$))" % indent,
        re.M,
    )


def _key_line(
    data: bytes, start: int, end: int, indent: int, key: str
) -> tuple[int, int, bytes] | tuple[()] | None:
    """The line of `key` at column `indent` in `data[start:end]`, a mapping `_odd_line` passed:
    its first byte, the byte after it and what follows its `:`; () if absent. None if it is
    there more than once, if it is written plain where plain `key` reads as no string (`yes:`
    is the key true; the full path would add "yes" beside it), or for a key that no single
    line can hold."""
    if not key.isprintable():
        return None
    pad = b" " * indent
    plain = key.encode("utf-8")
    found = _spelled(data, start, end, pad + b"'" + plain.replace(b"'", b"''") + b"'")
    if _PLAIN_KEY.fullmatch(plain):
        as_plain = _spelled(data, start, end, pad + plain)
        if as_plain and not yamlio.plain_reads_as_string(key):
            return None
        found += as_plain
    if len(found) > 1:
        return None
    return found[0] if found else ()


def _spelled(data: bytes, start: int, end: int, spelling: bytes) -> list[tuple[int, int, bytes]]:
    """Each line of `data[start:end]` (whole lines) that is `spelling`, ` *:`, then a space or
    the line's end: (first byte, the byte after the line, what follows the `:`)."""
    lines = [0] if start == 0 and data.startswith(spelling) else []
    at = max(start - 1, 0)
    while (where := data.find(b"\n" + spelling, at, end)) >= 0:
        lines.append(where + 1)
        at = where + 1
    found = []
    for line in lines:
        after = _AFTER_KEY.match(data, line + len(spelling), end)
        if after is not None:
            found.append((line, after.end(), after[1] or b""))
    return found


_AFTER_KEY = re.compile(rb" *:(?: ([^\n]*))?\n")
_PLAIN_KEY = re.compile(_PLAIN)


def _next_entry(data: bytes, line_end: int, end: int, indent: int) -> int:
    """Where the entry whose key line ends at `line_end` ends: at the next line that is a key at
    `indent` or less indented (comments and list items at `indent` belong to it)."""
    found = _at_indent(_next, indent).search(data, line_end - 1, end)
    return found.start() + 1 if found else end


def _next(indent: int) -> re.Pattern[bytes]:
    shallower = rb" {0,%d}[^ \n#]|" % (indent - 1) if indent else b""
    return re.compile(rb"\n(?:" + shallower + rb" {%d}[^ \n#-])" % indent)


def _any_key_line(data: bytes, start: int, end: int, indent: int) -> bool:
    """Whether `data[start:end]` (whole lines) holds a key line at column `indent`."""
    if start >= end:
        return False
    if start == 0 and data[:1] not in (b" ", b"\n", b"#", b"-", b""):
        return True
    found = _at_indent(_key_at, indent).search(data, max(start - 1, 0), max(end - 1, 0))
    return found is not None


def _key_at(indent: int) -> re.Pattern[bytes]:
    return re.compile(rb"\n {%d}[^ \n#-]" % indent)


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
