"""Rendering answers: JSON and YAML for scripts, plain scalars, and tables for people.

Documents keep the key order they were stored with (the order an operator wrote); entity lists
are sorted by id so the output of two runs can be compared line by line.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click
import tabulate

from gitstore import yamlio
from gitstore.names import is_number

DOCUMENT_FORMATS = ("json", "yaml", "plain")
ENTITY_FORMATS = ("table", "json", "yaml")
#: The `--format` option of every command that prints entities.
entity_format = click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(ENTITY_FORMATS),
    default="table",
    show_default=True,
)


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


#: Two spaces between columns; a column is never squeezed below this many characters.
GAP = 2
MIN_COLUMN = 8
SHORT = 24
#: A wrapped cell takes at most this many lines; the rest is cut (see `_shorten`).
MAX_LINES = 4
# tabulate pads headers by two spaces by default; ours are as wide as their widest cell.
tabulate.MIN_PADDING = 0


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Left-aligned columns, a rule under the header, fitted to the terminal's width.

    When the natural table is wider than `terminal_width()`, the widest columns are capped
    and their cells wrapped onto a few lines (tabulate does the wrapping) or, when longer, cut,
    so every row stays readable in a terminal; `--format json|yaml` is the complete answer.
    """
    cells = [[cell(value) for value in row] for row in rows]
    natural = [
        max([len(name)] + [_width(row[i]) for row in cells]) for i, name in enumerate(header)
    ]
    caps = _caps(natural, terminal_width())
    cells = [[_shorten(text, cap) for text, cap in zip(row, caps, strict=True)] for row in cells]
    text = tabulate.tabulate(
        cells,
        headers=list(header),
        tablefmt="simple",
        stralign="left",
        numalign="left",
        disable_numparse=True,
        maxcolwidths=caps if any(caps) else None,
        # (tabulate takes None for a column it leaves whole; its stub says int only)
        maxheadercolwidths=caps if any(caps) else None,  # type: ignore[arg-type]
    )
    return "\n".join(line.rstrip() for line in text.splitlines())


def terminal_width() -> int | None:
    """The width tables must fit: $COLUMNS, else the terminal's; None when not a terminal."""
    columns = os.environ.get("COLUMNS", "")
    if is_number(columns) and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _shorten(text: str, cap: int | None) -> str:
    """At most MAX_LINES wrapped lines of a capped column: a 1,000-character cell is cut
    (ending in "...") rather than made a row of a hundred lines."""
    if cap is None or len(text) <= cap * MAX_LINES:
        return text
    return text[: cap * MAX_LINES - 3].rstrip() + "..."


def _caps(natural: list[int], limit: int | None) -> list[int | None]:
    """Per column, the width to wrap at (None: as wide as it is) so the table fits `limit`.

    The widest columns give way first, down to one cap C shared by all of them; columns of at
    most SHORT characters (ids, dates, names) keep their width while the others can shrink to
    MIN_COLUMN, so that it is the long messages and change lists that wrap.
    """
    room = (limit or 0) - GAP * (len(natural) - 1)
    if limit is None or sum(natural) <= room:
        return [None] * len(natural)
    for keep in (SHORT, 0):
        kept = sum(w for w in natural if w <= keep)
        cap = max(natural)
        while cap > MIN_COLUMN and kept + sum(min(w, cap) for w in natural if w > keep) > room:
            cap -= 1
        if kept + sum(min(w, cap) for w in natural if w > keep) <= room or keep == 0:
            return [cap if w > cap and w > keep else None for w in natural]
    raise AssertionError("unreachable: the last pass always returns")


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
