"""Tags: `tags_metadata` of releases, plugins and clusters, node assignment and resolution.

Owners and where their tags live:
- a release: `releases/<name>/tags.yaml` (catalog), roles in `roles.yaml` next to it;
- a plugin: `plugins/<name>/plugin.yaml` (catalog);
- a cluster: `inventory/tags.yaml` and `inventory/roles.yaml` (environment repository).

A cluster's list is the merged view (release ← cluster ← plugins); the single-tag routes see
the owner's own tags. Writes to a cluster go through `Nodes.write`, so the primary election is
committed together with the tag change; a release or plugin change is one catalog commit
followed by one reconciling commit in each environment that uses the owner (two repositories
cannot share a commit; reads also ignore primaries of vanished tags, so the gap is harmless).

`resolved_tasks` reads a graph type's tasks through `graph_tasks`: the merged graph of
`gitstore.deployment.graphs` (release ← enabled plugins ← cluster, whole-task replacement by id).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gitstore.backend.repository import Author
from gitstore.bodies import Body
from gitstore.catalog.releases import (
    PLUGIN,
    RELEASE,
    ROLES,
    TAGS,
    OwnerCatalog,
    check_role_tags,
    check_roles_metadata,
    check_tag_meta,
    check_tag_name,
)
from gitstore.deployment.graphs import merged_graph
from gitstore.deployment.inventory import CLUSTER_ROLES, CLUSTER_TAGS, Cluster, Edit
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.merge import tags as tagging
from gitstore.names import check_identifier
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.catalog.releases import Owners, Plugins, Releases
    from gitstore.deployment.inventory import Nodes

CLUSTER = "cluster"
KINDS = (RELEASE.name, PLUGIN.name, CLUSTER)
DEFAULT_GRAPH = "default"


def tag_entity(name: str, meta: dict, owner_type: str, owner_id: int) -> dict:
    return {"name": name, "meta": meta, "owner_type": owner_type, "owner_id": owner_id}


def _not_found(name: str, kind: str, owner_id: Any) -> NotFound:
    """Nailgun's message, and how to see the tags there are."""
    return NotFound(
        f"Tag '{name}' is not found for the {kind} {owner_id}; {_tags_step(kind, owner_id)}",
        key="name",
    )


def _tags_step(kind: str, owner_id: Any) -> str:
    option = "env" if kind == CLUSTER else kind
    return f"list its tags with `gitstore tag list --{option} {owner_id}`"


#: A tag body `{name, meta: {has_primary, ...}}`; `owner_type` and `owner_id` are a GET's
#: echo (the route names the owner), taken and ignored so a read entity can be sent back.
TAG_BODY = Body(
    "tag",
    ("name", "meta", "owner_type", "owner_id"),
    example='{"name": "swift", "meta": {"has_primary": false}}',
)
#: `PUT /clusters/<id>/roles`: the cluster's own roles.
ROLES_BODY = Body("cluster roles", (ROLES,), required=(ROLES,), example='{"roles_metadata": {}}')
#: `POST|DELETE /clusters/<id>/nodes/<node>/tags`.
NODE_TAGS_BODY = Body("node tags", ("tags",), required=("tags",), example='{"tags": ["mysql"]}')


def _check_body(body: Any, name: str | None = None) -> tuple[str, dict]:
    """`{name, meta: {has_primary, ...}}`; on update the name may only repeat the route's."""
    body = TAG_BODY.check(body)
    given = body.get("name", name)
    if name is not None and given != name:
        raise InvalidInput(f"tag {name!r} cannot be renamed to {given!r}", key="name")
    tag = check_tag_name(given)
    return tag, dict(check_tag_meta(body.get("meta"), tag))


def strip_tag(roles: dict, tag: str) -> dict:
    """Roles with `tag` removed from every role's tags (new mappings; inputs untouched)."""
    return {
        name: (
            {**role, "tags": [t for t in role.get("tags") or [] if t != tag]}
            if tag in (role.get("tags") or [])
            else role
        )
        for name, role in roles.items()
    }


