"""Deployment graphs of releases, plugins and clusters (docs/design.md, "The store on disk";
docs/graphs.md).

    catalog.git                 releases/<release>/graphs/<type>.yaml
                                plugins/<plugin>/graphs/<type>.yaml
    environments/<id>.git       graphs/<type>.yaml

A graph type matches `[a-zA-Z0-9_-]+` (default `default`). A cluster's `default` graph always
exists: absent, it reads as an empty graph. The merged graph of a cluster and type is the
release's, then each enabled plugin's in order, then the cluster's own (`merge.graphs`).

Writes validate what they change: a release graph alone (schema, duplicates, cycles, missing
dependencies), a plugin graph on its own (schema, duplicates, cycles: it may name release
tasks), a cluster graph as the merged graph it makes (only problems the cluster's tasks bring
in are refused: a later release or plugin change is reported by `check`, not blamed on the
next cluster write). Every one of them, `check` and execute also bound a graph's size (the
limits `graph_tasks` and `graph_links`), so a graph that is accepted can be executed. The push
gate applies the same rules (`catalog_graphs` and `cluster_graphs`, listed in
`gitstore.gitops.rules`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitstore import documents, limits
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.catalog.releases import PLUGIN, RELEASE, OwnerCatalog, OwnerKind
from gitstore.deployment.inventory import Cluster, load_cluster
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_FILE
from gitstore.merge import graphs as merging
from gitstore.merge.graphs import DEFAULT_TYPE, METADATA
from gitstore.served import Served
from gitstore.validation import TreeCheck

if TYPE_CHECKING:
    from gitstore.deployment.inventory import Nodes
    from gitstore.repositories import Repositories

CLUSTER = "cluster"
KINDS = (RELEASE.name, PLUGIN.name, CLUSTER)
FOLDER = "graphs"
VIEWS = ("merged", "own", "plugins", "release")
#: Entity fields a client may send back from a GET; they are derived, never stored.
_DERIVED = ("type", "relations", "id")
#: A graph body: Nailgun's graph fields; the derived ones are a GET's echo, dropped.
GRAPH_BODY = Body("graph", (*METADATA, "tasks", *_DERIVED), example='{"tasks": [...]}')
#: `PUT /clusters/<id>/deployment_tasks` with an object rather than the bare list of tasks.
TASKS_BODY = Body("deployment tasks", ("tasks",), example='{"tasks": [...]}')
_TASKS_BODY_IS = 'the deployment tasks body (a list of tasks, or {"tasks": [...]})'
_CATALOG_KINDS = {RELEASE.name: RELEASE, PLUGIN.name: PLUGIN}


def check_graph_type(value: Any, key: str = "graph_type") -> str:
    if not isinstance(value, str) or not merging.GRAPH_TYPE.match(value):
        raise InvalidInput(f"graph type {value!r} must match [a-zA-Z0-9_-]+", key=key)
    return value


def graph_path(folder: str, graph_type: str) -> str:
    """`releases/<r>/graphs/<type>.yaml`, or `graphs/<type>.yaml` for a cluster (folder "")."""
    return f"{folder}/{FOLDER}/{graph_type}.yaml" if folder else f"{FOLDER}/{graph_type}.yaml"


def read_graph(snapshot: Snapshot, path: str) -> dict | None:
    """The canonical graph document at `path` (None if absent); a broken file names itself."""
    blob = snapshot.object_id(path)
    if blob is None or snapshot.is_tree(path):
        return None

    def parse() -> dict:
        doc = merging.canonical_document(snapshot.read_yaml(path))
        return merging.check_document(doc, f"{snapshot.repository}:{path}")

    return snapshot.caches.graphs.get_or_compute(blob, parse)  # by blob id: immutable


def graph_types(snapshot: Snapshot, folder: str) -> list[str]:
    """The graph types stored under `folder` (sorted, `default` first)."""
    where = f"{folder}/{FOLDER}" if folder else FOLDER
    found = [
        entry.name[: -len(".yaml")]
        for entry in snapshot.list(where)
        if not entry.is_tree and entry.name.endswith(".yaml")
    ]
    found = [name for name in found if merging.GRAPH_TYPE.match(name)]
    return sorted(found, key=lambda name: (name != DEFAULT_TYPE, name))


@dataclass(frozen=True)
class Answer(Served):
    """A read of graphs: also names the catalog commit it was computed from."""

    catalog_commit: str | None = None


@dataclass(frozen=True)
class Owner:
    """A release, plugin or cluster at one commit: where its graphs live."""

    kind: str
    id: int
    name: str
    folder: str  # "" for a cluster: its graphs are at the root of its repository
    snapshot: Snapshot  # the commit holding its graphs
    catalog: Snapshot

    def read(self, graph_type: str) -> dict | None:
        doc = read_graph(self.snapshot, graph_path(self.folder, graph_type))
        if doc is None and self.kind == CLUSTER and graph_type == DEFAULT_TYPE:
            return {"tasks": []}  # a new cluster has an empty default graph
        return doc

    def types(self) -> list[str]:
        found = graph_types(self.snapshot, self.folder)
        if self.kind == CLUSTER and DEFAULT_TYPE not in found:
            found.insert(0, DEFAULT_TYPE)
        return found

    def entity(self, graph_type: str, doc: dict | None) -> dict:
        assert doc is not None  # a graph type `types` lists has its document
        entity: dict[str, Any] = {"type": graph_type}
        entity.update((key, doc.get(key)) for key in METADATA)
        entity["tasks"] = [served_task(task) for task in doc["tasks"]]
        entity["relations"] = [{"type": graph_type, "model": self.kind, "model_id": self.id}]
        return entity

    def answer(self, data: Any) -> Answer:
        return Answer(
            data,
            self.snapshot.commit_id,
            self.snapshot.version,
            catalog_commit=self.catalog.commit_id,
        )


def served_task(task: dict) -> dict:
    return merging.output_task(merging.with_defaults(task))


def cluster_owner(cluster: Cluster) -> Owner:
    return Owner(
        CLUSTER, cluster.env_id, str(cluster.env_id), "", cluster.env.snapshot, cluster.catalog
    )


def catalog_owner(catalog: Snapshot, kind: OwnerKind, ref: int | str) -> Owner:
    entity = OwnerCatalog(catalog, kind).entity(ref)
    return Owner(
        kind.name, entity["id"], entity["name"], f"{kind.folder}/{entity['name']}", catalog, catalog
    )


# -- merging a cluster's sources ------------------------------------------------------------------
@dataclass(frozen=True)
class Sources:
    """The graphs of one type a cluster merges: release, enabled plugins, the cluster's own."""

    graph_type: str
    release: dict | None
    plugins: list[tuple[str, dict]]
    own: dict | None

    @classmethod
    def of(cls, cluster: Cluster, graph_type: str) -> Sources:
        release = cluster.release["name"] if cluster.release is not None else None
        return cls.build(
            cluster.catalog,
            release,
            [p["name"] for p in cluster.plugins],
            read_graph(cluster.env.snapshot, graph_path("", graph_type)),
            graph_type,
        )

    @classmethod
    def build(
        cls,
        catalog: Snapshot,
        release: str | None,
        plugins: Sequence[str],
        own: dict | None,
        graph_type: str,
    ) -> Sources:
        """The sources named: a release and plugins (names) of `catalog`, the cluster's own."""
        release_doc = catalog_owner(catalog, RELEASE, release).read(graph_type) if release else None
        plugin_docs = [
            (name, doc)
            for name in plugins
            if (doc := catalog_owner(catalog, PLUGIN, name).read(graph_type))
        ]
        return cls(graph_type, release_doc, plugin_docs, own)

    @property
    def exists(self) -> bool:
        return self.graph_type == DEFAULT_TYPE or any((self.release, self.plugins, self.own))

    def merged(self, own: dict | None = None, *, with_own: bool = True) -> dict:
        """The merged document (`own` instead of the stored cluster graph when given)."""
        cluster = (own if own is not None else self.own) if with_own else None
        return merging.merge_graphs(self.release, self.plugins, cluster, self.graph_type)

    def problems(self) -> list[merging.Problem]:
        try:
            tasks = self.merged()["tasks"]
        except InvalidInput as exc:
            return [merging.Problem(exc.message)]
        return graph_problems(tasks)


