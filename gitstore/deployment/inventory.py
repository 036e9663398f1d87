"""Node inventory of an environment: `inventory/nodes/<id>.yaml` (docs/design.md, "The store
on disk").

A `Cluster` is one environment commit read together with its catalog owners (the release and
enabled plugins named in `environment.yaml`): merged role and tag metadata, and the nodes.

Every write that changes nodes or roles goes through `Nodes.write`, which re-runs the primary
election and commits the elected `primary_tags` into the node files of the same commit, so who
is primary is visible, versioned and revertible.

Node ids are unique across the store. Creators in different environments write to different
repositories, so no per-repository compare-and-swap can see a clash: node creation holds a
store-level lock file (`<root>/inventory.lock`, `flock`, released by the kernel if the holder
dies) while it picks the id and commits the node. A `git push` that adds node files bypasses
the lock; the push gate is where such a push has to be checked.
"""

from __future__ import annotations

import builtins
import ipaddress
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gitstore import documents, files
from gitstore.backend.cache import LRUCache
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, WriteResult
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.catalog.releases import PLUGIN, RELEASE, ROLES, TAGS, OwnerCatalog
from gitstore.deployment.electorate import Electorate
from gitstore.errors import Conflict, Damaged, InvalidInput, NotFound
from gitstore.layout import INVENTORY_NODES, EnvironmentView
from gitstore.merge import tags as tagging
from gitstore.merge.tags import Metadata
from gitstore.names import check_segment, is_number
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.deployment.journal import MoveJournal
    from gitstore.repositories import Repositories

CLUSTER_TAGS = "inventory/tags.yaml"
CLUSTER_ROLES = "inventory/roles.yaml"
LOCK_FILE = "inventory.lock"
STATUSES = (
    "discover",
    "provisioning",
    "provisioned",
    "deploying",
    "ready",
    "error",
    "removing",
    "stopped",
)
NODE_FIELDS = (
    "id",
    "fqdn",
    "name",
    "roles",
    "pending_roles",
    "tags_added",
    "tags_removed",
    "primary_tags",
    "status",
    "error_type",
    "online",
    "pending_addition",
    "pending_deletion",
    "ip_addresses",
    "meta",
)
#: Fields a client may send back from a GET but never sets: they are computed.
COMPUTED_FIELDS = ("primary_tags", "tags", "cluster")
#: A node body: the node file's fields, and the computed ones a GET shows (dropped).
NODE_BODY = Body(
    "node",
    tuple(dict.fromkeys((*NODE_FIELDS, *COMPUTED_FIELDS))),
    example='{"fqdn": "node-1.domain.tld"}',
)
_LISTS = ("roles", "pending_roles", "tags_added", "tags_removed")
_FLAGS = ("online", "pending_addition", "pending_deletion")
_DEFAULTS: dict[str, Any] = {
    "roles": [],
    "pending_roles": [],
    "tags_added": [],
    "tags_removed": [],
    "primary_tags": [],
    "status": "discover",
    "error_type": None,
    "online": True,
    "pending_addition": False,
    "pending_deletion": False,
    "ip_addresses": {},
}


def node_path(node_id: int) -> str:
    return f"{INVENTORY_NODES}/{int(node_id)}.yaml"


# -- the read model -----------------------------------------------------------------------------
@dataclass
class Cluster:
    """One environment commit with its owners' metadata and its nodes."""

    env: EnvironmentView
    catalog: Snapshot
    release: dict | None
    plugins: list[dict]
    own: Metadata
    nodes: dict[int, dict]
    #: Owners `environment.yaml` names that the catalog does not hold.
    missing: list[str] = field(default_factory=list)
    #: Which of `nodes` a write must look at (`electorate`), when known; a write's own.
    electorate: Electorate | None = None

    @property
    def env_id(self) -> int:
        assert self.env.env_id is not None  # a cluster's environment.yaml has its id
        return int(self.env.env_id)

    @cached_property
    def meta(self) -> Metadata:
        """The merged view: release ← cluster ← plugins."""
        return tagging.merge_metadata(self.owner_metadata(self.own))

    def owner_metadata(self, own: Metadata) -> list[Metadata]:
        owners = []
        if self.release is not None:
            owners.append(Metadata(self.release[ROLES], self.release[TAGS]))
        owners.append(own)
        owners += [Metadata(p[ROLES], p[TAGS], implicit_role_tags=True) for p in self.plugins]
        return owners

    def node(self, ref: int | str) -> dict:
        """A node by id or fqdn."""
        text = str(ref)
        if is_number(text) and int(text) in self.nodes:
            return self.nodes[int(text)]
        for node in self.nodes.values():
            if node.get("fqdn") == text:
                return node
        raise NotFound(
            f"node {text!r} is not in environment {self.env_id}; list its nodes with "
            f"`gitstore node list --env {self.env_id}` (GET /api/v1/clusters/{self.env_id}/nodes)"
        )

    def tags_by_node(self, nodes: list[dict] | None = None) -> dict[int, list[str]]:
        meta = self.meta
        chosen = self.nodes.values() if nodes is None else nodes
        return {int(n["id"]): tagging.node_tags(n, meta) for n in chosen}

    def entity(self, node: dict, meta: Metadata | None = None) -> dict:
        """A node as the API shows it: its file, its environment and its computed tags."""
        return {
            **stored_node(node),
            "cluster": self.env_id,
            "tags": tagging.node_tags(node, meta or self.meta),
        }