class Tags:
    """Tag metadata CRUD, per-node assignment, checks, instances and task resolution."""

    def __init__(self, nodes: Nodes, releases: Releases, plugins: Plugins) -> None:
        self._nodes = nodes
        self._releases = releases
        self._plugins = plugins

    # -- owners ----------------------------------------------------------------------------
    def _owners(self, kind: str) -> Owners:
        if kind == RELEASE.name:
            return self._releases
        if kind == PLUGIN.name:
            return self._plugins
        raise NotFound(f"tags have no owner type {kind!r}; use one of {', '.join(KINDS)}")

    # -- reading ---------------------------------------------------------------------------
    def list(self, kind: str, ref: int | str, version: str | None = None) -> Served:
        """An owner's tags; a cluster's list is the merged view with each tag's owner."""
        if kind == CLUSTER:
            cluster = self._nodes.cluster(int(ref), version)
            return _served(self._merged_tags(cluster), cluster)
        served = self._owners(kind).get(ref, version)
        owner = served.data
        tags = [tag_entity(n, m, kind, owner["id"]) for n, m in owner[TAGS].items()]
        return Served(tags, served.commit, served.version)

    def _merged_tags(self, cluster: Cluster) -> builtins.list[dict]:
        sources: builtins.list[tuple[str, Any, dict | None]] = []
        if cluster.release is not None:
            sources.append((RELEASE.name, cluster.release["id"], cluster.release))
        sources.append((CLUSTER, cluster.env_id, None))
        sources += [(PLUGIN.name, p["id"], p) for p in cluster.plugins]
        merged: dict[str, dict] = {}
        for kind, owner_id, owner in sources:
            own = tagging.merge_metadata(
                [cluster.own]
                if owner is None
                else [tagging.Metadata(owner[ROLES], owner[TAGS], kind == PLUGIN.name)]
            )
            for name, meta in own.tags.items():
                merged[name] = tag_entity(name, meta, kind, owner_id)
        return list(merged.values())

    def get(self, kind: str, ref: int | str, name: str, version: str | None = None) -> Served:
        if kind == CLUSTER:
            cluster = self._nodes.cluster(int(ref), version)
            if name not in cluster.own.tags:
                raise _not_found(name, kind, cluster.env_id)
            entity = tag_entity(name, cluster.own.tags[name], kind, cluster.env_id)
            return _served(entity, cluster)
        served = self._owners(kind).get(ref, version)
        owner = served.data
        if name not in owner[TAGS]:
            raise _not_found(name, kind, owner["id"])
        entity = tag_entity(name, owner[TAGS][name], kind, owner["id"])
        return Served(entity, served.commit, served.version)

    # -- writing ---------------------------------------------------------------------------
    def create(self, kind: str, ref: int | str, body: Any, author: Author | None = None) -> Served:
        name, meta = _check_body(body)

        def change(tags: dict, roles: dict, owner_id: int) -> tuple[dict, dict]:
            if name in tags:
                raise Conflict(f"Tag '{name}' already exists for the {kind} {owner_id}", key="name")
            return {**tags, name: meta}, roles

        return self._change(kind, ref, change, f"create tag {name}", name, author)

    def update(
        self, kind: str, ref: int | str, name: str, body: Any, author: Author | None = None
    ) -> Served:
        """Replace a tag's meta (PUT): `has_primary` and any other keys."""
        name, meta = _check_body(body, name)

        def change(tags: dict, roles: dict, owner_id: int) -> tuple[dict, dict]:
            if name not in tags:
                raise _not_found(name, kind, owner_id)
            return {**tags, name: meta}, roles

        return self._change(kind, ref, change, f"update tag {name}", name, author)

    def delete(self, kind: str, ref: int | str, name: str, author: Author | None = None) -> Served:
        """Remove a tag, strip it from the owner's roles and from nodes that lose it."""

        def change(tags: dict, roles: dict, owner_id: int) -> tuple[dict, dict]:
            if name not in tags:
                raise _not_found(name, kind, owner_id)
            return {k: v for k, v in tags.items() if k != name}, strip_tag(roles, name)

        return self._change(kind, ref, change, f"delete tag {name}", None, author)

    def _change(
        self, kind: str, ref: int | str, change, verb: str, name: str | None, author: Author | None
    ) -> Served:
        if kind == CLUSTER:
            return self._change_cluster(int(ref), change, verb, name, author)
        owners = self._owners(kind)

        def edit(current: dict, view: OwnerCatalog) -> tuple[dict, str]:
            tags, roles = change(current[TAGS], current[ROLES], current["id"])
            return {**current, TAGS: tags, ROLES: roles}, verb

        entity, result = owners.change(ref, edit, author)
        owners.reconcile_users(entity["name"], verb, author)
        data = tag_entity(name, entity[TAGS][name], kind, entity["id"]) if name else None
        return Served(data, result.commit, result.version)

    def _change_cluster(
        self, env_id: int, change, verb: str, name: str | None, author: Author | None
    ) -> Served:
        def edit(cluster: Cluster) -> Edit:
            tags, roles = change(dict(cluster.own.tags), dict(cluster.own.roles), env_id)
            check_role_tags(roles, _merged_tag_names(cluster, tags))
            files = {CLUSTER_TAGS: {TAGS: tags}}
            if roles != cluster.own.roles:
                files[CLUSTER_ROLES] = {ROLES: roles}
            return Edit(
                f"environment {env_id}: {verb}",
                files=files,
                result=tags.get(name) if name else None,
            )

        written = self._nodes.write(env_id, edit, author)
        data = tag_entity(name, written.value, CLUSTER, env_id) if name else None
        return written.served(data)

    # -- cluster roles -----------------------------------------------------------------------
    def roles(self, env_id: int, version: str | None = None) -> Served:
        """The cluster's merged roles (release ← cluster ← plugins), tags filled in."""
        cluster = self._nodes.cluster(env_id, version)
        return _served(cluster.meta.roles, cluster)

    def put_roles(self, env_id: int, body: Any, author: Author | None = None) -> Served:
        """Replace the cluster's own `roles_metadata` (`inventory/roles.yaml`)."""
        if not isinstance(ROLES_BODY.check(body)[ROLES], dict):
            raise InvalidInput("field 'roles_metadata' must be a mapping of roles", key=ROLES)
        roles = check_roles_metadata(body[ROLES], CLUSTER)

        def edit(cluster: Cluster) -> Edit:
            check_role_tags(roles, _merged_tag_names(cluster, cluster.own.tags))
            kept = tagging.merge_metadata(
                cluster.owner_metadata(tagging.Metadata(roles, cluster.own.tags))
            ).roles
            for node in cluster.nodes.values():
                lost = [r for r in tagging.node_roles(node) if r not in kept]
                if lost:
                    raise Conflict(
                        f"role {lost[0]!r} is assigned to node {node['id']}; it cannot be removed",
                        key=ROLES,
                    )
            return Edit(
                f"environment {env_id}: set cluster roles", files={CLUSTER_ROLES: {ROLES: roles}}
            )

        written = self._nodes.write(env_id, edit, author)
        return written.served(written.cluster.meta.roles)

    # -- per-node assignment ---------------------------------------------------------------
    def assign(
        self, env_id: int, node_ref: int | str, tags: Any, author: Author | None = None
    ) -> Served:
        """Give a node tags beyond its roles' (or give back role tags it had removed)."""
        wanted = _tag_list(tags)

        def edit(cluster: Cluster) -> Edit:
            node = dict(cluster.node(node_ref))
            removed = [t for t in node.get("tags_removed") or [] if t not in wanted]
            carried = set(tagging.base_tags({**node, "tags_removed": removed}, cluster.meta.roles))
            added = list(node.get("tags_added") or [])
            added += [t for t in wanted if t not in carried and t not in added]
            node.update(tags_added=added, tags_removed=removed)
            return Edit(
                f"environment {env_id}: assign tags {', '.join(wanted)} to node {node['id']}",
                {node["id"]: node},
                checked=[node["id"]],
                result=node["id"],
            )

        return self._node_answer(env_id, edit, author)

    def unassign(
        self, env_id: int, node_ref: int | str, tags: Any, author: Author | None = None
    ) -> Served:
        """Take tags off a node; its role-name tags always stay."""
        unwanted = _tag_list(tags)

        def edit(cluster: Cluster) -> Edit:
            node = dict(cluster.node(node_ref))
            for tag in unwanted:
                if not tagging.known_tag(tag, cluster.meta):
                    raise _not_found(tag, CLUSTER, env_id)
            role_names = set(tagging.node_roles(node))
            produced = {t for r in role_names for t in tagging.role_tags(r, cluster.meta.roles)}
            added = [t for t in node.get("tags_added") or [] if t not in unwanted]
            removed = list(node.get("tags_removed") or [])
            removed += [t for t in unwanted if t in produced - role_names and t not in removed]
            node.update(tags_added=added, tags_removed=removed)
            return Edit(
                f"environment {env_id}: unassign tags {', '.join(unwanted)} from node {node['id']}",
                {node["id"]: node},
                result=node["id"],
            )

        return self._node_answer(env_id, edit, author)

    def _node_answer(self, env_id: int, edit, author: Author | None) -> Served:
        written = self._nodes.write(env_id, edit, author)
        cluster = written.cluster
        return written.served(cluster.entity(cluster.nodes[written.value]))

    # -- questions about a cluster ---------------------------------------------------------
    def check(self, env_id: int, version: str | None = None) -> Served:
        """Warnings before a deployment (never a block): see `cluster_warnings`."""
        cluster = self._nodes.cluster(env_id, version)
        return _served({"warnings": cluster_warnings(cluster)}, cluster)

    def instances(self, env_id: int, name: str, version: str | None = None) -> Served:
        """`{"1": [node ids], ...}`: the nodes of each instance `name:N` of a tag."""
        cluster = self._nodes.cluster(env_id, version)
        if not tagging.known_tag(name, cluster.meta) or tagging.split_instance(name):
            raise _not_found(name, CLUSTER, env_id)
        return _served(tagging.instances(_deployed_tags(cluster), name), cluster)

    def all_instances(
        self, env_id: int, version: str | None = None, catalog_version: str | None = None
    ) -> dict[str, dict]:
        """Every instance tag of a cluster: `{"mysql": {"1": [1, 2], "2": [3]}}`.

        The data of the Hiera node document's `gitstore_instances`, which pins both
        `version` and `catalog_version` so the answer matches the ETag inputs it names.
        """
        cluster = self._nodes.cluster(env_id, version, catalog_version)
        return tagging.all_instances(_deployed_tags(cluster))

    def resolved_tasks(
        self,
        env_id: int,
        graph_type: str = DEFAULT_GRAPH,
        node: str | None = None,
        all_nodes: bool = False,
        version: str | None = None,
    ) -> Served:
        """Where each task of a graph type runs: nodes, master and the sync point.

        Nodes are those of the default filter (deployed, not being added or removed) unless
        `all_nodes`; `node` (id or fqdn) limits the answer to that node, filtered or not.
        """
        check_identifier(graph_type, "graph_type")
        cluster = self._nodes.cluster(env_id, version)
        chosen = [n for n in cluster.nodes.values() if all_nodes or tagging.default_node_filter(n)]
        if node is not None:
            named = cluster.node(node)
            chosen = [named]
        answer = tagging.resolve_tasks(
            graph_tasks(cluster, graph_type), cluster.tags_by_node(chosen)
        )
        return _served(answer, cluster)


