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

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitstore import files
from gitstore.backend.repository import Author
from gitstore.deployment.inventory import NODE_FIELDS, Cluster, Edit, check_roles, load_cluster
from gitstore.errors import Conflict, GitstoreError, InvalidInput, NotAllowed, NotFound
from gitstore.layout import INVENTORY_NODES
from gitstore.merge import tags as tagging
from gitstore.names import is_number
from gitstore.served import Served
from gitstore.upgrade.networks import network_names, remap_addresses

if TYPE_CHECKING:
    from gitstore.store import Store

FOLDER = "upgrade"
INTENTS = f"{FOLDER}/intents"
LOCK = f"{FOLDER}/upgrade.lock"
#: Statuses a node may be moved in (an `error` node only with error_type `deploy`).
MOVABLE = ("ready", "provisioned", "error")
PAUSE = "GITSTORE_TEST_PAUSE"
PAUSE_FILE = "GITSTORE_TEST_PAUSE_FILE"
_ASSIGN_FIELDS = ("nodes_ids", "reprovision", "roles")

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Intent:
    """What one move does: `nodes` of `original` into `seed`, with these roles."""

    id: str
    original: int
    seed: int
    nodes: list[int]
    roles: list[str] | None
    reprovision: bool
    author: list[str]

    @property
    def who(self) -> Author:
        return Author(*self.author)


# -- the request ------------------------------------------------------------------------------
def check_assign_body(body: Any) -> dict:
    """`{nodes_ids: [int, ...], reprovision?: bool, roles?: [str, ...]}`."""
    if not isinstance(body, dict):
        raise InvalidInput("assign body must be an object {nodes_ids, reprovision?, roles?}")
    unknown = sorted(set(body) - set(_ASSIGN_FIELDS))
    if unknown:
        raise InvalidInput(
            f"assign: unknown field {unknown[0]!r}; known: {', '.join(_ASSIGN_FIELDS)}",
            key=unknown[0],
        )
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
    """The roles the moved nodes get: those given, else their own, which must be the same."""
    if given:
        return list(given)
    first = tagging.node_roles(nodes[0])
    for node in nodes[1:]:
        if set(tagging.node_roles(node)) != set(first):
            raise InvalidInput(
                f"nodes {nodes[0]['id']} and {node['id']} have different roles "
                f"({first} and {tagging.node_roles(node)}); move them "
                "separately or give 'roles'",
                key="roles",
            )
    return first


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

    def __init__(self, store: Store) -> None:
        self._store = store
        self._local = threading.local()

    # -- the lock ---------------------------------------------------------------------------
    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the store's upgrade lock (re-entrant within a thread)."""
        if getattr(self._local, "held", False):
            yield
            return
        with files.exclusive_lock(self._store.root / LOCK, 0o644):
            self._local.held = True
            try:
                yield
            finally:
                self._local.held = False

    # -- readers ---------------------------------------------------------------------------
    def in_flight(self, env_id: int) -> set[int]:
        """Node ids the served inventory of `env_id` hides: copied by a pending move into this
        seed while its original still holds them."""
        hidden: set[int] = set()
        for intent in self.pending():
            if intent.seed != env_id:
                continue
            try:
                held = self._node_ids(intent.original)
            except NotFound:
                continue  # the original is gone: its nodes can only be in the seed now
            hidden |= held & set(intent.nodes)
        return hidden

    def pending(self) -> list[Intent]:
        """The intent records on disk (moves under way or interrupted)."""
        folder = self._store.root / INTENTS
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        except FileNotFoundError:
            return []
        intents = []
        for name in names:
            try:
                intents.append(Intent(**json.loads((folder / name).read_text())))
            except FileNotFoundError:
                continue  # completed meanwhile
            except (ValueError, TypeError) as exc:  # written whole by rename: edited by hand
                _log.error("ignoring unreadable move record %s: %s", folder / name, exc)
        return intents

    def _node_ids(self, env_id: int) -> set[int]:
        snapshot = self._store.environment_repo(env_id).snapshot()
        return {
            int(e.name[:-5])
            for e in snapshot.list(INVENTORY_NODES)
            if e.name.endswith(".yaml") and is_number(e.name[:-5])
        }

    # -- moving ----------------------------------------------------------------------------
    def assign(self, seed_id: int, body: Any, author: Author | None = None) -> Served:
        """Move nodes of the seed's original into the seed; the moved nodes as the seed has
        them."""
        request = check_assign_body(body)
        author = author or self._store.default_author
        self.recover()
        with self.exclusive():
            original = self._store.upgrades.original_of(seed_id)
            nodes = self._check_nodes(seed_id, original, request["nodes_ids"])
            moved_roles(nodes, request["roles"])  # without roles given, theirs must agree
            intent = Intent(
                uuid.uuid4().hex,
                original,
                seed_id,
                request["nodes_ids"],
                request["roles"],
                request["reprovision"],
                [author.name, author.email],
            )
            self._write_intent(intent)
            pause("move.intent-written")
            try:
                written = self._copy_into_seed(intent, intent.nodes, strict=True)
            except GitstoreError:
                self._delete_intent(intent)
                raise
            pause("move.seed-committed")
            self._finish(intent, intent.nodes)
        cluster = written.cluster
        return written.served([cluster.entity(cluster.nodes[i]) for i in intent.nodes])

    def _check_nodes(self, seed_id: int, original: int, ids: list[int]) -> list[dict]:
        where = self._store.nodes.used_ids()
        held = load_cluster(
            self._store.environment_repo(original).snapshot(), self._store.catalog().snapshot()
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
                self._store.environment_repo(intent.original).snapshot(), seed.catalog
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

        return self._store.nodes.write(intent.seed, edit, intent.who)

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
                self._store.nodes.write(intent.original, edit, intent.who)
        except NotFound:
            pass  # the original was deleted: its nodes are served by the seed alone
        pause("move.original-committed")
        self._delete_intent(intent)

    # -- recovery --------------------------------------------------------------------------
    def recover(self) -> int:
        """Complete (or undo) every interrupted move; how many records were replayed."""
        if getattr(self._local, "held", False) or not self.pending():
            return 0
        with self.exclusive():
            intents = self.pending()
            for intent in intents:
                self._replay(intent)
        return len(intents)

    def _replay(self, intent: Intent) -> None:
        try:
            held = self._node_ids(intent.original) & set(intent.nodes)
        except NotFound:
            self._delete_intent(intent)  # the original is gone: nothing is left to move
            return
        ids = [i for i in intent.nodes if i in held]
        _log.warning("replaying interrupted move %s of nodes %s", intent.id, ids)
        if ids:
            try:
                self._copy_into_seed(intent, ids, strict=False)
            except NotFound:
                self._delete_intent(intent)  # the seed is gone: the nodes stay where they are
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

        self._store.nodes.write(intent.seed, edit, intent.who)
        self._delete_intent(intent)

    # -- records ---------------------------------------------------------------------------
    def _write_intent(self, intent: Intent) -> None:
        folder = self._store.root / INTENTS
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{intent.id}.tmp"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(asdict(intent), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(partial, folder / f"{intent.id}.json")
        files.fsync_folder(folder)

    def _delete_intent(self, intent: Intent) -> None:
        folder = self._store.root / INTENTS
        try:
            os.unlink(folder / f"{intent.id}.json")
        except FileNotFoundError:
            return
        files.fsync_folder(folder)


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
