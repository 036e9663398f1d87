"""HTML of the node view's provenance, built in Python: the part of the page repeated per key.

A Fuel controller has ~1,600 effective keys; as a Jinja macro their provenance took most of
the node view's time (bench/console.py, docs/performance.md), built here it is ~3x faster.
Every value is escaped (`html.escape`: faster than building a `Markup` per value); the result
is `Markup`, safe to insert as is.
"""

from __future__ import annotations

import json
from html import escape as _escape
from typing import Any

from markupsafe import Markup


def provenance(why: dict, winner: dict | None, message: str) -> Markup:
    """The `<dl class="provenance">` of a key (level, file, commit, author, date, message) and,
    when several layers hold the key, the layers least specific first with the winner marked."""
    parts = []
    if winner is not None:
        parts += [
            f'<dt>Level</dt><dd class="level">{escape(winner["scope"])} '
            f"({escape(winner['kind'])})</dd>",
            f'<dt>File</dt><dd class="file">{escape(winner["file"])}:{escape(winner["line"])}</dd>',
        ]
    date = escape(why.get("date") or "")
    parts += [
        f'<dt>Commit</dt><dd class="commit"><code>{escape(why.get("commit") or "")}</code></dd>',
        f'<dt>Author</dt><dd class="author">{escape(why.get("author") or "")}</dd>',
        f'<dt>Date</dt><dd class="date"><time datetime="{date}">{date}</time></dd>',
        f'<dt>Message</dt><dd class="message">{escape(message)}</dd>',
    ]
    html = f'<dl class="provenance">{"".join(parts)}</dl>'
    if len(why["layers"]) > 1:
        html += "<p>Layers, least specific first:</p><ol>" + _layers(why) + "</ol>"
    return Markup(html)


def _layers(why: dict) -> str:
    items = []
    for index, layer in enumerate(why["layers"]):
        wins = " <strong>(wins)</strong>" if index == why["winner"] else ""
        items.append(
            f"<li>{escape(layer['scope'])} {escape(layer['kind'])} — "
            f"{escape(layer['file'])}:{escape(layer['line'])}: "
            f"<code>{escape(_json(layer['value']))}</code>{wins}</li>"
        )
    return "".join(items)


def escape(value: Any) -> str:
    return _escape(str(value), quote=True)


def _json(value: Any) -> str:
    """A shadowed value as JSON (the text is escaped by the caller)."""
    return json.dumps(value, ensure_ascii=False)
