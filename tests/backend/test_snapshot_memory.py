"""Reading paths does not leak memory (pygit2 keeps a reference to each path it is given)."""

from __future__ import annotations

import tracemalloc

from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, Repository

ALICE = Author("Alice", "alice@example.com")


def test_looking_paths_up_again_and_again_does_not_grow_memory(tmp_path):
    first = ChangeSet("test: v1")
    first.put("nodes/1/values/a.yaml", b"v: 1\n")
    repo = Repository.create(tmp_path / "r.git", "r", first, ALICE)
    snapshot = repo.snapshot()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        node = 1
        for _ in range(20_000):
            # fresh string objects each time, as every request builds its paths anew
            assert snapshot.exists(f"nodes/{node}/values/a.yaml")
            assert not snapshot.exists(f"nodes/{node}/overrides/a.yaml")
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 200_000, f"{grown} bytes kept by 40,000 lookups"
