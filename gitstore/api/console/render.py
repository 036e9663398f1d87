"""HTML of the node view built in Python: the values tree (the part repeated per key) and a
key's provenance.

A Fuel controller has ~1,600 effective keys; as Jinja macros the per-key parts took most of the
node view's time (bench/console.py, docs/performance.md), and built here they cost a fraction
of it. The tree holds no provenance: a key's is fetched when it is opened (`why` in pages.py),
which keeps a controller's page small. Every value is escaped (`html.escape`: faster than
building a `Markup` per value); the results are `Markup`, safe to insert as is.
"""

from __future__ import annotations

import json
from html import escape as _escape
from typing import Any

from markupsafe import Markup

#: The longest text the node view's filter box matches (longer is cut).
MAX_FILTER = 200


def values_tree(value: dict, wanted: str = "") -> tuple[Markup, int]:
    """The `<li>`s of a resource's tree, and how many leaves they show: a mapping opens to its
    keys, a leaf (a scalar, a list or an empty mapping) shows its value as JSON and, unless it
    is an empty mapping, opens to its provenance. With `wanted`, only leaves whose dotted path
    or JSON value holds that text (ignoring case) are shown, with the mappings above them."""
    parts: list[str] = []
    shown = _items(value, (), wanted.casefold(), parts)
    return Markup("".join(parts)), shown


def _items(value: dict, path: tuple, wanted: str, parts: list[str]) -> int:
    shown = 0
    for key, child in value.items():
        here = (*path, str(key))
        if isinstance(child, dict) and child:
            mark = len(parts)
            parts.append(
                f'<li><details class="map" open><summary><code>{escape(key)}</code></summary><ul>'
            )
            inner = _items(child, here, wanted, parts)
            if inner:
                parts.append("</ul></details></li>")
                shown += inner
            else:
                del parts[mark:]
            continue
        dotted, text = ".".join(here), _json(child)
        if wanted and wanted not in dotted.casefold() and wanted not in text.casefold():
            continue
        shown += 1
        label = f'<code>{escape(key)}</code>: <code class="value">{escape(text)}</code>'
        if isinstance(child, dict):  # an empty mapping: no layer sets a key here
            parts.append(f'<li class="empty">{label}</li>')
        else:  # its dotted path is its keys up the tree (a path per key was a fifth of a page)
            parts.append(f"<li><details><summary>{label}</summary></details></li>")
    return shown


def provenance(
    why: dict, winner: dict | None, message: str, commit_url: str | None = None
) -> Markup:
    """The `<dl class="provenance">` of a key (level, file, commit, author, date, message) and,
    when several layers hold the key, the layers least specific first with the winner marked;
    the commit links to `commit_url` when given."""
    parts = []
    if winner is not None:
        parts += [
            f'<dt>Level</dt><dd class="level">{escape(winner["scope"])} '
            f"({escape(winner['kind'])})</dd>",
            f'<dt>File</dt><dd class="file">{escape(winner["file"])}:{escape(winner["line"])}</dd>',
        ]
    date = escape(why.get("date") or "")
    parts += [
        f'<dt>Commit</dt><dd class="commit">{_commit(why.get("commit") or "", commit_url)}</dd>',
        f'<dt>Author</dt><dd class="author">{escape(why.get("author") or "")}</dd>',
        f'<dt>Date</dt><dd class="date"><time datetime="{date}">{date}</time></dd>',
        f'<dt>Message</dt><dd class="message">{escape(message)}</dd>',
    ]
    html = f'<dl class="provenance">{"".join(parts)}</dl>'
    if len(why["layers"]) > 1:
        html += "<p>Layers, least specific first:</p><ol>" + _layers(why) + "</ol>"
    return Markup(html)


def _commit(commit: str, url: str | None) -> str:
    code = f"<code>{escape(commit)}</code>"
    return f'<a href="{escape(url)}">{code}</a>' if url and commit else code


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