def graph_tasks(cluster: Cluster, graph_type: str) -> list[dict]:
    """The tasks of a graph type for a cluster: the merged graph (`gitstore.deployment.graphs`)."""
    return merged_graph(cluster, graph_type)["tasks"]


def cluster_warnings(cluster: Cluster) -> list[dict]:
    """Warnings before a deployment, in this order: owners missing from the catalog, roles no
    owner defines, tags of the nodes' roles nobody carries, primary tags nobody carries, tags
    roles name but no owner defines, primary tags without a staying primary.

    Nodes pending deletion carry nothing that counts: they are about to leave.
    """
    meta = cluster.meta
    staying = [n for n in cluster.nodes.values() if not n.get("pending_deletion")]
    carried = {int(n["id"]): set(tagging.base_tags(n, meta.roles)) for n in staying}
    all_carried = set().union(*carried.values()) if carried else set()
    warnings = [
        _warning(
            "missing_owner",
            f"environment {cluster.env_id} names {what}, which the catalog does not hold",
        )
        for what in cluster.missing
    ]
    warnings += _role_warnings(cluster, staying, all_carried)
    reported = {w["tag"] for w in warnings if "tag" in w}
    warnings += _unassigned_primary_tags(cluster, reported)
    warnings += [
        _warning("unknown_tag", f"Role {role} contains non-existent tag {tag}", tag=tag, role=role)
        for role, tag in tagging.missing_role_tags(meta.roles, meta.tags)
    ]
    warnings += _missing_primaries(cluster, staying, carried)
    return warnings