def graph_problems(tasks: Sequence[dict], *, missing: bool = True) -> list[merging.Problem]:
    """`merge.graphs.graph_problems`, and a size over the limits `graph_tasks`, `graph_links`."""
    edges = merging.dependency_edges(tasks)
    size = [merging.Problem(message) for message in limits.graph_excess(len(tasks), len(edges))]
    return size + merging.graph_problems(tasks, missing=missing, edges=edges)


def merged_graph(cluster: Cluster, graph_type: str) -> dict:
    """The merged graph document of a cluster; NotFound for a type nobody defines."""
    sources = Sources.of(cluster, check_graph_type(graph_type))
    if not sources.exists:
        raise NotFound(
            f"cluster {cluster.env_id} has no graph of type {graph_type!r} (its "
            "release, enabled plugins and itself define none); list the types there are with "
            f"`gitstore graph list --env {cluster.env_id}`",
            key="graph_type",
        )
    return sources.merged()


def new_problems(sources: Sources, own: dict) -> list[merging.Problem]:
    """Problems of the merged graph with `own` that the graph without it does not have."""
    before = {p.message for p in graph_problems(sources.merged(with_own=False)["tasks"])}
    after = graph_problems(sources.merged(own)["tasks"])
    return [p for p in after if p.message not in before]


