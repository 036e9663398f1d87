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
from collections.abc import Collection
from html import escape as _escape
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

#: The longest text the node view's filter box matches (longer is cut).
MAX_FILTER = 200
# In a large cluster a node's values hold the cluster's lists (Fuel's `nodes` and
# `network_metadata.nodes`: tens of thousands of entries at 1,000 nodes), so the tree sends a
# large mapping or list folded: a placeholder fetched when opened (subtrees.py).
#: A mapping or list holding more entries than this (keys and list items, counted all the way
#: down) is sent folded: a placeholder whose content is fetched when it is opened.
FOLD_ENTRIES = 1000
#: When the keys of one mapping would still show more entries than this unfolded (a mapping of
#: a thousand small mappings), every non-empty mapping and list among them is sent folded.
CROWDED_ENTRIES = 4000
#: A tree shows at most this many keys of the mapping it renders, then a link to the next ones
#: (a mapping's keys are a line each, even folded).
PAGE_KEYS = 1000


def entries(value: Any) -> int:
    """The keys and list items `value` holds, counted all the way down (0 for a scalar)."""
    children: Collection[Any]
    if isinstance(value, dict):
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return 0
    return len(children) + sum(entries(c) for c in children if isinstance(c, (dict, list)))


def matching(value: dict, wanted: str, path: tuple = ()) -> dict:
    """The part of mapping `value` (at dotted `path`) whose leaves' dotted path or JSON value
    holds `wanted` (casefolded), with the mappings above them; all of it without `wanted`."""
    if not wanted:
        return value
    kept = {}
    for key, child in value.items():
        here = (*path, str(key))
        if isinstance(child, dict) and child:
            inner = matching(child, wanted, here)
            if inner:
                kept[key] = inner
        elif wanted in ".".join(here).casefold() or wanted in _json(child).casefold():
            kept[key] = child
    return kept


def values_tree(value: dict, fold_url: str, path: tuple = (), start: int = 0) -> Markup:
    """The `<li>`s of a mapping's tree (a resource's values, or a subtree at keys `path`): a
    mapping opens to its keys, a leaf (a scalar, a list or an empty mapping) shows its value as
    JSON and, unless it is an empty mapping, opens to its provenance. A large mapping or list
    is folded (`FOLD_ENTRIES`, `CROWDED_ENTRIES`): it opens to a link to `fold_url` plus
    `&key=<its dotted path>`, which the page's script fetches in its place. Of `value`'s own
    keys, `PAGE_KEYS` from the `start`th are shown, then a link to the next ones."""
    parts: list[str] = []
    keys = list(value)
    shown = keys[start : start + PAGE_KEYS]
    _items(
        {key: value[key] for key in shown} if len(shown) < len(value) else value,
        path,
        fold_url,
        parts,
    )
    if start + PAGE_KEYS < len(keys):
        following = min(len(keys), start + 2 * PAGE_KEYS)
        url = f"{fold_url}&key={_key_arg(path)}&start={start + PAGE_KEYS}"
        parts.append(
            f'<li class="more"><a class="more" href="{escape(url)}">Show keys '
            f"{start + PAGE_KEYS + 1:,}–{following:,} of {len(keys):,}</a></li>"
        )
    return Markup("".join(parts))


def _items(value: dict, path: tuple, fold_url: str, parts: list[str]) -> None:
    sizes = {key: entries(child) for key, child in value.items()}
    unfolded = sum(1 + (size if size <= FOLD_ENTRIES else 0) for size in sizes.values())
    crowded = unfolded > CROWDED_ENTRIES
    for key, child in value.items():
        here = (*path, str(key))
        if sizes[key] and (crowded or sizes[key] > FOLD_ENTRIES):
            parts.append(_folded(key, child, sizes[key], f"{fold_url}&key={_key_arg(here)}"))
        elif isinstance(child, dict) and child:
            parts.append(
                f'<li><details class="map" open><summary><code>{escape(key)}</code></summary><ul>'
            )
            _items(child, here, fold_url, parts)  # it holds at most FOLD_ENTRIES: nothing folds
            parts.append("</ul></details></li>")
        else:
            parts.append(_leaf(key, child))


def _leaf(key: Any, value: Any) -> str:
    label = f'<code>{escape(key)}</code>: <code class="value">{escape(_json(value))}</code>'
    if isinstance(value, dict):  # an empty mapping: no layer sets a key here
        return f'<li class="empty">{label}</li>'
    # its dotted path is its keys up the tree (a path per key was a fifth of a page)
    return f"<li><details><summary>{label}</summary></details></li>"


def _folded(key: Any, value: dict | list, size: int, url: str) -> str:
    """A folded mapping opens to a link to its keys (the script puts them in its `<ul>`); a
    folded list (a leaf) to its provenance and a link to its whole value."""
    count = len(value)
    link = f'<a class="fold" href="{escape(url)}">'
    if isinstance(value, dict):
        what = f"{count:,} {'key' if count == 1 else 'keys'}, {size:,} entries in all"
        return (
            f'<li><details class="map folded"><summary><code>{escape(key)}</code> '
            f'<span class="count">({what})</span></summary>'
            f"<ul><li>{link}Show the keys of <code>{escape(key)}</code></a></li></ul>"
            "</details></li>"
        )
    what = f"a list of {count:,} {'item' if count == 1 else 'items'}, {size:,} entries in all"
    return (
        f'<li><details class="folded"><summary><code>{escape(key)}</code>: '
        f'<code class="value">[…]</code> <span class="count">({what})</span></summary>'
        f'<p class="fold">{link}Show the whole value of <code>{escape(key)}</code></a></p>'
        "</details></li>"
    )


def _key_arg(path: tuple) -> str:
    return quote(".".join(path), safe="")


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
