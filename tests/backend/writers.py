"""Code that runs in child processes of the concurrency and crash tests.

Each child opens the store itself, as a gunicorn worker would. The crash writer pauses at a
chosen point of a commit (by wrapping a backend function in the CHILD only) and announces it
by creating a marker file, so the parent can kill it there with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from gitstore import Store
from gitstore.backend import commits, refs

#: Where the crash writer pauses: what a kill there leaves behind.
CRASH_POINTS = {
    "operation": "the flock held, no object written yet",
    "pack-files": "the pack and its index written under temporary names, not renamed",
    "pack": "the pack renamed into place, its index not yet (a pack no reader uses)",
    "objects": "blob, trees and commit landed as a pack, the ref lock not taken",
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

    real_cas, real_rename, real_build = refs.compare_and_swap, os.rename, commits.build_tree

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
        if Path(source).name.startswith(paused_at):
            pause()
        return real_rename(source, target, *args, **kwargs)

    paused_at = {"ref-lock": "main.lock", "pack-files": "tmp_pack_", "pack": "tmp_idx_"}.get(point)

    if point == "operation":
        commits.build_tree = build_tree
    elif point in ("objects", "ref-moved"):
        refs.compare_and_swap = compare_and_swap
    elif paused_at is not None:
        os.rename = rename
    else:
        raise ValueError(f"unknown crash point {point!r}")


def write_acknowledged(root: str, env_id: int, prefix: str, count: int, journal: str) -> None:
    """Set keys `<prefix><n>` one commit each; append each key to `journal` once acknowledged,
    and `error <message>` if a write fails (a stalled lock holder must only delay writers)."""
    store = Store(root)
    with open(journal, "a", buffering=1) as out:
        for n in range(count):
            try:
                store.config.update_keys(
                    env_id, [], "astute", "values", "set", [[f"{prefix}{n}", n]]
                )
            except Exception as exc:  # noqa: BLE001 - the parent judges every outcome
                out.write(f"error {type(exc).__name__}: {exc}\n")
                return
            out.write(f"{prefix}{n}\n")


def swap_stalled(git_dir: str, expected: str, new: str, marker: str, answer: str) -> None:
    """Move main from `expected` to `new` as mirror sync does (`refs.compare_and_swap`, no
    write flock), stopping itself with SIGSTOP while it holds `main.lock` with `new` inside;
    write what the swap answered to `answer` once continued."""
    real_rename = os.rename

    def rename(source, target, *args, **kwargs):
        if str(source).endswith("main.lock"):
            Path(marker).touch()
            os.kill(os.getpid(), signal.SIGSTOP)
        return real_rename(source, target, *args, **kwargs)

    os.rename = rename
    try:
        moved = refs.compare_and_swap(Path(git_dir), "refs/heads/main", expected, new)
        outcome = "moved" if moved else "refused"
    except Exception as exc:  # noqa: BLE001 - the parent judges every outcome
        outcome = f"error {type(exc).__name__}: {exc}"
    finally:
        os.rename = real_rename
    Path(answer).write_text(outcome)
