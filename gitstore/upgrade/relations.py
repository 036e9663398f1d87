"""The upgrade relation between an original environment and its seed.

It is `upgrade: {role: original|seed, peer: <id>}` in both `environment.yaml`s, and counts only
while both sides name each other: the original is claimed (one commit) before the seed exists,
so a crash in between leaves a one-sided claim that counts for nothing. Deleting either
environment removes the relation from the other (`environment_deleted`, which the Store
subscribes to the environments' deletions), so the original can be cloned again.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.errors import InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_FILE, EnvironmentView
from gitstore.repositories import Repositories

FIELD = "upgrade"
ORIGINAL, SEED = "original", "seed"


@dataclass(frozen=True)
class Relation:
    """One side of a live upgrade relation."""

    env_id: int
    role: str
    peer: int

    @property
    def original(self) -> int:
        return self.env_id if self.role == ORIGINAL else self.peer

    @property
    def seed(self) -> int:
        return self.peer if self.role == ORIGINAL else self.env_id


def claimed(doc: dict) -> tuple[str, int] | None:
    """The `(role, peer)` an `environment.yaml` names (one side only), or None."""
    value = doc.get(FIELD)
    if not isinstance(value, dict) or value.get("role") not in (ORIGINAL, SEED):
        return None
    peer = value.get("peer")
    if isinstance(peer, bool) or not isinstance(peer, int):
        return None
    return value["role"], peer


class Relations:
    """Read, record and remove upgrade relations."""

    def __init__(self, repos: Repositories) -> None:
        self._repos = repos

    def _doc(self, env_id: int) -> dict:
        return EnvironmentView(self._repos.environment_repo(env_id).snapshot()).doc

    def relation(self, env_id: int) -> Relation | None:
        """The live relation of `env_id`: both environments name each other."""
        mine = claimed(self._doc(env_id))
        if mine is None:
            return None
        role, peer = mine
        try:
            theirs = claimed(self._doc(peer))
        except NotFound:
            return None
        opposite = SEED if role == ORIGINAL else ORIGINAL
        return Relation(env_id, role, peer) if theirs == (opposite, env_id) else None

    def original_of(self, seed_id: int) -> int:
        """The original of seed `seed_id`; InvalidInput if it is not a seed."""
        relation = self.relation(seed_id)
        if relation is None:
            raise InvalidInput(
                f"environment {seed_id} is not an upgrade seed: clone an "
                "environment first (POST .../upgrade/clone)"
            )
        if relation.role != SEED:
            raise InvalidInput(
                f"environment {seed_id} is the original of an upgrade; call this "
                f"on its seed, environment {relation.peer}"
            )
        return relation.original

    def peer_of(self, env_id: int) -> int | None:
        """The peer `env_id`'s `environment.yaml` names (even one-sidedly), or None."""
        mine = claimed(self._doc(env_id))
        return mine[1] if mine else None

    def forget(self, peer: int | None, gone: int, author: Author | None = None) -> None:
        """Remove from `peer` a relation naming `gone` (which was just deleted)."""
        if peer is None:
            return
        try:
            self.set_claim(peer, None, author, f"environment {gone} was deleted", expect=gone)
        except NotFound:
            return  # the peer is gone too

    def set_claim(
        self,
        env_id: int,
        claim: dict | None,
        author: Author | None,
        why: str,
        expect: int | None = None,
    ) -> None:
        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            doc = dict(view.doc)
            current = claimed(doc)
            if claim is None and (current is None or (expect is not None and current[1] != expect)):
                return ChangeSet()
            doc.pop(FIELD, None)
            if claim is not None:
                doc[FIELD] = claim
            verb = "record" if claim else "remove"
            changes = ChangeSet(f"environment {env_id}: upgrade: {verb} relation ({why})")
            old = snapshot.read(ENVIRONMENT_FILE)
            changes.put(
                ENVIRONMENT_FILE,
                documents.encode(
                    snapshot.repository, ENVIRONMENT_FILE, doc, old, caches=snapshot.caches
                ),
            )
            return changes

        repo = self._repos.environment_repo(env_id)
        repo.update(operation, author or self._repos.default_author)

    def environment_deleted(self, env_id: int, doc: dict) -> None:
        """Remove the relation the peer of deleted environment `env_id` (whose last
        `environment.yaml` was `doc`) still names."""
        mine = claimed(doc)
        self.forget(mine[1] if mine else None, env_id)
