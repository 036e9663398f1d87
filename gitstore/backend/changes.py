"""A change set: what one write does to a tree, described without pygit2.

The facade builds a ChangeSet from a Snapshot; the repository turns it into new tree objects.
This is the one door every write goes through, which is where encryption of secret leaves will
slot in.

Entries apply in the order they were made, the way a sequence of file-system operations would:
`delete("a")` then `put("a/b", ...)` leaves a folder `a` holding only `b`, and `put("a/b", ...)`
then `delete("a")` leaves no `a`. To keep that true when the tree is built, an entry replaces
every earlier entry at or below its path and moves to the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitstore.errors import InvalidInput

_BAD_SEGMENTS = frozenset({"", ".", "..", ".git"})


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
        """Write file `path` (replacing a file or a whole folder there)."""
        self._record(path, bytes(data))

    def delete(self, path: str) -> None:
        """Delete a file or a whole folder (nothing happens if `path` does not exist)."""
        self._record(path, None)

    def graft(self, path: str, graft: Graft | None) -> None:
        """Place an existing tree or blob at `path` (None, as `Snapshot.graft` answers for a
        missing path: delete it)."""
        self._record(path, graft)

    def _record(self, path: str, change: bytes | Graft | None) -> None:
        path = _normal(path)
        below = path + "/"
        for earlier in [p for p in self.entries if p == path or p.startswith(below)]:
            del self.entries[earlier]
        self.entries[path] = change

    def __bool__(self) -> bool:
        return bool(self.entries)


def _normal(path: str) -> str:
    """`path` without surrounding slashes; InvalidInput if a segment cannot name a tree entry."""
    normal = path.strip("/")
    if any(segment in _BAD_SEGMENTS for segment in normal.split("/")):
        raise InvalidInput(
            f"path {path!r} cannot be stored: empty, '.', '..' or '.git' segment", path=path
        )
    return normal
