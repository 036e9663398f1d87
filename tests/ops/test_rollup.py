"""The busy-time roll-up of packs (gitstore.ops.rollup): git's geometric choice of packs,
copied by object list, on real repositories and real `git`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitstore.ops import maintenance, rollup


@pytest.mark.parametrize(
    ("counts", "rolled"),
    [
        ([], 0),
        ([5], 0),
        ([1, 2, 4, 8], 0),  # already a progression
        ([3, 3, 100], 2),
        ([1, 1, 1, 1, 3, 1000], 5),  # the four, then the 3 the new pack of 4 would outgrow
        ([6] * 50 + [600_000], 50),  # a busy time's packs beside the full repack's
        ([2, 2, 2, 10, 30], 5),  # the rolled 6 outgrows 10, then the 16 outgrows 30
    ],
)
def test_the_packs_rolled_up_are_those_git_repack_geometric_2_chooses(counts, rolled):
    assert rollup.to_roll_up(counts) == rolled


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    command = ["git", "--git-dir", str(repo), *args]
    return subprocess.run(command, input=stdin, env=env, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def _packs(repo: Path) -> set[str]:
    return {p.name for p in (repo / "objects/pack").glob("pack-*.pack")}


def test_small_packs_and_loose_objects_become_one_pack_and_the_big_pack_stays(fuel_store):
    repo = fuel_store.environment_path(1)
    for i in range(40):
        fuel_store.config.put(1, [("nodes", str(i % 3))], "astute", "values", {"m": i})
    _git(repo, "repack", "-a", "-d", "-q")  # one big pack, as a full repack leaves it
    (big,) = _packs(repo)
    for i in range(5):  # each write lands as a pack of its own
        fuel_store.config.put(1, [("nodes", str(i % 3))], "astute", "values", {"n": i})
    loose = _git(repo, "hash-object", "-w", "--stdin", stdin="pushed\n").strip()
    kept = next(p for p in _packs(repo) if p != big)
    (repo / "objects/pack" / kept).with_suffix(".keep").write_text("a push still landing\n")
    reachable = [
        line.split()[0] for line in _git(repo, "rev-list", "--objects", "--all").splitlines()
    ]
    assert rollup.roll_up(repo) is None
    after = _packs(repo)
    assert big in after and kept in after and len(after) == 3  # and one for the rest
    assert maintenance.usage(repo).loose == 0
    found = _git(repo, "cat-file", "--batch-check", stdin="\n".join([*reachable, loose]) + "\n")
    assert "missing" not in found
    _git(repo, "fsck", "--strict")
    assert rollup.roll_up(repo) is None and _packs(repo) == after  # nothing more to roll up
