"""A change set: what one write does to a tree, described without pygit2.

The facade builds a ChangeSet from a Snapshot; the repository turns it into new tree objects.
This is the one door every write goes through, which is where encryption of secret leaves will
slot in.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Graft:
    """Re-use an existing tree or blob (by object id) at a new path: a cheap move or copy."""

    object_id: str
    is_tree: bool


@dataclass
class ChangeSet:
    """Paths to write (bytes), delete (None) or graft; plus the commit message."""

    message: str = ""
    entries: dict[str, bytes | Graft | None] = field(default_factory=dict)

    def put(self, path: str, data: bytes) -> None:
        self.entries[path] = data

    def delete(self, path: str) -> None:
        """Delete a file or a whole folder."""
        self.entries[path] = None

    def graft(self, path: str, graft: Graft) -> None:
        self.entries[path] = graft

    def __bool__(self) -> bool:
        return bool(self.entries)
