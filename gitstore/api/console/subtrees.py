"""`/ui/environments/<id>/nodes/<node>/subtree?resource=R&key=K`: one folded mapping or list of
the node page (render.py folds the large ones: a real cluster's node lists); without `key`,
the resource's whole values; `&start=N` the keys of a mapping from the Nth (render.py shows
`PAGE_KEYS` at a time).

It reads the same Hiera node document as the node page, so the same masking (`?reveal=1` only
for the `secrets` role, audited) and the same access (`auth.needed` maps the path to its
environment); the node page's placeholders pin `?version=` to the page's commit and carry its
`?filter=`. `?fragment=1` answers the tree alone: the `<li>`s of a mapping (its own large keys
folded again) or the JSON of a list, which the page's script puts in the placeholder; the
whole page, with its own tree, serves a browser without JavaScript.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flask import g, render_template, request

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.console.render import matching, values_tree
from gitstore.api.console.shared import fold_url, query_arg, wanted_filter
from gitstore.api.http import app_store, flag
from gitstore.errors import InvalidInput, NotFound
from gitstore.keypaths import MAX_PATH, split_dotted

#: The longest `key` taken (a dotted path of `MAX_PATH` segments of ordinary keys fits).
MAX_KEY = 4096
_DIGITS = re.compile(r"[0-9]{1,9}")


@bp.get("/environments/<int:env_id>/nodes/<node>/subtree")
def subtree(env_id: int, node: str):
    version, fragment, reveal = pinned(), flag("fragment"), flag("reveal")
    resource, key = query_arg("resource", required=True) or "", query_arg("key") or ""
    segments = _segments(key) if key else []
    document = (
        app_store()
        .hiera.node_document(env_id, node, version, reveal=reveal, who=g.get("user"))
        .data
    )
    values = document["resources"].get(resource)
    if values is None:
        raise NotFound(f"node {document['node']} has no resource {resource!r}", key="resource")
    value, path = _walk(values, segments, key, resource)
    wanted = wanted_filter()
    tree = text = None
    start = 0
    if isinstance(value, dict):
        shown = matching(value, wanted.casefold(), path)
        start = _start(len(shown))
        url = fold_url(env_id, document, resource, wanted, reveal)
        tree = values_tree(shown, url, path, start)
    else:
        text = json.dumps(value, ensure_ascii=False)
    return render_template(
        "console/subtree_fragment.html" if fragment else "console/subtree.html",
        env_id=env_id,
        node=document,
        resource=resource,
        key=".".join(path),
        tree=tree,
        text=text,
        entries=len(value),
        start=start,
        filter=wanted,
        version=version,
        reveal=reveal,
    )


def _start(keys: int) -> int:
    """`?start=`: the first key shown of a mapping with more than `PAGE_KEYS` (0 if absent)."""
    text = (request.args.get("start") or "0").strip()
    if not _DIGITS.fullmatch(text) or int(text) > max(keys - 1, 0):
        raise InvalidInput(
            f"start {text[:20]!r} is no key's position (0 to {keys - 1})", key="start"
        )
    return int(text)


def _segments(key: str) -> list[str]:
    if len(key) > MAX_KEY:
        raise InvalidInput(f"key is longer than {MAX_KEY} characters", key="key")
    segments = split_dotted(key)
    if len(segments) > MAX_PATH:
        raise InvalidInput(f"key {key[:80]!r}… has more than {MAX_PATH} segments", key="key")
    return segments


def _walk(values: dict, segments: list[str], key: str, resource: str) -> tuple[Any, tuple]:
    """The mapping or list at `segments` and its path as keys: each step is a key of a mapping
    (a key holding dots takes as many segments as it has parts); lists are leaves of the tree,
    so no step goes into one."""
    here: Any = values
    path: list[str] = []
    at = 0
    while at < len(segments):
        keys = {str(name): child for name, child in here.items()} if isinstance(here, dict) else {}
        end = next(
            (end for end in range(at + 1, len(segments) + 1) if ".".join(segments[at:end]) in keys),
            None,
        )
        if end is None:
            raise NotFound(f"{resource} has no mapping or list at key {key!r}", key="key")
        path.append(".".join(segments[at:end]))
        here, at = keys[path[-1]], end
    what = f"key {key!r} of {resource}" if key else resource
    if not isinstance(here, (dict, list)):
        raise InvalidInput(f"{what} is a value, not a mapping or list to open", key="key")
    if not here:
        raise InvalidInput(f"{what} is empty: nothing to open", key="key")
    return here, tuple(path)