class NodeIndex:
    """The node records of environment commits, kept by the id of their `inventory/nodes`
    tree, and each record by its blob id: every write reads the inventory of the commit it
    starts from, and reading every file made a node create cost more the more nodes there
    were. A tree not held yet is read by what changed since the last one this index read of
    that repository (another worker's write, say), with its electorate. Values are shared: never
    mutate them."""

    def __init__(self, trees: int = 32, files: int = 50_000) -> None:
        self._trees = LRUCache(trees, name="node_trees")
        self._electorates = LRUCache(trees, name="node_electorates")
        self._files = LRUCache(files, name="node_files")
        #: The tree each repository's inventory had when this index last read it.
        self._last: dict[str, str] = {}

    def read(self, env: Snapshot) -> dict[int, dict]:
        """The nodes of `env` (a new dict of the shared records)."""
        tree = env.object_id(INVENTORY_NODES)  # a tracked snapshot records the whole folder
        if tree is None:
            return {}
        nodes = self._trees.get(tree)
        if nodes is None:
            nodes = self._since_last(env, tree)
            nodes = self._load(env) if nodes is None else nodes
            self._trees.put(tree, nodes)
        self._last[env.repository] = tree
        return dict(nodes)

    def electorate(self, env: Snapshot, nodes: dict[int, dict]) -> Electorate:
        """The electorate of `env`'s `nodes` (as `read` gave them), kept once made."""
        tree = env.object_id(INVENTORY_NODES)
        if tree is None:
            return Electorate.of(nodes)
        return self._electorates.get_or_compute(tree, lambda: Electorate.of(nodes))

    def remember(
        self, env: Snapshot, nodes: dict[int, dict], electorate: Electorate | None
    ) -> None:
        """Record `nodes` (and their `electorate`) as what `env`'s inventory holds (a writer that
        just committed them)."""
        tree = env.object_id(INVENTORY_NODES)
        if tree is not None:
            self._trees.put(tree, dict(nodes))
            self._last[env.repository] = tree
            if electorate is not None:
                self._electorates.put(tree, electorate)

    def _since_last(self, env: Snapshot, tree: str) -> dict[int, dict] | None:
        """The nodes of `tree` from those of the last tree read of its repository and the
        files that differ (one diff in libgit2); None when that tree is not held any more."""
        last = self._last.get(env.repository)
        base: dict[int, dict] | None = self._trees.get(last) if last is not None else None
        if last is None or base is None:
            return None
        changes = env.file_changes(INVENTORY_NODES, last)
        if changes is None:
            return None
        nodes, changed = dict(base), []
        for name, blob in changes.items():
            stem = name.removesuffix(".yaml")
            if not name.endswith(".yaml") or not is_number(stem):
                continue
            changed.append(int(stem))
            if blob is None:
                nodes.pop(int(stem), None)
            else:
                nodes[int(stem)] = self._record(env, name, blob)
        added = [i for i in changed if i in nodes and i not in base]  # put last, in this order
        if added and (added[0] < next(reversed(base), 0) or added != sorted(added)):
            nodes = dict(sorted(nodes.items()))
        electorate = self._electorates.get(last)
        if electorate is not None:
            self._electorates.put(tree, electorate.updated(nodes, changed))
        return nodes

    def _load(self, env: Snapshot) -> dict[int, dict]:
        nodes = {}
        for name, blob in env.file_ids(INVENTORY_NODES).items():
            stem = name.removesuffix(".yaml")
            if name.endswith(".yaml") and is_number(stem):
                nodes[int(stem)] = self._record(env, name, blob)
        return dict(sorted(nodes.items()))

    def _record(self, env: Snapshot, name: str, blob: str) -> dict:
        stem = name.removesuffix(".yaml")
        node = self._files.get((blob, stem))
        if node is None:
            doc = env.read_mapping(f"{INVENTORY_NODES}/{name}") or {}
            node = {**doc, "id": int(stem)}
            self._files.put((blob, stem), node)
        return node


