"""Scopes of an environment and their effective documents, cached by the blobs they merge.

A scope is the list of level pairs a request names (`[]` is global). History, diff and explain
ask for the effective document of many scopes at many commits; most of them merge the very same
blobs, so merged results are cached by (merge mode, layer blob ids): immutable ids, so the cache
never goes stale and its cost does not grow with history.
"""

from __future__ import annotations

from typing import Any, overload

from gitstore.errors import InvalidInput
from gitstore.layout import GLOBAL, KINDS, EnvironmentView, LevelPairs, layer_file, parse_levels
from gitstore.merge.effective import merge_layers, merge_onto
from gitstore.merge.strategies import folds_left
from gitstore.names import check_level_value, is_number

_SUFFIX = ".yaml"


def effective_document(
    view: EnvironmentView, pairs: LevelPairs, resource: str, inputs: tuple | None = None
) -> dict[str, Any]:
    """The effective document of `resource` at `pairs` (a shared object: read it, never edit).

    `inputs`: `view.layer_inputs(pairs, resource)` when the caller has them already.

    Merging is a left fold over the layers, so the document of a scope is its parent scope's
    document (cached: for a node, the global one every node shares) with the scope's own two
    layers merged over it. A node's first lookup thus merges only its own keys; its document
    shares every other top-level entry with the parent's by identity, which the masking cache
    (`gitstore.secrets.mask`) and the answers' encoding build on.
    """
    pairs = list(pairs)
    if inputs is None:
        inputs = view.layer_inputs(pairs, resource)
    key = (view.merge, inputs)

    def compute() -> dict[str, Any]:
        if not folds_left(view.merge):  # per-key strategies: folded from every layer
            return merge_layers(view.layers(pairs, resource), view.merge)
        own = view.own_layers(pairs, resource)
        parent = (
            effective_document(view, pairs[:-1], resource, inputs[: -len(KINDS)]) if pairs else {}
        )
        return merge_onto(parent, own, view.merge)

    # By (mode, layer blob ids), in the store's `Caches`: shared values, never mutated.
    return view.snapshot.caches.effective_documents.get_or_compute(key, compute)


def layer_paths(pairs: LevelPairs, resource: str) -> list[str]:
    """The repository paths of every layer file of a scope, least specific first."""
    pairs = list(pairs)
    return [layer_file(pair, kind, resource) for pair in [None, *pairs] for kind in KINDS]


def folder(pair: tuple[str, str] | None) -> str:
    """The folder of a level value (`global` for the global level)."""
    return GLOBAL if pair is None else f"{pair[0]}/{pair[1]}"


def default_scopes(*views: EnvironmentView) -> list[list[tuple[str, str]]]:
    """Global, then every level value holding data in any of `views`, each as a scope alone.

    A value of a deeper level is taken with global only (`/nodes/1/`, not under some role):
    level values are independent, and which role a node sits under is not stored.
    """
    scopes: list[list[tuple[str, str]]] = [[]]
    seen: set[tuple[str, str]] = set()
    for view in views:
        for level in view.hierarchy:
            seen.update((level, value) for value in view.level_values(level))
    scopes.extend([pair] for pair in sorted(seen, key=_pair_order(views)))
    return scopes


def _pair_order(views: tuple[EnvironmentView, ...]):
    levels: list[str] = []
    for view in views:
        levels.extend(level for level in view.hierarchy if level not in levels)

    def order(pair: tuple[str, str]):
        value = pair[1]
        return levels.index(pair[0]), (0, int(value), "") if is_number(value) else (1, 0, value)

    return order


def resources_at(view: EnvironmentView, pairs: LevelPairs) -> set[str]:
    """Names of the resources with a document in any folder of the scope."""
    found: set[str] = set()
    for pair in [None, *pairs]:
        for kind in KINDS:
            base = f"{folder(pair)}/{kind}"
            found.update(
                path[len(base) + 1 : -len(_SUFFIX)]
                for path in view.snapshot.walk(base)
                if path.endswith(_SUFFIX)
            )
    return found


@overload
def parse_scope(text: str) -> list[tuple[str, str]]: ...
@overload
def parse_scope(text: str | None) -> list[tuple[str, str]] | None: ...
def parse_scope(text: str | None) -> list[tuple[str, str]] | None:
    """Level pairs from `nodes/1`, `/role/compute/nodes/1/` or `role=compute,nodes=1`."""
    if text is None:
        return None
    text = text.strip()
    if "=" in text:
        return parse_levels(text)
    parts = [part for part in text.strip("/").split("/") if part]
    if len(parts) % 2:
        raise InvalidInput(f"path {text!r} must be level/value pairs like nodes/1", key="path")
    pairs = list(zip(parts[::2], parts[1::2], strict=True))
    for level, value in pairs:
        check_level_value(value, level)
    return pairs
