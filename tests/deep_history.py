"""A store whose environment 1 has a deep history, built in seconds with `git fast-import`.

The sample deployment (three nodes), then `commits` commits that each set a new `churn` value in
node 3's override document: every walk that looks for anything else (a key of node 1, a key
set at version 2) goes down the whole chain, as on a store that has lived for years. Writing
them through REST took ~20 minutes for 20,000; fast-import takes about a second.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR

CHURNED = "nodes/3/values/override/node.yaml"
#: A key whose history is every commit's: a walk that asks for another one reads them all.
CHURN_KEY = "churn"
#: A key of node 1 set once, when the sample was loaded: its history and its explain walk the
#: whole chain.
STILL_KEY = "fqdn"
DEEP_HISTORY = f"/api/v1/config/environments/1/history?key={STILL_KEY}&limit=10"
LOOKUP = "/api/v1/config/environments/1/nodes/1/resources/astute/values?effective"
NODE_DOCUMENT = "/api/v1/hiera/1/node-1.domain.tld"
_EPOCH = 1_700_000_000


def build(root: Path, commits: int) -> Store:
    """A store at `root` (sample loaded) whose environment 1 then gets `commits` commits."""
    store = Store.init(root)
    store.importer.load_tree(SAMPLE_DIR)
    repo = store.environment_repo(1)
    original = (SAMPLE_DIR / "environments" / "1" / CHURNED).read_bytes()
    subprocess.run(
        ["git", "-C", str(repo.path), "fast-import", "--quiet"],
        input=_stream(repo.head(), original, commits),
        check=True,
    )
    return store


def _stream(head: str, original: bytes, commits: int) -> bytes:
    parts = []
    for number in range(commits):
        when = _EPOCH + number
        who = f"churn <churn@example.com> {when} +0000"
        message = f"churn {number}".encode()
        data = original + f"{CHURN_KEY}: {number}\n".encode()
        parts.append(
            f"commit refs/heads/main\nauthor {who}\ncommitter {who}\ndata {len(message)}\n".encode()
            + message
            + b"\n"
            + (f"from {head}\n".encode() if number == 0 else b"")
            + f"M 100644 inline {CHURNED}\ndata {len(data)}\n".encode()
            + data
            + b"\n"
        )
    return b"".join(parts)
