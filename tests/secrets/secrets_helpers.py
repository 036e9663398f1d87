"""Helpers of the secrets tests."""

from __future__ import annotations

import re
import subprocess

VALUES = "/api/v1/config/environments/1/resources/astute/values"
PASSWORD = "Pl41n-db-Passw0rd"
SEALED = re.compile(
    r"ENC\[v1,aesgcm,kid=([A-Za-z0-9_.-]+),n=[A-Za-z0-9+/]{16},"
    r"d=[A-Za-z0-9+/]+={0,2}\]"
)


def stored(store, path: str = "global/values/astute.yaml", env_id: int = 1) -> bytes:
    """The bytes of a file at the head of an environment."""
    return store.environment_repo(env_id).snapshot().read(path)


def all_objects(root) -> bytes:
    """Every object of every repository of a store root (`git cat-file --batch-all-objects`)."""
    found = b""
    for repo in [root / "catalog.git", *sorted((root / "environments").glob("*.git"))]:
        done = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
            capture_output=True,
            check=True,
        )
        found += done.stdout
    return found