def _warning(kind: str, message: str, **fields: str) -> dict:
    return {"kind": kind, **fields, "message": message}


def _role_warnings(cluster: Cluster, staying: list[dict], all_carried: set[str]) -> list[dict]:
    """Roles of staying nodes that no owner defines, and their tags that no node carries."""
    meta = cluster.meta
    warnings = []
    for role in sorted({r for n in staying for r in tagging.node_roles(n)}):
        if role not in meta.roles:
            message = f"role {role!r} of a node is defined by no owner"
            warnings.append(_warning("unknown_role", message, role=role))
            continue
        for tag in tagging.role_tags(role, meta.roles):
            if tag not in all_carried:
                message = (
                    f"tag {tag!r} of role {role!r} is carried by no node; give it back: "
                    f"gitstore tag assign --env {cluster.env_id} --node NODE {tag}"
                )
                warnings.append(_warning("tag_unassigned", message, tag=tag, role=role))
    return warnings


def _unassigned_primary_tags(cluster: Cluster, reported: set[str]) -> list[dict]:
    """Tags with `has_primary` that no node at all carries: the services a deployment of
    the release needs a primary of (controller, database, ...) are missing. A tag only
    leaving nodes carry is `no_primary`'s (one warning per cause)."""
    meta = cluster.meta
    anywhere = {t for n in cluster.nodes.values() for t in tagging.base_tags(n, meta.roles)}
    warnings = []
    for tag in sorted(meta.tags):
        if tag in reported or tag in anywhere or not tagging.has_primary(tag, meta.tags):
            continue
        roles = sorted(r for r in meta.roles if tag in tagging.role_tags(r, meta.roles))
        step = (
            f"add a node with role {roles[0]!r}: gitstore node create --env {cluster.env_id} "
            f"--fqdn FQDN --roles {roles[0]}"
            if roles
            else f"assign it: gitstore tag assign --env {cluster.env_id} --node NODE {tag}"
        )
        message = f"tag {tag!r} has a primary (has_primary) but no node carries it; {step}"
        warnings.append(_warning("tag_unassigned", message, tag=tag))
    return warnings


