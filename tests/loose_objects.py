"""Loose object files for tests that damage one object on disk.

gitstore writes each commit's objects as a pack (`gitstore.backend.newobjects`), so a test that
overwrites or deletes one object's file first turns the repository's packs into loose objects.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def loose_object(repo: Path, object_id: str) -> Path:
    """The file of `object_id` in `repo`, after every pack was unpacked into loose objects
    (git's `unpack-objects`; the packs are removed). Call it before a server opens `repo`: a
    handle that loaded a pack keeps reading it."""
    folder = Path(repo) / "objects" / "pack"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for pack in sorted(folder.glob("*.pack")):
        data = pack.read_bytes()
        for path in folder.glob(pack.stem + ".*"):
            path.unlink()
        subprocess.run(
            ["git", "--git-dir", str(repo), "unpack-objects", "-q"],
            input=data, env=env, check=True,
        )  # fmt: skip
    return Path(repo) / "objects" / object_id[:2] / object_id[2:]
