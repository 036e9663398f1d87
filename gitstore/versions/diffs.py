"""The data-level difference of an environment between two versions: its blast radius.

For each scope, each resource's effective document at `from` is compared with the one at `to`.
Most scopes are answered without merging them:

- a scope whose layer blobs (and merge mode) are the same at both versions did not change;
- a scope whose own layers are the same but whose parent's document changed (a global write, at
  every node) changes as its parent did, unless its own layers hold keys on the changed paths
  (`gitstore.merge.reach`): then only the top-level keys the parent's change names are merged.

So a global write costs one merge of the global document, then a look at each node's own keys
along the changed paths: not a merge and a diff of every node's ~1,600 keys. That look asks a
`KeyIndex` of each layer blob, kept by blob id: a few bytes per key, where the parsed documents
of 1,000 nodes' facts do not fit the parse cache and would be parsed again by every diff.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gitstore.backend.cache import Caches
from gitstore.configdb.scopes import default_scopes, effective_document, resources_at
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.layout import (
    KINDS,
    EnvironmentView,
    LevelPairs,
    layer_file,
    parse_data_path,
    scope_of,
)
from gitstore.merge.diff import Difference, differences, sections
from gitstore.merge.effective import Layer, merge_onto
from gitstore.merge.reach import KeyIndex, restricted, touches_indexed
from gitstore.merge.strategies import folds_left


def diff_environment(
    before: EnvironmentView,
    after: EnvironmentView,
    scopes: Sequence[LevelPairs] | None = None,
    resource: str | None = None,
    differ: ScopeDiffs | None = None,
    deadline: Deadline = UNBOUNDED,
) -> dict[str, dict[str, Any]]:
    """`{scope: {resource: {added, removed, changed}}}` for every scope that differs.

    `scopes` defaults to global plus every level value with data at either version; `resource`
    limits the comparison to one resource. `differ`: a `ScopeDiffs` of the same two views, to
    share what an earlier call of the same caller computed. Each
    document compared is a step of `deadline`.
    """
    found: dict[str, dict[str, Any]] = {}
    differ = differ or ScopeDiffs(before, after)
    for pairs in default_scopes(before, after) if scopes is None else scopes:
        names = (
            [resource]
            if resource
            else sorted(resources_at(before, pairs) | resources_at(after, pairs))
        )
        for name in names:
            deadline.check()
            change = differ.change(pairs, name)
            if change:
                found.setdefault(scope_of(pairs), {})[name] = change
    return found


def keep_indexes(
    caches: Caches,
    files: Iterable[tuple[str, str]],
    documents: Callable[[str], dict | None],
    deadline: Deadline = UNBOUNDED,
) -> int:
    """Keep in `caches` the `KeyIndex` of every level layer file among `files` ((path, blob
    id)) whose mapping `documents` (blob id -> parsed mapping, None: not parsed) holds, so that
    a later diff asks the index instead of parsing the file. Each index made is a step of
    `deadline`. Returns how many were made."""
    made = 0
    for path, blob in files:
        parsed = parse_data_path(path)
        if parsed is None or parsed[0] is None or caches.key_indexes.get(blob) is not None:
            continue  # global layers are merged, never indexed
        document = documents(blob)
        if document is None:
            continue
        deadline.check()
        index = KeyIndex(document)
        caches.key_indexes.put(blob, index, index.size)
        made += 1
    return made


class ScopeDiffs:
    """The differences of scopes of one environment between two views, each scope's derived
    from its parent's where the scope's own layers did not change (memoised per call).

    Answers are shared between scopes that change alike: read them, never edit them.
    """

    def __init__(
        self,
        before: EnvironmentView,
        after: EnvironmentView,
        documents: Callable[[str], dict | None] | None = None,
    ) -> None:
        """`documents`: blob id -> the mapping a caller parsed already (None: not parsed), as
        `Snapshot.read_mapping` reads it (the edit preview's gate parsed the same files)."""
        self.before = before
        self.after = after
        self._documents = documents
        self._same_mode = before.merge == after.merge
        # A scope's change follows from its parent's only for a merge that folds its layers
        # over the parent's result (deep or shallow); per-key strategies merge whole chains.
        self._derived = self._same_mode and folds_left(after.merge)
        #: (pairs, resource) -> (differences, their `sections`)
        self._found: dict[tuple, tuple[list[Difference], dict]] = {}
        #: blob id -> the document parsed for its index by the scope being answered (a cold
        #: index and a restriction of the same layer then parse it once)
        self._parsed: dict[str, dict | None] = {}

    def change(self, pairs: LevelPairs, resource: str) -> dict:
        """`{added, removed, changed}` of the scope's effective document, `{}` if equal."""
        return self._scope(tuple(map(tuple, pairs)), resource)[1]

    def _scope(self, pairs: tuple, resource: str) -> tuple[list[Difference], dict]:
        key = (pairs, resource)
        if key not in self._found:
            self._found[key] = self._compute(pairs, resource)
        return self._found[key]

    def _compute(self, pairs: tuple, resource: str) -> tuple[list[Difference], dict]:
        old = self.before.layer_inputs(pairs, resource)
        new = self.after.layer_inputs(pairs, resource)
        if self._same_mode and old == new:
            return [], {}
        if self._derived and pairs and old[-len(KINDS) :] == new[-len(KINDS) :]:
            inherited = self._scope(pairs[:-1], resource)
            if not inherited[0]:
                return inherited
            return self._through_own_layers(pairs, resource, inherited, old, new)
        found = differences(
            effective_document(self.before, pairs, resource, old),
            effective_document(self.after, pairs, resource, new),
        )
        return found, sections(found)

    def _restricted(
        self, pair: tuple, kind: str, resource: str, blob: str | None, keys: frozenset
    ) -> dict | None:
        """The layer file's document `restricted` to `keys` (None where the file is absent)."""
        if blob is None:
            return None
        path = layer_file(pair, kind, resource)

        def compute() -> tuple[dict | None, int]:
            whole = self._read(path, blob) or {}
            part = restricted(whole, keys)
            share = (self.after.snapshot.size(path) or 0) * len(part) // max(len(whole), 1)
            return part, 64 + share

        kept = self.after.snapshot.caches.restricted_layers
        return kept.get_or_compute((blob, keys), compute, lambda found: found[1])[0]

    def _index(self, path: str, blob: str) -> KeyIndex:
        """The `KeyIndex` of layer file `path` (blob `blob`), parsed only when not kept."""
        return self.after.snapshot.caches.key_indexes.get_or_compute(
            blob, lambda: KeyIndex(self._read(path, blob)), lambda index: index.size
        )

    def _read(self, path: str, blob: str) -> dict | None:
        if blob not in self._parsed:
            known = self._documents(blob) if self._documents is not None else None
            self._parsed[blob] = (
                known if known is not None else self.after.snapshot.read_mapping(path)
            )
        return self._parsed[blob]

    def _through_own_layers(
        self, pairs: tuple, resource: str, inherited: tuple, old: tuple, new: tuple
    ) -> tuple[list[Difference], dict]:
        """The scope's change when only its parent's document changed (`merge.reach`)."""
        paths = [path for _, path, _, _ in inherited[0]]
        mode = self.after.merge
        blobs = new[-len(KINDS) :]  # the same blobs at both versions
        self._parsed.clear()
        indexes = [
            self._index(layer_file(pairs[-1], kind, resource), blob)
            for kind, blob in zip(KINDS, blobs, strict=True)
            if blob is not None
        ]
        if not touches_indexed(indexes, paths, mode):
            return inherited
        keys = frozenset(path[0] for path in paths)
        parent = pairs[:-1]
        layers = [
            Layer(scope_of(pairs), kind, self._restricted(pairs[-1], kind, resource, blob, keys))
            for kind, blob in zip(KINDS, blobs, strict=True)
        ]
        cut = -len(KINDS)
        found = differences(
            merge_onto(
                restricted(effective_document(self.before, parent, resource, old[:cut]), keys),
                layers,
                mode,
            ),
            merge_onto(
                restricted(effective_document(self.after, parent, resource, new[:cut]), keys),
                layers,
                mode,
            ),
        )
        return found, sections(found)
