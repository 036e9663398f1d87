"""The busy-time `pack` task of maintenance: small packs and loose objects rolled up into one
pack, chosen as `git repack --geometric` chooses them, copied by object list.

`git repack --geometric` first walks history with every object of the packs it keeps marked:
on a repository of 100,000 commits that walk took ~0.1 s of CPU per run, whatever the run
rolled up, and under a stream of writes (each round lands as a pack) the task ran twice a
second, beside the writers (docs/performance.md). Here the object ids of the chosen packs are
read from their indexes and handed to `git pack-objects`, which copies them as they are
stored, without a walk (what `git multi-pack-index repack` does). Packs are kept whole:
nothing is pruned, and unreachable objects wait for the cruft repack.

Safe with readers and a kill at any point: `git pack-objects` writes the new pack under a
temporary name and renames its index last; only then are the rolled-up packs removed, each
index last, and loose objects that are now packed (`git prune-packed`). A run killed half-way
leaves objects in two packs, which the next run rolls up again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from gitstore.backend import packfile

#: Each pack kept must hold this many times the objects of all smaller packs together
#: (`git repack --geometric=2`).
FACTOR = 2
#: Files of a pack that mean it is not ours to roll up: one still being received (a push
#: holds a `.keep` until its ref is updated), a cruft pack (`.mtimes`), a promisor pack.
_LEAVE_ALONE = (".keep", ".mtimes", ".promisor")
#: A pack's files, removed in this order: its index last, so a reader that finds the index
#: finds the pack too, as git removes them.
_PACK_FILES = (".pack", ".rev", ".bitmap", ".idx")


def roll_up(repo: Path) -> str | None:
    """Roll up `repo`'s small packs and loose objects; None, or what went wrong."""
    objects = Path(repo) / "objects"
    packs = sorted(_packs(objects / "pack"))
    chosen = [idx for _count, idx in packs[: to_roll_up([count for count, _ in packs])]]
    try:
        loose = list(_loose(objects))
        if not loose and len(chosen) < 2:
            return None
        ids = loose + [object_id for idx in chosen for object_id in packfile.indexed_ids(idx)]
    except OSError as exc:  # a pack index or object folder that cannot be read
        return f"reading what to roll up failed: {exc}"
    done = _git(repo, "pack-objects", "--window=0", "--local", "-q", "--delta-base-offset",
                str(objects / "pack" / "pack"), stdin="\n".join(ids) + "\n")  # fmt: skip
    if done.returncode != 0:
        return f"git pack-objects failed: {done.stderr.strip()[-300:]}"
    made = f"pack-{done.stdout.strip()}.idx"
    for idx in chosen:
        if idx.name != made:  # the same objects as one already there: that one is the new pack
            _remove_pack(idx)
    if loose:
        pruned = _git(repo, "prune-packed", "-q")
        if pruned.returncode != 0:
            return f"git prune-packed failed: {pruned.stderr.strip()[-300:]}"
    return None


def to_roll_up(counts: Sequence[int]) -> int:
    """How many of the smallest packs (`counts`: their objects, ascending) to roll up into one
    so that each pack left holds at least `FACTOR` times the objects of all smaller ones."""
    split = len(counts) - 1
    while split > 0 and counts[split] >= FACTOR * counts[split - 1]:
        split -= 1
    split = split + 1 if split > 0 else 0  # the pair that broke the progression goes too
    rolled = sum(counts[:split])
    while split < len(counts) and counts[split] < FACTOR * rolled:
        rolled += counts[split]  # the new pack would break the progression with this one
        split += 1
    return split


def _packs(folder: Path) -> Iterator[tuple[int, Path]]:
    """(objects, index) of each complete pack of `folder` that may be rolled up."""
    try:
        names = set(os.listdir(folder))
    except FileNotFoundError:
        return
    for name in names:
        stem, dot, extension = name.rpartition(".")
        if extension != "idx" or not stem.startswith("pack-") or f"{stem}.pack" not in names:
            continue
        if any(stem + other in names for other in _LEAVE_ALONE):
            continue
        count = packfile.indexed_count(folder / name)
        if count:
            yield count, folder / name


def _loose(objects: Path) -> Iterator[str]:
    for folder in os.scandir(objects):
        if len(folder.name) == 2 and folder.is_dir(follow_symlinks=False):
            for entry in os.scandir(folder.path):
                if len(entry.name) == 38:
                    yield folder.name + entry.name


def _remove_pack(idx: Path) -> None:
    for extension in _PACK_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(idx.with_suffix(extension))


def _git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    command = ["git", "-c", "pack.threads=1", "--git-dir", str(repo), *args]
    return subprocess.run(command, input=stdin, env=env, capture_output=True, text=True)
