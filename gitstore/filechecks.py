"""What the gate's rules found in one file, kept by immutable ids so a tree check costs what
changed, not the size of the environment.

A rule that judges one file alone (its YAML, its schema, its secrets, its limits) reports the
same problems for the same file content in the same context. `TreeCheck.per_file` keys what
such a check reported by (rule, path, blob id, context), where the context names everything
else the rule reads: the catalog commit (definitions and schemas), the blob of
`environment.yaml` (components, `secret_keys`) and the limits in force. A later check of a tree
holding that file replays the problems instead of parsing the file again: the report is the
same problems in the same order, since a replay goes through the same de-duplication.

The Store owns one `FileChecks` and hands it to the services that validate trees: the push
gate over HTTP and mirror syncs (`gitops.service`) and the console's previews
(`gitops.preview`). Which rules keep their results, and by what key: docs/gitops.md.
"""

from __future__ import annotations

from collections.abc import Hashable

from gitstore.backend.cache import LRUCache

#: Entries kept: a few hundred bytes each (a key of ids and, almost always, an empty tuple).
#: A check of a 1,000-node environment keeps ~6,000 (three rules over its ~2,000 files), so
#: this holds several environments, or several contexts of one, within ~15 MB of a worker.
MAX_ENTRIES = 50_000


class FileChecks:
    """Problems per (rule, path, blob id, context); the values are read-only tuples."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._cache = LRUCache(max_entries, name="file_checks")

    def get(self, key: Hashable) -> tuple[dict, ...] | None:
        return self._cache.get(key)

    def put(self, key: Hashable, problems: list[dict]) -> None:
        self._cache.put(key, tuple(dict(p) for p in problems))

    def __len__(self) -> int:
        return len(self._cache)