def load_cluster(env: Snapshot, catalog: Snapshot, index: NodeIndex | None = None) -> Cluster:
    """The cluster of one environment commit; `index` (the Nodes service's) spares reading
    every node file again."""
    view = EnvironmentView(env)
    missing: list[str] = []
    release = _owner(OwnerCatalog(catalog, RELEASE), view.doc.get("release"), missing)
    plugin_view = OwnerCatalog(catalog, PLUGIN)
    plugins = [
        p
        for name in view.doc.get("plugins") or []
        if (p := _owner(plugin_view, name, missing)) is not None
    ]
    roles = env.read_mapping(CLUSTER_ROLES) or {}
    tags = env.read_mapping(CLUSTER_TAGS) or {}
    own = Metadata(dict(roles.get(ROLES) or {}), dict(tags.get(TAGS) or {}))
    nodes = index.read(env) if index is not None else _read_nodes(env)
    return Cluster(view, catalog, release, plugins, own, nodes, missing)


def _owner(view: OwnerCatalog, name: str | None, missing: list[str]) -> dict | None:
    if not name:
        return None
    try:
        return view.entity(name)
    except NotFound:
        missing.append(f"{view.kind.name} {name!r}")
        return None


def _read_nodes(env: Snapshot) -> dict[int, dict]:
    nodes = {}
    for entry in env.list(INVENTORY_NODES):
        stem = entry.name.removesuffix(".yaml")
        if entry.is_tree or not entry.name.endswith(".yaml") or not is_number(stem):
            continue
        doc = env.read_mapping(f"{INVENTORY_NODES}/{entry.name}") or {}
        nodes[int(stem)] = {**doc, "id": int(stem)}
    return dict(sorted(nodes.items()))


# -- validation ---------------------------------------------------------------------------------
def _checked_bodies(bodies: list) -> list[dict]:
    """The fields of each new node; a bad one or a repeated id or fqdn names its place."""
    if not bodies:
        raise InvalidInput("a list of nodes to create must not be empty")
    wanted: list[dict] = []
    for index, body in enumerate(bodies):
        try:
            wanted.append(check_node_body(body, partial=False))
        except InvalidInput as exc:
            where = f"node {index + 1} of the list: " if len(bodies) > 1 else ""
            raise InvalidInput(f"{where}{exc.message}", key=exc.key) from exc
    for key in ("id", "fqdn"):
        seen: set = set()
        for index, fields in enumerate(wanted):
            value = fields.get(key)
            if value is not None and value in seen:
                raise InvalidInput(f"node {index + 1} of the list repeats {key} {value!r}", key=key)
            seen.add(value)
    return wanted


def check_node_body(body: Any, *, partial: bool) -> dict:
    """The settable fields of a node body, checked one by one (computed fields are dropped)."""
    body = NODE_BODY.check(body)
    fields = {k: v for k, v in body.items() if k not in COMPUTED_FIELDS}
    if not partial and "fqdn" not in fields:
        raise InvalidInput("node field 'fqdn' is required", key="fqdn")
    for key, value in fields.items():
        _FIELD_CHECKS.get(key, _check_any)(key, value)
    return fields


