"""Reading the facts files of many nodes, each distinct top-level entry parsed once.

Fuel writes into every node's `astute.yaml` the entries that list the whole cluster (`nodes`,
`network_metadata`): in a large cluster they are most of each file, the same text in every
file. Parsing each file whole would read that text once per node for one upload round.
Here a file is cut into its top-level entries (a line at column 0 starts one); each entry's text
is parsed once and its value shared by every file that holds the same text, so the work follows
the distinct text, not its copies (docs/store-format.md, "Facts of large clusters").

A file that does not cut cleanly (a document marker, a directive, an entry that is not one
`key: ...`, an alias to an anchor of another entry) is parsed whole: the result is always what
PyYAML gives for the whole file, a repeated key keeping its last value (`yamlio.load_facts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gitstore import yamlio
from gitstore.errors import InvalidInput
from gitstore.yamlio import RepeatedKey

#: A line at column 0 that may start a top-level entry: not blank, no comment, no `- ` item.
_ENTRY_START = re.compile(rb"\n(?=[^ \t\r\n#\-]|-[^ \t\r\n])")


@dataclass
class FactsFile:
    """One file's document and the keys it repeats (YAML kept the last value of each)."""

    document: dict[str, Any]
    repeats: list[RepeatedKey]


@dataclass(frozen=True)
class _Entry:
    key: Any
    value: Any
    repeats: tuple[RepeatedKey, ...]  # lines counted from the entry's first line


class _Uncut(Exception):
    """The file must be parsed whole."""


class FactsReader:
    """Reads facts files, sharing the parsed value of every top-level entry text it has seen.

    Documents returned share those values: treat them as read-only.
    """

    def __init__(self) -> None:
        self._entries: dict[bytes, _Entry] = {}

    def read(self, data: bytes, path: str) -> FactsFile:
        """The mapping a facts file holds (an empty file is `{}`); InvalidInput naming `path`
        when it is not UTF-8, does not parse or is no mapping."""
        _check_text(data, path)
        try:
            return self._read_cut(data)
        except _Uncut:
            document, repeats = yamlio.load_facts(data, path=path)
        if document is None:
            return FactsFile({}, repeats)
        if not isinstance(document, dict):
            kind = type(document).__name__
            raise InvalidInput(f"{path}: document must be a mapping, not {kind}", path=path)
        return FactsFile(document, repeats)

    def _read_cut(self, data: bytes) -> FactsFile:
        if not data or data[:1] in b" \t\r\n#-%" or data.startswith(b"---"):
            raise _Uncut
        starts = [0] + [match.end() for match in _ENTRY_START.finditer(data)]
        ends = starts[1:] + [len(data)]
        document: dict[str, Any] = {}
        first_lines: dict[Any, int] = {}
        repeats: list[RepeatedKey] = []
        line = 1
        previous = 0
        for start, end in zip(starts, ends, strict=True):
            line += data.count(b"\n", previous, start)
            previous = start
            entry = self._entry(data[start:end])
            if entry.key in first_lines:
                repeats.append(RepeatedKey((str(entry.key),), first_lines[entry.key], line))
            first_lines[entry.key] = line
            document[entry.key] = entry.value
            repeats.extend(_shifted(repeat, line - 1) for repeat in entry.repeats)
        return FactsFile(document, repeats)

    def _entry(self, text: bytes) -> _Entry:
        entry = self._entries.get(text)
        if entry is None:
            try:
                value, repeats = yamlio.load_facts(text, path="<entry>")
            except InvalidInput:
                raise _Uncut from None  # e.g. an alias of another entry's anchor
            if not isinstance(value, dict) or len(value) != 1:
                raise _Uncut
            ((key, child),) = value.items()
            entry = _Entry(key, child, tuple(repeats))
            self._entries[text] = entry
        return entry


def _shifted(repeat: RepeatedKey, lines: int) -> RepeatedKey:
    return RepeatedKey(repeat.path, repeat.first_line + lines, repeat.line + lines)


def _check_text(data: bytes, path: str) -> None:
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(
            f"{path} is not UTF-8: byte 0x{data[exc.start]:02x} at line {line}", path=path
        ) from None