def plugin_overlaps(catalog: Snapshot, plugin_names: Sequence[str]) -> list[tuple]:
    """(graph type, task, plugin, plugin) for each task two of the plugins define."""
    owners = [catalog_owner(catalog, PLUGIN, name) for name in plugin_names]
    found = []
    for graph_type in sorted({t for owner in owners for t in owner.types()}):
        docs = [(o.name, doc["tasks"]) for o in owners if (doc := o.read(graph_type))]
        found += [(graph_type, *clash) for clash in merging.plugin_overlaps(docs)]
    return found


# -- the service ---------------------------------------------------------------------------------
class Graphs:
    """Graph documents of every owner, merged views, DOT and checks."""

    def __init__(self, repos: Repositories, nodes: Nodes) -> None:
        self._repos = repos
        self._nodes = nodes

    # -- owners ----------------------------------------------------------------------------
    def cluster(
        self, env_id: int, version: str | None = None, catalog_version: str | None = None
    ) -> Cluster:
        return self._nodes.cluster(env_id, version, catalog_version)

    def owner(
        self,
        kind: str,
        ref: int | str,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Owner:
        """The owner at the given commits (a release or plugin: `catalog_version`, else
        `version`, names the catalog commit)."""
        if kind == CLUSTER:
            return cluster_owner(self.cluster(int(ref), version, catalog_version))
        if kind not in _CATALOG_KINDS:
            raise NotFound(f"graphs have no owner type {kind!r}; use one of {', '.join(KINDS)}")
        catalog = self._repos.catalog().snapshot(catalog_version or version)
        return catalog_owner(catalog, _CATALOG_KINDS[kind], ref)

    # -- one owner's documents -------------------------------------------------------------
    def list(
        self,
        kind: str,
        ref: int | str,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Answer:
        owner = self.owner(kind, ref, version, catalog_version)
        return owner.answer([owner.entity(t, owner.read(t)) for t in owner.types()])

    def get(
        self,
        kind: str,
        ref: int | str,
        graph_type: str,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Answer:
        owner = self.owner(kind, ref, version, catalog_version)
        return owner.answer(owner.entity(graph_type, _existing(owner, graph_type)))

    def create(
        self, kind: str, ref: int | str, graph_type: str, body: Any, author: Author | None = None
    ) -> Answer:
        """POST: a new graph of `graph_type`; Conflict if the owner has one."""
        fields = _graph_body(body, graph_type)

        def change(owner: Owner, old: dict | None) -> dict:
            if old is not None:
                raise Conflict(
                    f"{owner.kind} {owner.id} already has a graph of type {graph_type!r}",
                    key="graph_type",
                )
            return fields

        return self._write(kind, ref, graph_type, change, "create", author)

    def replace(
        self, kind: str, ref: int | str, graph_type: str, body: Any, author: Author | None = None
    ) -> Answer:
        """PUT: the graph replaced whole (fields not given are reset)."""
        fields = _graph_body(body, graph_type)
        change = _requiring(graph_type, lambda old: fields)
        return self._write(kind, ref, graph_type, change, "replace", author)

    def patch(
        self, kind: str, ref: int | str, graph_type: str, body: Any, author: Author | None = None
    ) -> Answer:
        """PATCH: only the fields given change; a `tasks` list replaces every task."""
        fields = _graph_body(body, graph_type, partial=True)
        change = _requiring(graph_type, lambda old: {**old, **fields})
        return self._write(kind, ref, graph_type, change, "update", author)

    def delete(
        self, kind: str, ref: int | str, graph_type: str, author: Author | None = None
    ) -> Answer:
        """Remove a graph (a cluster's default graph then reads as empty again)."""
        change = _requiring(graph_type, lambda old: None)
        return self._write(kind, ref, graph_type, change, "delete", author)

    def put_cluster_tasks(
        self, env_id: int, graph_type: str, tasks: Any, author: Author | None = None
    ) -> Answer:
        """Upsert the cluster's own graph of a type with `tasks` (its metadata is kept)."""
        if isinstance(tasks, dict):
            tasks = TASKS_BODY.check(tasks, _TASKS_BODY_IS).get("tasks")
        if not isinstance(tasks, list):
            raise InvalidInput("body must be a list of tasks", key="tasks")
        fields = _graph_body({"tasks": tasks}, graph_type, partial=True)

        def change(owner: Owner, old: dict | None) -> dict:
            return {**(old or {}), **fields}

        written = self._write(CLUSTER, env_id, graph_type, change, "set tasks of", author)
        return Answer(
            written.data["tasks"],
            written.commit,
            written.version,
            catalog_commit=written.catalog_commit,
        )

    def _write(
        self,
        kind: str,
        ref: int | str,
        graph_type: str,
        change: Callable[[Owner, dict | None], dict | None],
        verb: str,
        author: Author | None,
    ) -> Answer:
        check_graph_type(graph_type)
        author = author or self._repos.default_author
        outcome: dict[str, Any] = {}

        def operation(snapshot: Snapshot) -> ChangeSet:
            if kind == CLUSTER:
                owner = cluster_owner(load_cluster(snapshot, self._repos.catalog().snapshot()))
                label = f"environment {owner.id}"
            else:
                owner = catalog_owner(snapshot, _CATALOG_KINDS[kind], ref)
                label = f"catalog: {kind} {owner.name}"
            new = change(owner, owner.read(graph_type))
            outcome.update(owner=owner, doc=new)
            return _changes(owner, graph_type, new, f"{label}: {verb} graph {graph_type}")

        if kind == CLUSTER:
            repo = self._repos.environment_repo(int(ref))
        elif kind in _CATALOG_KINDS:
            repo = self._repos.catalog()
        else:
            raise NotFound(f"graphs have no owner type {kind!r}; use one of {', '.join(KINDS)}")
        result = repo.update(operation, author)
        owner, doc = outcome["owner"], outcome["doc"]
        data = owner.entity(graph_type, doc) if doc is not None else None
        catalog = owner.catalog.commit_id if kind == CLUSTER else result.commit
        return Answer(data, result.commit, result.version, catalog_commit=catalog)

    # -- a cluster's merged graph ----------------------------------------------------------
    def tasks(
        self,
        env_id: int,
        graph_type: str = DEFAULT_TYPE,
        view: str = "merged",
        *,
        version: str | None = None,
        catalog_version: str | None = None,
        start: str | None = None,
        end: str | None = None,
        include: Sequence[str] = (),
    ) -> Answer:
        """A cluster's tasks: merged, or only its own, its plugins' or its release's."""
        if view not in VIEWS:
            raise NotFound(f"no deployment task view {view!r}; use one of {', '.join(VIEWS)}")
        cluster = self.cluster(env_id, version, catalog_version)
        sources = Sources.of(cluster, check_graph_type(graph_type))
        if not sources.exists:
            merged_graph(cluster, graph_type)  # raises the NotFound
        if view == "merged":
            tasks = sources.merged()["tasks"]
        elif view == "own":
            tasks = (sources.own or {"tasks": []})["tasks"]
        elif view == "plugins":
            tasks = merging.merge_graphs(None, sources.plugins, None, graph_type)["tasks"]
        else:
            tasks = (sources.release or {"tasks": []})["tasks"]
        return _tasks_answer(cluster_owner(cluster), tasks, start, end, include)

    def sources(
        self,
        env_id: int,
        graph_type: str = DEFAULT_TYPE,
        *,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Answer:
        """Where each task of the merged graph comes from: `{task id: {"kind", "name"}}`,
        kind `release`, `plugin` or `cluster` (the owner whose task the merge kept)."""
        cluster = self.cluster(env_id, version, catalog_version)
        sources = Sources.of(cluster, check_graph_type(graph_type))
        if not sources.exists:
            merged_graph(cluster, graph_type)  # raises the NotFound
        owners: list[tuple[str, str, dict | None]] = [
            (RELEASE.name, (cluster.release or {}).get("name", ""), sources.release),
            *((PLUGIN.name, name, doc) for name, doc in sources.plugins),
            (CLUSTER, str(env_id), sources.own),
        ]
        found: dict[str, dict] = {}
        for kind, name, doc in owners:  # least to most specific, as the merge replaces tasks
            for task in (doc or {}).get("tasks") or []:
                found[task["id"]] = {"kind": kind, "name": name}
        return cluster_owner(cluster).answer(found)

    def release_tasks(
        self,
        release: int | str,
        graph_type: str = DEFAULT_TYPE,
        *,
        version: str | None = None,
        start: str | None = None,
        end: str | None = None,
        include: Sequence[str] = (),
    ) -> Answer:
        owner = self.owner(RELEASE.name, release, catalog_version=version)
        doc = _existing(owner, check_graph_type(graph_type))
        return _tasks_answer(owner, doc["tasks"], start, end, include)

    def dot(
        self,
        env_id: int,
        graph_type: str = DEFAULT_TYPE,
        *,
        only: Sequence[str] = (),
        parents_for: str | None = None,
        remove: Sequence[str] = (),
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Answer:
        """The merged graph in Graphviz DOT (see `merge.graphs.to_dot`)."""
        cluster = self.cluster(env_id, version, catalog_version)
        tasks = merged_graph(cluster, graph_type)["tasks"]
        text = merging.to_dot(tasks, graph_type, only=only, parents_for=parents_for, remove=remove)
        return cluster_owner(cluster).answer(text)

    def check(
        self,
        env_id: int,
        graph_type: str = DEFAULT_TYPE,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Answer:
        """Problems of a cluster's merged graph (after a release or plugin change, say)."""
        cluster = self.cluster(env_id, version, catalog_version)
        sources = Sources.of(cluster, check_graph_type(graph_type))
        if not sources.exists:
            merged_graph(cluster, graph_type)
        problems = [
            {"message": p.message, **({"task": p.task} if p.task else {})}
            for p in sources.problems()
        ]
        problems += [
            {
                "message": f"environment {cluster.env_id} names {what}, which the "
                "catalog does not hold"
            }
            for what in cluster.missing
        ]
        data = {
            "cluster": cluster.env_id,
            "graph_type": graph_type,
            "valid": not problems,
            "errors": problems,
        }
        return cluster_owner(cluster).answer(data)

    # -- every owner ---------------------------------------------------------------------------
    def search(
        self,
        clusters: Sequence[int] = (),
        plugins: Sequence[int] = (),
        releases: Sequence[int] = (),
        types: Sequence[str] = (),
        related: bool = False,
        version: str | None = None,
        catalog_version: str | None = None,
    ) -> Answer:
        """Graphs of the owners named (every owner when none is), each with its relations;
        `related` adds the graphs of the named clusters' release and enabled plugins."""
        catalog = self._repos.catalog().snapshot(catalog_version)
        owners = self._search_owners(catalog, clusters, plugins, releases, related, version)
        wanted = set(types)
        for graph_type in wanted:
            check_graph_type(graph_type, "graph_types")
        found = [
            owner.entity(t, owner.read(t))
            for owner in owners
            for t in owner.types()
            if not wanted or t in wanted
        ]
        return Answer(found, None, None, catalog_commit=catalog.commit_id)

    def _search_owners(
        self,
        catalog: Snapshot,
        clusters: Sequence[int],
        plugins: Sequence[int],
        releases: Sequence[int],
        related: bool,
        version: str | None,
    ) -> builtins.list[Owner]:
        if not (clusters or plugins or releases):
            releases = [e["id"] for e in OwnerCatalog(catalog, RELEASE).entities()]
            plugins = [e["id"] for e in OwnerCatalog(catalog, PLUGIN).entities()]
            clusters = self._repos.environment_ids()
        wanted = [(RELEASE, ref) for ref in releases] + [(PLUGIN, ref) for ref in plugins]
        owners: dict[tuple[str, int], Owner] = {}
        for env_id in clusters:
            env = self._repos.environment_repo(int(env_id)).snapshot(version)
            cluster = load_cluster(env, catalog)
            owners[(CLUSTER, cluster.env_id)] = cluster_owner(cluster)
            if related and cluster.release is not None:
                wanted.append((RELEASE, cluster.release["id"]))
            if related:
                wanted += [(PLUGIN, p["id"]) for p in cluster.plugins]
        for kind, ref in wanted:
            owner = catalog_owner(catalog, kind, int(ref))
            owners[(owner.kind, owner.id)] = owner
        return sorted(owners.values(), key=lambda o: (KINDS.index(o.kind), o.id))

    # -- rules other services apply --------------------------------------------------------
    def check_plugins(self, plugin_names: Sequence[str], catalog: Snapshot) -> None:
        """Refuse enabling plugins together that define the same task id in a graph type."""
        clashes = plugin_overlaps(catalog, plugin_names)
        if clashes:
            graph_type, task, first, second = clashes[0]
            raise merging.overlap_error([(task, first, second)], graph_type)


# -- helpers --------------------------------------------------------------------------------------
def _no_graph(owner: Owner, graph_type: str) -> NotFound:
    option = "env" if owner.kind == CLUSTER else owner.kind
    return NotFound(
        f"{owner.kind} {owner.id} has no graph of type {graph_type!r}; list its types with "
        f"`gitstore graph list --{option} {owner.id}`",
        key="graph_type",
    )


def _existing(owner: Owner, graph_type: str) -> dict:
    doc = owner.read(check_graph_type(graph_type))
    if doc is None:
        raise _no_graph(owner, graph_type)
    return doc


def _requiring(
    graph_type: str, make: Callable[[dict], dict | None]
) -> Callable[[Owner, dict | None], dict | None]:
    """A change that needs the graph to exist (PUT, PATCH, DELETE): NotFound otherwise."""

    def change(owner: Owner, old: dict | None) -> dict | None:
        if old is None:
            raise _no_graph(owner, graph_type)
        return make(old)

    return change


def _graph_body(body: Any, graph_type: str, *, partial: bool = False) -> dict:
    """The stored fields of a graph body (derived fields dropped, tasks made canonical)."""
    body = GRAPH_BODY.check(body)
    if body.get("type") not in (None, graph_type):
        raise InvalidInput(
            f"body names graph type {body['type']!r} but the URL {graph_type!r}", key="type"
        )
    fields = {k: v for k, v in body.items() if k not in _DERIVED}
    if not partial:
        fields.setdefault("tasks", [])
    if "tasks" in fields:
        if not isinstance(fields["tasks"], list):
            raise InvalidInput("graph field 'tasks' must be a list of tasks", key="tasks")
        fields["tasks"] = [merging.canonical_task(t) for t in fields["tasks"]]
    return fields


def _stored(doc: dict) -> dict:
    """The file's document: metadata given (not null), then the tasks."""
    stored = {k: doc[k] for k in METADATA if doc.get(k) is not None}
    stored.update((k, v) for k, v in doc.items() if k not in stored and k != "tasks")
    stored["tasks"] = doc.get("tasks") or []
    return stored


def _changes(owner: Owner, graph_type: str, doc: dict | None, message: str) -> ChangeSet:
    path = graph_path(owner.folder, graph_type)
    changes = ChangeSet(message)
    if doc is None:
        if owner.snapshot.exists(path):
            changes.delete(path)
        return changes
    doc = _stored(doc)
    _validate(owner, graph_type, doc)
    old = owner.snapshot.read(path)
    old_doc = owner.snapshot.read_yaml(path) if old else None
    changes.put(
        path,
        documents.encode(
            owner.snapshot.repository,
            path,
            doc,
            old if isinstance(old_doc, dict) else None,
            caches=owner.snapshot.caches,
        ),
    )
    return changes


def _validate(owner: Owner, graph_type: str, doc: dict) -> None:
    what = f"{owner.kind} {owner.id} graph {graph_type!r}"
    merging.check_document(doc, what)
    if owner.kind == RELEASE.name:
        merging.raise_problems(graph_problems(doc["tasks"]), what)
    elif owner.kind == PLUGIN.name:
        merging.raise_problems(graph_problems(doc["tasks"], missing=False), what)
    else:
        cluster = load_cluster(owner.snapshot, owner.catalog)
        sources = Sources.of(cluster, graph_type)
        merging.raise_problems(
            new_problems(sources, doc), f"{what} (merged with its release and plugins)"
        )


def _tasks_answer(
    owner: Owner, tasks: list[dict], start: str | None, end: str | None, include: Sequence[str]
) -> Answer:
    chosen = merging.legacy_subgraph([merging.with_defaults(t) for t in tasks], start, end, include)
    return owner.answer([merging.output_task(t) for t in chosen])


# -- the push gate ----------------------------------------------------------------------------
def catalog_graphs(tree: TreeCheck) -> None:
    """Release graphs must be whole; plugin graphs acyclic (they may name release tasks)."""
    for kind in (RELEASE, PLUGIN):
        for entry in tree.snapshot.list(kind.folder):
            for path in tree.files_under(f"{kind.folder}/{entry.name}/{FOLDER}"):
                doc = _gate_document(tree, path, f"{kind.folder}/{entry.name}/{FOLDER}/")
                if doc is not None:
                    problems = graph_problems(doc["tasks"], missing=kind is RELEASE)
                    _report(tree, path, problems)


def cluster_graphs(tree: TreeCheck) -> None:
    """Cluster graphs are valid documents whose merged graph they do not break, and the
    enabled plugins do not define the same task."""
    docs = {}
    for path in tree.files_under(FOLDER):
        doc = _gate_document(tree, path, f"{FOLDER}/")
        if doc is not None:
            docs[path] = doc
    env = tree.document(ENVIRONMENT_FILE)
    owners = _gate_owners(tree, env if isinstance(env, dict) else {})
    for path, doc in docs.items():
        if owners is None:
            _report(tree, path, graph_problems(doc["tasks"], missing=False))
            continue
        graph_type = path[len(FOLDER) + 1 : -len(".yaml")]
        try:
            assert tree.catalog is not None  # `_gate_owners` found its owners in it
            sources = Sources.build(tree.catalog.snapshot, *owners, None, graph_type)
            _report(tree, path, new_problems(sources, doc))
        except InvalidInput:
            continue  # two plugins define one task: reported on environment.yaml


def _gate_owners(tree: TreeCheck, env: dict) -> tuple[str | None, list[str]] | None:
    """The release and plugins environment.yaml names, when the catalog holds them all."""
    if tree.catalog is None:
        return None
    release = env.get("release") if isinstance(env.get("release"), str) else None
    plugins = [p for p in env.get("plugins") or [] if isinstance(p, str)]
    try:
        clashes = plugin_overlaps(tree.catalog.snapshot, plugins)
        if release:
            catalog_owner(tree.catalog.snapshot, RELEASE, release)
    except NotFound:
        return None  # an unknown owner: the tags check reports it
    for graph_type, task, first, second in clashes:
        tree.report(
            ENVIRONMENT_FILE,
            f"plugins {first!r} and {second!r} both define task "
            f"{task!r} in graph type {graph_type!r}",
            key="plugins",
        )
    return release, plugins


def _gate_document(tree: TreeCheck, path: str, folder: str) -> dict | None:
    """The canonical graph at `path` when it is a valid document (problems reported)."""
    name = path[len(folder) :]
    if "/" in name or not name.endswith(".yaml") or not merging.GRAPH_TYPE.match(name[:-5]):
        tree.report(path, "graphs are files graphs/<type>.yaml, the type matching [a-zA-Z0-9_-]+")
        return None
    raw = tree.document(path)
    if raw is not None and not isinstance(raw, dict | list | str | int | float | bool):
        return None  # it does not parse: reported already
    doc = merging.canonical_document(raw)
    problems = merging.document_problems(doc)
    _report(tree, path, problems)
    return None if problems else doc


def _report(tree: TreeCheck, path: str, problems: Sequence[merging.Problem]) -> None:
    for problem in problems:
        tree.report(path, problem.message)
