"""Git storage: the only package that imports pygit2.

libgit2 keeps a parsed tree in its per-repository object cache only if the tree is at most
4 KiB. A level folder of a large environment (`nodes/` with thousands of value folders) is far
bigger, so every path lookup below it would inflate and parse it again, and validating a
large environment took many times as long. Trees up to
`TREE_CACHE_LIMIT` are cached.

libgit2 bounds the whole object cache of a process (every handle of every repository) by
`cache_max_size`, 256 MiB by default: each commit that changes a node makes a new `nodes/` tree,
so under steady writes the cache fills up to that bound. `CACHE_MAX_BYTES` keeps a gunicorn
worker well inside its memory budget (docs/performance.md); reads at the head need only the
newest trees.
"""

from __future__ import annotations

import pygit2

TREE_CACHE_LIMIT = 16 * 1024 * 1024
CACHE_MAX_BYTES = 64 * 1024 * 1024

pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)
pygit2.settings.cache_max_size(CACHE_MAX_BYTES)
