"""Moving nodes from an original environment into its upgrade seed, safe against crashes.

A move changes two repositories, and two repositories cannot share a commit. It runs in this
order, under one store-level lock (`<root>/upgrade/upgrade.lock`, `flock`: the kernel drops it
when its holder dies):

1. an *intent record* `<root>/upgrade/intents/<id>.json` is written and flushed (what moves
   where, with which roles);
2. commit A in the seed adds the nodes (ids kept, addresses kept by network name);
3. commit B in the original removes them: **the commit point**;
4. the intent record is deleted.

Readers never see a node in both environments or in neither: while an intent record exists,
the served inventory of the seed hides each of its nodes that the original still holds
(`in_flight`). Before commit B the node is served in the original only; from commit B on, in the
seed only. A process that dies anywhere in 1-4 leaves the record behind; the next inventory
write, upgrade operation or server start replays it (`recover`): it redoes A for the nodes the
original still holds, then B, then deletes the record. A replay that cannot redo A (the seed's
release lost a role meanwhile) withdraws the seed's copies instead: the move is undone, never
half done. Raw git (`git log`, a clone of the seed repository) does show commit A before B.

Tests stop a move between its steps with `GITSTORE_TEST_PAUSE=<point>` (and
`GITSTORE_TEST_PAUSE_FILE`, touched on arrival), then kill the process.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitstore.backend.repository import Author
from gitstore.bodies import Body
from gitstore.deployment.inventory import NODE_FIELDS, Cluster, Edit, check_roles, load_cluster
from gitstore.deployment.journal import Intent, MoveJournal
from gitstore.errors import Conflict, GitstoreError, InvalidInput, NotAllowed, NotFound
from gitstore.merge import tags as tagging
from gitstore.served import Served
from gitstore.upgrade.networks import network_names, remap_addresses

if TYPE_CHECKING:
    from gitstore.deployment.inventory import Nodes
    from gitstore.repositories import Repositories
    from gitstore.upgrade.relations import Relations

#: Statuses a node may be moved in (an `error` node only with error_type `deploy`).
MOVABLE = ("ready", "provisioned", "error")
PAUSE = "GITSTORE_TEST_PAUSE"
PAUSE_FILE = "GITSTORE_TEST_PAUSE_FILE"
ASSIGN_BODY = Body("assign", ("nodes_ids", "reprovision", "roles"), required=("nodes_ids",))

_log = logging.getLogger(__name__)


# -- the request ------------------------------------------------------------------------------
def check_assign_body(body: Any) -> dict:
    """`{nodes_ids: [int, ...], reprovision?: bool, roles?: [str, ...]}`."""
    body = ASSIGN_BODY.check(body)
    ids = body.get("nodes_ids")
    if (
        not isinstance(ids, list)
        or not ids
        or any(isinstance(i, bool) or not isinstance(i, int) or i < 1 for i in ids)
    ):
        raise InvalidInput(
            "field 'nodes_ids' must be a non-empty list of node ids", key="nodes_ids"
        )
    if len(set(ids)) != len(ids):
        raise InvalidInput("field 'nodes_ids' names a node twice", key="nodes_ids")
    if not isinstance(body.get("reprovision", True), bool):
        raise InvalidInput("field 'reprovision' must be true or false", key="reprovision")
    roles = body.get("roles")
    if roles is not None and (
        not isinstance(roles, list)
        or not all(isinstance(r, str) for r in roles)
        or len(set(roles)) != len(roles)
    ):
        raise InvalidInput("field 'roles' must be a list of distinct role names", key="roles")
    return {"nodes_ids": ids, "reprovision": body.get("reprovision", True), "roles": roles or None}


def check_movable(node: dict) -> None:
    """Only deployed or provisioned nodes move (a failed deployment may be retried)."""
    status = node.get("status")
    if status not in MOVABLE:
        raise InvalidInput(
            f"node {node['id']} is {status!r}; a node moves only when it is one "
            f"of {', '.join(MOVABLE)}",
            key="nodes_ids",
        )
    if status == "error" and node.get("error_type") != "deploy":
        raise InvalidInput(
            f"node {node['id']} is in error {node.get('error_type')!r}; only a "
            "node whose deployment failed ('deploy') moves",
            key="nodes_ids",
        )


def moved_roles(nodes: list[dict], given: list[str] | None) -> list[str]:
    """The roles the moved nodes get: those given, else their own.

    Nodes moved together share one role set either way (as the reference implementation
    requires): a `roles` override must not silently turn a controller and a compute alike.
    """
    first = tagging.node_roles(nodes[0])
    differ = [n for n in nodes[1:] if set(tagging.node_roles(n)) != set(first)]
    if differ:
        others = ", ".join(f"{n['id']} {tagging.node_roles(n)}" for n in differ)
        raise InvalidInput(
            f"nodes moved together must share one role set: node {nodes[0]['id']} has "
            f"different roles ({first}) from node(s) {others}; move them separately",
            key="nodes_ids",
        )
    return list(given) if given else first


def check_seed_roles(roles: list[str], seed: Cluster) -> None:
    """Every role exists in the seed (409 otherwise) and no two conflict (400)."""
    unknown = [role for role in roles if role not in seed.meta.roles]
    if unknown:
        raise Conflict(
            f"role {unknown[0]!r} does not exist in environment {seed.env_id}; "
            f"known roles: {', '.join(sorted(seed.meta.roles)) or 'none'}",
            key="roles",
        )
    check_roles({"id": "moved", "roles": roles}, seed.meta, seed.env_id)


def seed_node(node: dict, intent: Intent, roles: list[str], networks: set[str]) -> dict:
    """The node as the seed stores it: same id and addresses; roles pending if reprovisioned."""
    doc = {key: node[key] for key in NODE_FIELDS if key in node}
    doc["roles"], doc["pending_roles"] = ([], roles) if intent.reprovision else (roles, [])
    doc["primary_tags"] = []
    doc["pending_deletion"] = False
    doc["ip_addresses"] = remap_addresses(node.get("ip_addresses") or {}, networks, node["id"])
    if intent.reprovision:  # its disks are wiped: it is provisioned and deployed again
        doc.update(status="discover", error_type=None, pending_addition=True)
    return doc


class Moves:
    """`POST /clusters/<seed>/upgrade/assign`, its intent records and their replay."""

    def __init__(
        self, repos: Repositories, journal: MoveJournal, nodes: Nodes, relations: Relations
    ) -> None:
        self._repos = repos
        self._journal = journal
        self._nodes = nodes
        self._relations = relations

    def pending(self) -> list[Intent]:
        """The moves under way or interrupted (their intent records)."""
        return self._journal.pending()

    # -- moving ----------------------------------------------------------------------------
    def assign(self, seed_id: int, body: Any, author: Author | None = None) -> Served:
        """Move nodes of the seed's original into the seed; the moved nodes as the seed has
        them."""
        request = check_assign_body(body)
        author = author or self._repos.default_author
        self.recover()
        with self._journal.exclusive():
            original = self._relations.original_of(seed_id)
            nodes = self._check_nodes(seed_id, original, request["nodes_ids"])
            moved_roles(nodes, request["roles"])  # their roles must agree, given or not
            intent = Intent(
                uuid.uuid4().hex,
                original,
                seed_id,
                request["nodes_ids"],
                request["roles"],
                request["reprovision"],
                [author.name, author.email],
            )
            self._journal.write(intent)
            pause("move.intent-written")
            try:
                written = self._copy_into_seed(intent, intent.nodes, strict=True)
            except GitstoreError:
                self._journal.delete(intent)
                raise
            pause("move.seed-committed")
            self._finish(intent, intent.nodes)
        cluster = written.cluster
        return written.served([cluster.entity(cluster.nodes[i]) for i in intent.nodes])

    def _check_nodes(self, seed_id: int, original: int, ids: list[int]) -> list[dict]:
        where = self._nodes.used_ids()
        held = load_cluster(
            self._repos.environment_repo(original).snapshot(), self._repos.catalog().snapshot()
        ).nodes
        found = []
        for node_id in ids:
            if node_id not in where:
                raise NotFound(f"node {node_id} does not exist", key="nodes_ids")
            if node_id not in held and where[node_id] == seed_id:
                raise InvalidInput(
                    f"node {node_id} is already in environment {seed_id}", key="nodes_ids"
                )
            if node_id not in held:
                raise NotAllowed(
                    f"node {node_id} is in environment {where[node_id]}, not in "
                    f"environment {original}, the original of seed {seed_id}",
                    key="nodes_ids",
                )
            check_movable(held[node_id])
            found.append(held[node_id])
        return found

    def _copy_into_seed(self, intent: Intent, ids: list[int], *, strict: bool):
        """Commit A: the seed gains the nodes the original still holds."""

        def edit(seed: Cluster) -> Edit:
            held = load_cluster(
                self._repos.environment_repo(intent.original).snapshot(), seed.catalog
            ).nodes
            nodes = [held[i] for i in ids if i in held]
            if strict and len(nodes) != len(ids):
                raise Conflict(f"nodes of environment {intent.original} changed during the move")
            roles = intent.roles or (moved_roles(nodes, None) if nodes else [])
            check_seed_roles(roles, seed)
            names = network_names(seed.env.snapshot)
            docs = {n["id"]: seed_node(n, intent, roles, names) for n in nodes}
            return Edit(
                f"environment {intent.seed}: upgrade: move nodes "
                f"{_ids(docs)} in from environment {intent.original} "
                f"(move {intent.id})",
                docs,
            )

        return self._nodes.write(intent.seed, edit, intent.who)

    def _finish(self, intent: Intent, ids: list[int]) -> None:
        """Commit B (the commit point), then the record goes."""

        def edit(original: Cluster) -> Edit:
            gone = {i: None for i in ids if i in original.nodes}
            return Edit(
                f"environment {intent.original}: upgrade: move nodes {_ids(gone)} out "
                f"to environment {intent.seed} (move {intent.id})",
                gone,
            )

        try:
            if ids:
                self._nodes.write(intent.original, edit, intent.who)
        except NotFound:
            pass  # the original was deleted: its nodes are served by the seed alone
        pause("move.original-committed")
        self._journal.delete(intent)

    # -- recovery --------------------------------------------------------------------------
    def recover(self) -> int:
        """Complete (or undo) every interrupted move; how many records were replayed."""
        if self._journal.held_here() or not self._journal.pending():
            return 0
        with self._journal.exclusive():
            intents = self._journal.pending()
            for intent in intents:
                self._replay(intent)
        return len(intents)

    def _replay(self, intent: Intent) -> None:
        try:
            held = self._journal.node_ids(intent.original) & set(intent.nodes)
        except NotFound:
            self._journal.delete(intent)  # the original is gone: nothing is left to move
            return
        ids = [i for i in intent.nodes if i in held]
        _log.warning("replaying interrupted move %s of nodes %s", intent.id, ids)
        if ids:
            try:
                self._copy_into_seed(intent, ids, strict=False)
            except NotFound:
                self._journal.delete(intent)  # the seed is gone: the nodes stay where they are
                return
            except GitstoreError as exc:
                _log.warning("move %s cannot complete (%s); withdrawing it", intent.id, exc)
                self._withdraw(intent, ids)
                return
        self._finish(intent, ids)

    def _withdraw(self, intent: Intent, ids: list[int]) -> None:
        """Undo commit A: the seed drops its copies, the nodes stay in the original."""

        def edit(seed: Cluster) -> Edit:
            copies = {i: None for i in ids if i in seed.nodes}
            return Edit(f"environment {intent.seed}: upgrade: withdraw move {intent.id}", copies)

        self._nodes.write(intent.seed, edit, intent.who)
        self._journal.delete(intent)


def _ids(nodes: dict) -> str:
    return ", ".join(str(i) for i in sorted(nodes)) or "none"


def pause(point: str) -> None:
    """A test-only stop between the steps of a move: touch the pause file, then wait to be
    killed (`GITSTORE_TEST_PAUSE=<point>`); nothing happens otherwise."""
    if os.environ.get(PAUSE) != point:
        return
    Path(os.environ.get(PAUSE_FILE, f"{point}.paused")).touch()
    while True:
        time.sleep(1)
