"""Real `git` plumbing for backend tests: make commits and move refs behind gitstore's back."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git on bare repository `repo`; stdout stripped. A failure raises with git's stderr."""
    done = subprocess.run(
        ["git", f"--git-dir={repo}", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def git_commit(repo: Path, files: dict[str, str], parent: str | None, message: str) -> str:
    """A commit made by git alone: `parent`'s tree with `files` written (not moved to any ref)."""
    index = repo / f"test-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        if parent:
            git(repo, "read-tree", parent, env=env)
        else:
            git(repo, "read-tree", "--empty", env=env)
        for path, text in files.items():
            blob = _hash_object(repo, text)
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = git(repo, "write-tree", env=env)
    finally:
        index.unlink(missing_ok=True)
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return git(repo, *args)


def _hash_object(repo: Path, text: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={repo}", "hash-object", "-w", "--stdin"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def linear_history(repo: Path) -> list[str]:
    """Commit ids of `main`, newest first; fails unless every commit but the root has one parent."""
    lines = git(repo, "rev-list", "--parents", "main").splitlines()
    for line in lines[:-1]:
        assert len(line.split()) == 2, f"commit with {len(line.split()) - 1} parents: {line}"
    assert len(lines[-1].split()) == 1, "the root commit has parents"
    return [line.split()[0] for line in lines]


def fsck(repo: Path) -> str:
    """`git fsck --full` output; fails on any error (dangling objects are not errors)."""
    done = subprocess.run(
        ["git", f"--git-dir={repo}", "fsck", "--full", "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for word in ("error", "missing", "broken", "corrupt", "bad "):
        assert word not in output.lower(), output
    return output
