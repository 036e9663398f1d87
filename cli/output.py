"""Rendering answers: JSON and YAML for scripts, plain scalars, and tables for people.

Documents keep the key order they were stored with (the order an operator wrote); entity lists
are sorted by id so the output of two runs can be compared line by line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from gitstore import yamlio

DOCUMENT_FORMATS = ("json", "yaml", "plain")
ENTITY_FORMATS = ("table", "json", "yaml")


def render(data: Any, fmt: str) -> str:
    """`data` as json, yaml or plain text (a string as is, None as nothing, the rest as JSON)."""
    if fmt == "plain":
        if data is None:
            return ""
        return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False)
    if fmt == "yaml":
        return yamlio.dump(data).decode("utf-8").rstrip("\n")
    raise ValueError(f"unknown format {fmt!r}")


def emit(data: Any, fmt: str) -> None:
    text = render(data, fmt)
    if text or fmt != "plain":
        click.echo(text)


def cell(value: Any) -> str:
    """One table cell: lists comma-joined, mappings as compact JSON, None empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ", ".join(cell(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Columns padded to their widest cell, a rule under the header."""
    cells = [[cell(value) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(header)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule] + [line(row) for row in cells])


def emit_list(
    entities: list[dict], columns: Sequence[str], fmt: str, *, ordered: bool = False
) -> None:
    """A list of entities sorted by id (unless already `ordered`): a table, or json/yaml."""
    if not ordered:
        entities = sorted(entities, key=_sort_key)
    if fmt == "table":
        click.echo(table([[e.get(c) for c in columns] for e in entities], columns))
    else:
        emit(entities, fmt)


def emit_entity(entity: dict, fmt: str) -> None:
    """One entity: a field/value table, or json/yaml."""
    if fmt == "table":
        click.echo(table([[name, value] for name, value in entity.items()], ["field", "value"]))
    else:
        emit(entity, fmt)


def _sort_key(entity: dict) -> tuple:
    ident = entity.get("id")
    if isinstance(ident, int):
        return (0, ident, "")
    return (1, 0, str(entity.get("name", "")))