def _missing_primaries(
    cluster: Cluster, staying: list[dict], carried: dict[int, set[str]]
) -> list[dict]:
    """Tags with `has_primary` some node carries (a leaving one too) and no staying node is
    primary for: a leaving holder keeps the tag until it leaves, then nobody has it."""
    meta = cluster.meta
    anywhere = {t for n in cluster.nodes.values() for t in tagging.base_tags(n, meta.roles)}
    warnings = []
    for tag in sorted(t for t in anywhere if tagging.has_primary(t, meta.tags)):
        if any(
            tag in tagging.valid_primaries(n, carried[int(n["id"])], meta.tags) for n in staying
        ):
            continue
        only_leaving = not any(tag in tags for tags in carried.values())
        why = " (only nodes pending deletion carry it)" if only_leaving else " yet"
        warnings.append(_warning("no_primary", f"tag {tag!r} has no primary node{why}", tag=tag))
    return warnings


def _merged_tag_names(cluster: Cluster, own_tags: Mapping[str, Any]) -> Mapping[str, Any]:
    """Tags a cluster role may name: the merged view with the cluster's tags replaced."""
    owners = cluster.owner_metadata(tagging.Metadata(cluster.own.roles, own_tags))
    return tagging.merge_metadata(owners).tags


def _deployed_tags(cluster: Cluster) -> dict[int, list[str]]:
    return cluster.tags_by_node(
        [n for n in cluster.nodes.values() if not n.get("pending_deletion")]
    )


def _tag_list(tags: Any) -> list[str]:
    """Tags from a body (`{"tags": [...]}` or a bare list) or a query's `a,b` text."""
    if isinstance(tags, dict):
        tags = NODE_TAGS_BODY.check(tags)["tags"]
        if not isinstance(tags, list):
            raise InvalidInput(
                f"body field 'tags' must be a list of tag names, not {tags!r}", key="tags"
            )
    elif isinstance(tags, str):
        tags = [t for t in tags.split(",") if t]
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("'tags' must be a non-empty list of tag names", key="tags")
    return list(dict.fromkeys(tags))


def _served(data: Any, cluster: Cluster) -> Served:
    snapshot = cluster.env.snapshot
    return Served(data, snapshot.commit_id, snapshot.version)