def _check_id(key: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidInput("node field 'id' must be a positive integer", key=key)


def _check_fqdn(key: str, value: Any) -> None:
    check_segment(value, "node field 'fqdn'")
    if is_number(value):
        raise InvalidInput(f"node fqdn {value!r} must not be all digits (ids are)", key=key)


def _check_list(key: str, value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"node field {key!r} must be a list of names", key=key)


def _check_flag(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidInput(f"node field {key!r} must be true or false", key=key)


def _check_status(key: str, value: Any) -> None:
    if value not in STATUSES:
        raise InvalidInput(f"node field 'status' must be one of {', '.join(STATUSES)}", key=key)


def _check_optional_text(key: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"node field {key!r} must be a string or null", key=key)


def _check_ips(key: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise InvalidInput("node field 'ip_addresses' must map network names to addresses", key=key)
    for network, address in value.items():
        try:
            ipaddress.ip_interface(str(address))
        except ValueError as exc:
            raise InvalidInput(
                f"ip_addresses.{network}: {address!r} is not an IP address", key=key
            ) from exc


def _check_meta(key: str, value: Any) -> None:
    if value is not None and not isinstance(value, dict):
        raise InvalidInput("node field 'meta' must be an object", key=key)


def _check_any(key: str, value: Any) -> None:
    return None


_FIELD_CHECKS: dict[str, Callable[[str, Any], None]] = {
    "id": _check_id,
    "fqdn": _check_fqdn,
    "name": _check_optional_text,
    "error_type": _check_optional_text,
    "status": _check_status,
    "ip_addresses": _check_ips,
    "meta": _check_meta,
    **{k: _check_list for k in _LISTS},
    **{k: _check_flag for k in _FLAGS},
}


def check_roles(node: dict, meta: Metadata, env_id: int) -> None:
    """Roles exist in the cluster's merged roles and do not conflict with each other."""
    roles = tagging.node_roles(node)
    unknown = [r for r in roles if r not in meta.roles]
    if unknown:
        raise InvalidInput(
            f"role {unknown[0]!r} does not exist in environment {env_id}; "
            f"known roles: {', '.join(sorted(meta.roles)) or 'none'}",
            key="roles",
        )
    for role in roles:
        conflicts = meta.roles[role].get("conflicts") or []
        clashing = [r for r in roles if r != role and (conflicts == "*" or r in conflicts)]
        if clashing:
            raise InvalidInput(
                f"role {role!r} conflicts with role {clashing[0]!r} "
                f"(node {node.get('fqdn') or node.get('id')})",
                key="roles",
            )


def check_node_tags(node: dict, meta: Metadata, env_id: int) -> None:
    """Assigned and removed tags are known to the cluster; primary tags are never assigned."""
    for key in ("tags_added", "tags_removed"):
        for tag in node.get(key) or []:
            if tag.startswith(tagging.PRIMARY_PREFIX) and tag not in meta.tags:
                raise InvalidInput(f"tag {tag!r}: primary tags are elected, not assigned", key=key)
            if not tagging.known_tag(tag, meta):
                raise NotFound(
                    f"Tag '{tag}' is not found for the cluster {env_id}; list its tags with "
                    f"`gitstore tag list --env {env_id}`",
                    key=key,
                )


def stored_node(node: dict) -> dict:
    """The node file's document, fields in their documented order."""
    return {
        k: node[k]
        for k in NODE_FIELDS
        if k in node and (k not in ("name", "meta") or node[k] is not None)
    }


# -- the service ------------------------------------------------------------------------------
@dataclass
class Edit:
    """What an inventory write changes: node files (None deletes) and other inventory docs."""

    message: str
    nodes: Mapping[int, dict | None] = field(default_factory=dict)
    files: dict[str, dict] = field(default_factory=dict)
    #: Nodes whose roles and tags must be valid after the change (the ones a request names).
    checked: list[int] = field(default_factory=list)
    result: Any = None


@dataclass(frozen=True)
class Written:
    """The cluster after a write, the edit's result and the commit served now."""

    cluster: Cluster
    value: Any
    commit: WriteResult

    def served(self, data: Any) -> Served:
        return Served(data, self.commit.commit, self.commit.version)


class Nodes:
    """The node inventory of environments, and the one write path that elects primaries."""

    def __init__(self, repos: Repositories, journal: MoveJournal) -> None:
        self._repos = repos
        self._journal = journal
        self._before_write: list[Callable[[], object]] = []
        self._index = NodeIndex()

    def before_write(self, hook: Callable[[], object]) -> None:
        """Run `hook` before every inventory write: the Store subscribes the completion of
        interrupted node moves (`Moves.recover`), which must land before any other write."""
        self._before_write.append(hook)

    # -- reading ---------------------------------------------------------------------------
    def cluster(
        self, env_id: int, version: str | None = None, catalog_version: str | None = None
    ) -> Cluster:
        env = self._repos.environment_repo(env_id).snapshot(version)
        cluster = load_cluster(env, self._repos.catalog().snapshot(catalog_version), self._index)
        if version is None:  # a node moving into an upgrade seed is served by one side only
            for node_id in self._journal.in_flight(env_id):
                cluster.nodes.pop(node_id, None)
        return cluster

    def list(
        self, env_id: int, version: str | None = None, catalog_version: str | None = None
    ) -> Served:
        cluster = self.cluster(env_id, version, catalog_version)
        meta = cluster.meta
        entities = [cluster.entity(n, meta) for n in cluster.nodes.values()]
        return _served(entities, cluster)

    def get(
        self,
        env_id: int,
        ref: int | str,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Served:
        cluster = self.cluster(env_id, version, catalog_version)
        return _served(cluster.entity(cluster.node(ref)), cluster)

    def find(self, fqdn: str | None = None, cluster_id: int | None = None) -> Served:
        """Nodes of every environment (or one), optionally only those with `fqdn`."""
        found = []
        env_ids = [cluster_id] if cluster_id is not None else self._repos.environment_ids()
        for env_id in env_ids:
            try:
                cluster = self.cluster(env_id)
            except (NotFound, Damaged):
                if cluster_id is not None:
                    raise
                continue  # archived between listing and reading, or damaged (see /status)
            meta = cluster.meta
            found += [
                cluster.entity(n, meta)
                for n in cluster.nodes.values()
                if fqdn is None or n.get("fqdn") == fqdn
            ]
        return Served(sorted(found, key=lambda n: n["id"]))

    # -- writing ---------------------------------------------------------------------------
    def create(self, env_id: int, body: Any, author: Author | None = None) -> Served:
        """Add a node (a body object), or several in one commit (a list of them: the answer
        is the list of entities)."""
        if isinstance(body, list):
            return self.create_many(env_id, body, author)
        written = self.create_many(env_id, [body], author)
        return Served(written.data[0], written.commit, written.version)

    def create_many(
        self, env_id: int, bodies: builtins.list, author: Author | None = None
    ) -> Served:
        """Add nodes in one commit; a bad one refuses them all, naming it."""
        wanted = _checked_bodies(bodies)
        self._repos.environment_repo(env_id)  # 404 before taking the store lock
        with self._id_lock():
            ids = self._allocate_many(env_id, [fields.get("id") for fields in wanted])

            def edit(cluster: Cluster) -> Edit:
                taken = {n.get("fqdn") for n in cluster.nodes.values()}
                for fields in wanted:
                    if fields["fqdn"] in taken:
                        raise Conflict(
                            f"environment {env_id} already has a node with fqdn {fields['fqdn']!r}",
                            key="fqdn",
                        )
                nodes = {
                    node_id: {**_DEFAULTS, **fields, "id": node_id, "primary_tags": []}
                    for node_id, fields in zip(ids, wanted, strict=True)
                }
                first = nodes[ids[0]]
                message = (
                    f"environment {env_id}: add node {ids[0]} ({first['fqdn']})"
                    if len(ids) == 1
                    else f"environment {env_id}: add {len(ids)} nodes ({', '.join(map(str, ids))})"
                )
                return Edit(message, nodes, checked=ids)

            written = self.write(env_id, edit, author)
        meta = written.cluster.meta
        return written.served([written.cluster.entity(written.cluster.nodes[i], meta) for i in ids])

    def update(
        self, env_id: int, ref: int | str, body: Any, author: Author | None = None
    ) -> Served:
        """Change the fields given (PUT and PATCH alike); id and fqdn identify the node."""
        fields = check_node_body(body, partial=True)

        def edit(cluster: Cluster) -> Edit:
            node = cluster.node(ref)
            if fields.get("id") not in (None, node["id"]):
                raise InvalidInput("node field 'id' cannot be changed", key="id")
            if (
                "fqdn" in fields
                and fields["fqdn"] != node.get("fqdn")
                and any(n.get("fqdn") == fields["fqdn"] for n in cluster.nodes.values())
            ):
                raise Conflict(
                    f"environment {env_id} already has a node with fqdn {fields['fqdn']!r}",
                    key="fqdn",
                )
            changed = {**node, **fields, "id": node["id"]}
            return Edit(
                f"environment {env_id}: update node {node['id']}",
                {node["id"]: changed},
                checked=[node["id"]],
                result=node["id"],
            )

        written = self.write(env_id, edit, author)
        return written.served(written.cluster.entity(written.cluster.nodes[written.value]))

    def delete(self, env_id: int, ref: int | str, author: Author | None = None) -> Served:
        def edit(cluster: Cluster) -> Edit:
            node = cluster.node(ref)
            return Edit(
                f"environment {env_id}: remove node {node['id']} ({node.get('fqdn')})",
                {node["id"]: None},
            )

        return self.write(env_id, edit, author).served(None)

    def reconcile(self, env_id: int, reason: str, author: Author | None = None) -> None:
        """Re-run the election and drop vanished tags after a catalog change."""
        self.write(env_id, lambda cluster: Edit(f"environment {env_id}: {reason}"), author)

    def write(
        self, env_id: int, edit: Callable[[Cluster], Edit], author: Author | None = None
    ) -> Written:
        """Apply `edit` to the environment in one commit, with the election re-run.

        Only the nodes the edit lists in `checked` have their roles and tags validated, so a
        catalog change never makes writes about other nodes fail.
        """
        outcome: dict[str, Any] = {}
        for hook in self._before_write:
            hook()

        def operation(snapshot: Snapshot) -> ChangeSet:
            cluster = load_cluster(snapshot, self._repos.catalog().snapshot(), self._index)
            cluster.electorate = self._index.electorate(snapshot, cluster.nodes)
            change = edit(cluster)
            after = _apply(cluster, change)
            for node_id in change.checked:
                check_roles(after.nodes[node_id], after.meta, env_id)
                check_node_tags(after.nodes[node_id], after.meta, env_id)
            after = _settle(after)
            replaced = _replaced(cluster, after)
            outcome.update(cluster=after, value=change.result, replaced=replaced)
            return _changes(cluster, after, change, replaced)

        repo = self._repos.environment_repo(env_id)
        result = repo.update(operation, author or self._repos.default_author)
        after = outcome["cluster"]
        read = _as_read(after, outcome["replaced"])
        self._index.remember(repo.snapshot(result.commit), read, after.electorate)
        return Written(after, outcome["value"], result)

    # -- node ids --------------------------------------------------------------------------
    def _id_lock(self):
        return files.exclusive_lock(self._repos.root / LOCK_FILE, 0o644)

    def used_ids(self) -> dict[int, int]:
        """Every node id in the store and the environment holding it."""
        used: dict[int, int] = {}
        for env_id in self._repos.environment_ids():
            try:
                snapshot = self._repos.environment_repo(env_id).snapshot()
            except NotFound:
                continue
            used.update(dict.fromkeys(self._index.read(snapshot), env_id))
        return used

    def _allocate_many(self, env_id: int, wanted: builtins.list[int | None]) -> builtins.list[int]:
        """An id for each new node: the one asked for, else the lowest unused ones."""
        used = self.used_ids()
        for node_id in wanted:
            if node_id in used:
                raise Conflict(
                    f"node id {node_id} is taken by a node of environment {used[node_id]}",
                    key="id",
                )
        taken = set(used) | {i for i in wanted if i is not None}
        free = (i for i in itertools.count(1) if i not in taken)
        return [node_id if node_id is not None else next(free) for node_id in wanted]


def _apply(cluster: Cluster, change: Edit) -> Cluster:
    """The cluster after `change`; the nodes it changes are new dicts, the others shared."""
    own = cluster.own
    if CLUSTER_ROLES in change.files or CLUSTER_TAGS in change.files:
        roles = change.files.get(CLUSTER_ROLES, {ROLES: own.roles})[ROLES]
        tags = change.files.get(CLUSTER_TAGS, {TAGS: own.tags})[TAGS]
        own = Metadata(roles, tags)
    nodes = dict(cluster.nodes)  # records are shared (NodeIndex): `_settle` replaces, never edits
    last = next(reversed(nodes), 0)
    in_order = True
    for node_id, node in change.nodes.items():
        if node is None:
            nodes.pop(node_id, None)
        else:
            in_order = in_order and (node_id in nodes or node_id > last)
            last = max(last, node_id)
            nodes[node_id] = dict(node)
    if not in_order:  # ids in order without sorting the cluster when a node comes last
        nodes = dict(sorted(nodes.items()))
    electorate = (
        None if cluster.electorate is None else cluster.electorate.updated(nodes, change.nodes)
    )
    return Cluster(
        cluster.env,
        cluster.catalog,
        cluster.release,
        cluster.plugins,
        own,
        nodes,
        cluster.missing,
        electorate,
    )


def _settle(cluster: Cluster) -> Cluster:
    """Drop tags that no longer exist from cluster roles and nodes, then elect primaries.

    Nothing is dropped while an owner named by `environment.yaml` is missing from the
    catalog: its tags may come back. A node that changes is replaced by a new dict (the others
    stay the shared records), so `_changes` finds what changed by identity. Only the nodes the
    cluster's electorate names are looked at: the others have no tags to drop and cannot be primary.
    """
    meta = cluster.meta
    own = cluster.own
    nodes = cluster.nodes
    electorate = cluster.electorate if cluster.electorate is not None else Electorate.of(nodes)
    replaced = []
    if not cluster.missing:
        for node_id in sorted(i for i in electorate.marked if i in nodes):
            node = nodes[node_id]
            if node.get("tags_added") == [] and node.get("tags_removed") == []:
                continue  # nothing to drop
            kept = {
                key: [t for t in node.get(key) or [] if tagging.known_tag(t, meta)]
                for key in ("tags_added", "tags_removed")
            }
            if any(kept[key] != (node.get(key) or []) for key in kept) or any(
                key not in node for key in kept
            ):
                nodes[node_id] = {**node, **kept}
                replaced.append(node_id)
        for role, tag in tagging.missing_role_tags(own.roles, meta.tags):
            own = Metadata({**own.roles, role: _without_tag(own.roles[role], tag)}, own.tags)
    contenders = [nodes[i] for i in sorted(electorate.contenders(meta)) if i in nodes]
    for node_id, primaries in tagging.elect_primaries(contenders, meta).items():
        if nodes[node_id].get("primary_tags") != primaries:
            nodes[node_id] = {**nodes[node_id], "primary_tags": primaries}
            replaced.append(node_id)
    return Cluster(
        cluster.env,
        cluster.catalog,
        cluster.release,
        cluster.plugins,
        own,
        nodes,
        cluster.missing,
        electorate.updated(nodes, replaced),
    )


def _without_tag(role: dict, tag: str) -> dict:
    return {**role, "tags": [t for t in role.get("tags") or [] if t != tag]}


def _replaced(before: Cluster, after: Cluster) -> list[int]:
    """The nodes whose records `_apply` and `_settle` replaced: they replace what they change
    and share the rest, so one look per node, by identity, finds them."""
    old = before.nodes
    return [i for i, n in after.nodes.items() if n is not old.get(i)]


def _changes(before: Cluster, after: Cluster, change: Edit, replaced: list[int]) -> ChangeSet:
    changes = ChangeSet(change.message)
    repo = before.env.snapshot.repository
    docs = {
        CLUSTER_TAGS: (TAGS, before.own.tags, after.own.tags),
        CLUSTER_ROLES: (ROLES, before.own.roles, after.own.roles),
    }
    for path, (key, old_value, new_value) in docs.items():
        if path in change.files or new_value != old_value:
            old = before.env.snapshot.read(path)
            caches = before.env.snapshot.caches
            changes.put(path, documents.encode(repo, path, {key: new_value}, old, caches=caches))
    for node_id in before.nodes.keys() - after.nodes.keys():
        changes.delete(node_path(node_id))
    written = dict.fromkeys(replaced) | dict.fromkeys(i for i in change.nodes if i in after.nodes)
    for node_id in sorted(written):
        node = after.nodes[node_id]
        doc = stored_node(node)
        if node_id in change.nodes or stored_node(before.nodes.get(node_id) or {}) != doc:
            path = node_path(node_id)
            old = before.env.snapshot.read(path)
            caches = before.env.snapshot.caches
            changes.put(path, documents.encode(repo, path, doc, old, caches=caches))
    return changes


def _as_read(after: Cluster, replaced: list[int]) -> dict[int, dict]:
    """The records as a read of the committed files gives them (stored fields and the id):
    the ones the write did not replace are the records it read."""
    read = dict(after.nodes)
    for i in replaced:
        read[i] = {**stored_node(read[i]), "id": i}
    return read


def _served(data: Any, cluster: Cluster) -> Served:
    snapshot = cluster.env.snapshot
    return Served(data, snapshot.commit_id, snapshot.version)
