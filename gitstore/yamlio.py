"""The one module that reads and writes YAML.

Reads use PyYAML's C safe loader (fast; results are cached by blob id upstream). Writes that
change an existing file go through ruamel.yaml round-trip so that people's comments and key order
survive an API edit.
"""

from __future__ import annotations

import io
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gitstore.errors import InvalidInput

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _round_trip() -> YAML:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=2, sequence=4, offset=2)
    return rt


def load(data: bytes | str, *, path: str = "<document>") -> Any:
    """Parse one YAML document; a syntax error becomes InvalidInput naming `path` and the line."""
    try:
        return yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidInput(f"{path}:{line} YAML does not parse: {problem}", path=path) from exc


def load_mapping(data: bytes | str, *, path: str) -> dict:
    """Parse a document that must be a mapping (an empty file is `{}`)."""
    doc = load(data, path=path)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        kind = type(doc).__name__
        raise InvalidInput(f"{path}: document must be a mapping, not {kind}", path=path)
    return doc


def load_all_first(data: bytes | str, *, path: str = "<stdin>") -> tuple[Any, int]:
    """The first document of a stream and how many documents there were."""
    try:
        docs = list(yaml.load_all(data, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}: YAML does not parse: {exc}", path=path) from exc
    return (docs[0] if docs else None), len(docs)


def dump(data: Any) -> bytes:
    """Serialize a plain document for a new file (key order kept, block style)."""
    text = yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    return text.encode("utf-8")


def load_round_trip(data: bytes | str) -> Any:
    """Parse keeping comments and order, for an edit that will be dumped again."""
    return _round_trip().load(data)


def dump_round_trip(doc: Any) -> bytes:
    out = io.StringIO()
    _round_trip().dump(doc, out)
    return out.getvalue().encode("utf-8")


def update_in_place(old: Any, new: Any) -> Any:
    """Make round-trip document `old` equal to plain `new`, keeping comments of kept keys.

    Mappings are edited key by key (removed keys dropped, existing keys keep their place, new
    keys appended); anything else is replaced by `new`.
    """
    if isinstance(old, CommentedMap) and isinstance(new, dict):
        for key in [k for k in old if k not in new]:
            del old[key]
        for key, value in new.items():
            old[key] = update_in_place(old[key], value) if key in old else value
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list) and len(old) == len(new):
        for index, value in enumerate(new):
            old[index] = update_in_place(old[index], value)
        return old
    return new


def rewrite(old_bytes: bytes | None, new: dict) -> bytes:
    """Bytes of a file whose content becomes `new`, keeping what it can of `old_bytes`."""
    if not old_bytes:
        return dump(new)
    try:
        old = load_round_trip(old_bytes)
    except Exception:  # noqa: BLE001 - an unreadable old file is simply replaced
        return dump(new)
    if not isinstance(old, CommentedMap):
        return dump(new)
    return dump_round_trip(update_in_place(old, new))
