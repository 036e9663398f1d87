"""Code that runs in child processes of the concurrency and crash tests.

Each child opens the store itself, as a gunicorn worker would. The crash writer pauses at a
chosen point of a commit (by wrapping a backend function in the CHILD only) and announces it
by creating a marker file, so the parent can kill it there with SIGKILL.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gitstore import Store
from gitstore.backend import refs, repository

#: Where the crash writer pauses: what a kill there leaves behind.
CRASH_POINTS = {
    "operation": "the flock held, no object written yet",
    "objects": "blob, trees and commit written, the ref lock not taken",
    "ref-lock": "main.lock created and holding the new id, not yet renamed over main",
    "ref-moved": "main moved, the write lock still held, the caller not yet answered",
}


def write_keys(
    root: str, env_id: int, resources: list[str], prefix: str, count: int, barrier
) -> None:
    """Set key `<prefix><n>` = n, one commit each, of the global values of `resources` in turn."""
    store = Store(root)
    barrier.wait()
    for n in range(count):
        resource = resources[n % len(resources)]
        store.config.update_keys(env_id, [], resource, "values", "set", [[f"{prefix}{n}", n]])


def crash_while_writing(root: str, env_id: int, point: str, marker: str) -> None:
    """Start a write that pauses forever at `point` after creating `marker`."""
    _pause_at(point, Path(marker))
    Store(root).config.update_keys(env_id, [], "astute", "values", "set", [["crashed", True]])


def _pause_at(point: str, marker: Path) -> None:
    def pause() -> None:
        marker.touch()
        while True:
            time.sleep(60)

    real_cas, real_rename, real_build = refs.compare_and_swap, os.rename, repository.build_tree

    def build_tree(*args, **kwargs):
        pause()
        return real_build(*args, **kwargs)

    def compare_and_swap(*args, **kwargs):
        if point == "objects":
            pause()
        moved = real_cas(*args, **kwargs)
        pause()
        return moved

    def rename(source, target, *args, **kwargs):
        if str(source).endswith("main.lock"):
            pause()
        return real_rename(source, target, *args, **kwargs)

    if point == "operation":
        repository.build_tree = build_tree
    elif point in ("objects", "ref-moved"):
        refs.compare_and_swap = compare_and_swap
    elif point == "ref-lock":
        os.rename = rename
    else:
        raise ValueError(f"unknown crash point {point!r}")
