"""What this node's coordinator knows, shared with the node's gunicorn workers through a file.

The coordinator (one process per node, `coordinator.py`) holds the leader lease and follows
etcd; the workers answer requests. They read its latest word from `<root>/.cluster/state.json`
(written atomically, a few times a second). A worker never trusts it for safety: every commit
is a transaction that etcd refuses unless this node still leads (fencing); the file only says
where to send a write and what `/readyz` answers.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

FOLDER = ".cluster"
PRIMARY = "primary"
REPLICA = "replica"
#: Before the coordinator's first word, or when it stopped speaking (dead, partitioned).
UNKNOWN = "unknown"


@dataclass(frozen=True)
class NodeState:
    """The coordinator's word: role, the leader's term (its key's create revision), lag."""

    node: str
    role: str = UNKNOWN
    term: int = 0
    primary: str | None = None
    primary_url: str | None = None
    behind: list[str] = field(default_factory=list)
    updated: float = 0.0
    #: When the word "primary" ends (the lease's end as the coordinator last renewed it).
    primary_until: float = 0.0

    def age(self) -> float:
        return time.time() - self.updated

    def is_primary(self) -> bool:
        """Primary, with a term, and its lease not yet past its end."""
        return self.role == PRIMARY and bool(self.term) and time.time() < self.primary_until


def folder(root: Path) -> Path:
    return Path(root) / FOLDER


def write(root: Path, state: NodeState) -> None:
    path = folder(root) / "state.json"
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(f".state-{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(state)))
    os.replace(tmp, path)


def read(root: Path, node: str, max_age: float) -> NodeState:
    """The coordinator's word, or UNKNOWN when it is missing or older than `max_age` seconds."""
    try:
        state = NodeState(**json.loads((folder(root) / "state.json").read_text()))
    except (OSError, ValueError, TypeError):
        return NodeState(node)
    if state.age() > max_age:
        return NodeState(node, primary=None, updated=state.updated)
    return state
