"""Graph executions: transactions recorded as commits of the environment repository.

    environments/<id>.git   transactions/<id>.yaml

    {id, cluster, status, dry_run, noop_run, force, executor, created_at, finished_at?,
     message?, source: {commit, catalog_commit}, runner: {host, pid},
     graphs: [{type, status, nodes, tasks_graph, tasks_directory, history}]}

`execute` computes every graph's plan from the merged graph at the served commits (the ones
`source` names), records the transaction, then lets the executor run the graphs one after
another (a failure aborts the rest). Each graph's history is committed when it ends; the
transaction's status goes pending -> running -> ready | error. A dry run, or the `dry-run`
executor, is recorded finished in one commit.

Transaction ids are unique in the store (`GET /transactions/<id>` names no cluster): they are
allocated under a store-wide lock file, like node ids. At most one transaction of a cluster is
unfinished at a time, so only a cluster's newest transaction needs a look to answer 409. A
transaction whose runner process died (same host, pid gone) no longer blocks the cluster.
"""

from __future__ import annotations

import collections.abc  # noqa: F401 - yaql reads collections.abc without importing it
import copy
import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaql
from yaql.language.exceptions import YaqlException

from gitstore import documents, files, limits
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, WriteResult
from gitstore.backend.snapshot import Snapshot
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.deployment import executors
from gitstore.deployment.executors import ERROR, READY, RunContext
from gitstore.deployment.graphs import graph_problems, merged_graph
from gitstore.deployment.inventory import Cluster
from gitstore.errors import Conflict, Damaged, Forbidden, GitstoreError, InvalidInput, NotFound
from gitstore.merge import execution
from gitstore.merge import graphs as merging
from gitstore.merge import tags as tagging
from gitstore.names import is_number
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.deployment.inventory import Nodes
    from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.transactions")

FOLDER = "transactions"
LOCK_FILE = "transactions.lock"
PENDING, RUNNING = "pending", "running"
UNFINISHED = (PENDING, RUNNING)
DEFAULT_EXECUTOR = executors.DryRun.name
_BODY_FIELDS = ("cluster", "graphs", "dry_run", "noop_run", "force", "executor")
_GRAPH_FIELDS = ("type", "nodes", "tasks")
#: Summary fields of a listing (the plans stay in `GET /transactions/<id>`).
_SUMMARY = (
    "id",
    "cluster",
    "status",
    "dry_run",
    "noop_run",
    "force",
    "executor",
    "created_at",
    "finished_at",
    "message",
    "source",
)
_YAQL = threading.local()
#: Keys and list items one history entry may add (the entry; task_name, node_id, status,
#: time_start, time_end, message, exit_code, output).
_HISTORY_KEYS = 9


def transaction_path(transaction_id: int) -> str:
    return f"{FOLDER}/{int(transaction_id)}.yaml"


# -- the request -------------------------------------------------------------------------
@dataclass(frozen=True)
class GraphRequest:
    type: str
    nodes: list[int] | None
    tasks: list[str] | None


@dataclass(frozen=True)
class Request:
    cluster: int
    graphs: list[GraphRequest]
    dry_run: bool
    noop_run: bool
    force: bool
    executor: str


def parse_request(body: Any) -> Request:
    """An execute body `{cluster, graphs: [{type, nodes?, tasks?}], dry_run?, noop_run?,
    force?, executor?}`, checked field by field."""
    if not isinstance(body, dict):
        raise InvalidInput("execute body must be a JSON object")
    unknown = sorted(set(body) - set(_BODY_FIELDS))
    if unknown:
        raise InvalidInput(f"unknown execute field {unknown[0]!r}", key=unknown[0])
    cluster = body.get("cluster")
    if isinstance(cluster, bool) or not isinstance(cluster, int) or cluster < 1:
        raise InvalidInput("field 'cluster' must be a cluster id", key="cluster")
    graphs = body.get("graphs")
    if not isinstance(graphs, list) or not graphs:
        raise InvalidInput(
            "field 'graphs' must be a non-empty list of {type, nodes?, tasks?}", key="graphs"
        )
    flags = {}
    for name in ("dry_run", "noop_run", "force"):
        if not isinstance(body.get(name, False), bool):
            raise InvalidInput(f"field {name!r} must be true or false", key=name)
        flags[name] = body.get(name, False)
    executor = body.get("executor", DEFAULT_EXECUTOR)
    if not isinstance(executor, str) or not executor:
        raise InvalidInput("field 'executor' must be an executor name", key="executor")
    return Request(cluster, [_graph_request(g) for g in graphs], executor=executor, **flags)


def _graph_request(item: Any) -> GraphRequest:
    if not isinstance(item, dict):
        raise InvalidInput(
            "each of 'graphs' must be an object {type, nodes?, tasks?}", key="graphs"
        )
    unknown = sorted(set(item) - set(_GRAPH_FIELDS))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r} in 'graphs'", key="graphs")
    if "type" not in item:
        raise InvalidInput(
            "each of 'graphs' needs its 'type' (e.g. default, provision): none is assumed",
            key="type",
        )
    graph_type = item["type"]
    if not isinstance(graph_type, str) or not merging.GRAPH_TYPE.match(graph_type):
        raise InvalidInput(f"graph type {graph_type!r} must match [a-zA-Z0-9_-]+", key="type")
    for name in ("nodes", "tasks"):
        if name in item and item[name] is None:
            raise InvalidInput(
                f"'{name}' of a graph must be a list (leave it out for all {name})", key=name
            )
    nodes = item.get("nodes")
    if nodes is not None:
        if not isinstance(nodes, list) or not all(_is_node_id(n) for n in nodes):
            raise InvalidInput("'nodes' of a graph must be a list of node ids", key="nodes")
        nodes = list(dict.fromkeys(int(n) for n in nodes))
    tasks = item.get("tasks")
    if tasks is not None and (
        not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks)
    ):
        raise InvalidInput("'tasks' of a graph must be a list of task ids", key="tasks")
    return GraphRequest(graph_type, nodes, tasks)


def _is_node_id(value: Any) -> bool:
    if isinstance(value, str):
        return is_number(value)
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


# -- nodes -------------------------------------------------------------------------------
def choose_nodes(cluster: Cluster, wanted: list[int] | None, node_filter: str | None) -> list[dict]:
    """The request's nodes, else those the graph's YAQL `node_filter` keeps, else the default
    filter's (deployed, not being added or removed)."""
    if wanted is not None:
        outside = [str(n) for n in wanted if n not in cluster.nodes]
        if outside:
            raise InvalidInput(
                f"nodes {', '.join(outside)} are not in cluster {cluster.env_id}", key="nodes"
            )
        return [cluster.nodes[n] for n in wanted]
    if node_filter:
        expression = _expression(node_filter)
        return [
            n
            for n in cluster.nodes.values()
            if _evaluate(expression, node_filter, cluster.entity(n))
        ]
    return [n for n in cluster.nodes.values() if tagging.default_node_filter(n)]


def _expression(text: str):
    engine = getattr(_YAQL, "engine", None)
    if engine is None:
        engine = _YAQL.engine = yaql.factory.YaqlFactory().create()
    try:
        return engine(text)
    except YaqlException as exc:
        raise InvalidInput(
            f"node_filter {text!r} is not a valid YAQL expression: {exc}", key="node_filter"
        ) from exc


def _evaluate(expression, text: str, node: dict) -> bool:
    try:
        return bool(expression.evaluate(data=node))
    except (YaqlException, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise InvalidInput(
            f"node_filter {text!r} fails on node {node['id']}: {exc}", key="node_filter"
        ) from exc


# -- the service -------------------------------------------------------------------------
class Transactions:
    """Execute graphs; list and read what ran."""

    def __init__(self, repos: Repositories, nodes: Nodes, *, local_executor: bool = False) -> None:
        self._repos = repos
        self._nodes = nodes
        #: Whether graph execution may use the `local` executor, which runs shell commands as
        #: this process's user (off for a server unless `--enable-local-executor`).
        self.local_executor = local_executor

    # -- reading ---------------------------------------------------------------------------
    def list(self, cluster_id: int | None = None) -> Served:
        env_ids = [cluster_id] if cluster_id is not None else self._repos.environment_ids()
        found = []
        for env_id in env_ids:
            try:
                snapshot = self._repos.environment_repo(env_id).snapshot()
            except (NotFound, Damaged):
                if cluster_id is not None:
                    raise
                continue  # archived, or damaged (see /status)
            found += [
                _summary(snapshot.read_mapping(transaction_path(i)) or {}) for i in _ids(snapshot)
            ]
        return Served(sorted(found, key=lambda t: t.get("id") or 0))

    def get(self, transaction_id: int) -> Served:
        for env_id in self._repos.environment_ids():
            try:
                snapshot = self._repos.environment_repo(env_id).snapshot()
            except NotFound:
                continue
            doc = snapshot.read_mapping(transaction_path(transaction_id))
            if doc is not None:
                return Served(doc, snapshot.commit_id, snapshot.version)
        raise NotFound(f"transaction {transaction_id} does not exist")

    # -- executing -------------------------------------------------------------------------
    def execute(
        self,
        body: Any,
        author: Author | None = None,
        *,
        background: bool = True,
        deadline: Deadline = UNBOUNDED,
    ) -> Served:
        """Record a transaction for the request and start running it.

        `background` runs the executor in a thread and answers at once (the REST 202); without
        it the call returns when the run has ended. Planning (and a dry run's whole run) are
        steps of `deadline`; past it before the transaction is recorded, nothing is written.
        """
        request = parse_request(body)
        runner = executors.executor(request.executor)  # an unknown name is 400 in any case
        if request.dry_run:
            runner = executors.DryRun()
        elif isinstance(runner, executors.Local) and not self.local_executor:
            raise Forbidden(
                "the local executor runs shell commands as the server's user and "
                "is off; start the server with --enable-local-executor to allow it"
            )
        author = author or self._repos.default_author
        cluster = self._nodes.cluster(request.cluster)
        doc = self._plan(cluster, request, deadline)
        finished = isinstance(runner, executors.DryRun)
        if finished:
            self._run_graphs(doc, runner, deadline=deadline)
        _check_size(doc, finished)
        deadline.check()
        with self._id_lock():
            doc["id"] = self._next_id()
            written = self._record(doc, author, check_running=True)
        answer = copy.deepcopy(doc)
        if not finished and background:
            threading.Thread(
                target=self._run,
                args=(doc, runner, author),
                name=f"transaction-{doc['id']}",
                daemon=True,
            ).start()
        elif not finished:
            written = self._run(doc, runner, author) or written
            answer = doc
        return Served(answer, written.commit, written.version)

    def _plan(self, cluster: Cluster, request: Request, deadline: Deadline) -> dict:
        graphs = []
        for wanted in request.graphs:
            deadline.check()
            merged = merged_graph(cluster, wanted.type)
            tasks = [merging.with_defaults(t) for t in merged["tasks"]]
            merging.raise_problems(
                graph_problems(tasks), f"graph {wanted.type!r} of cluster {cluster.env_id}"
            )
            nodes = choose_nodes(cluster, wanted.nodes, merged.get("node_filter"))
            plan = execution.serialize(tasks, cluster.tags_by_node(nodes), wanted.tasks)
            graphs.append(
                {
                    "type": wanted.type,
                    "status": PENDING,
                    "nodes": [int(n["id"]) for n in nodes],
                    **plan,
                    "history": [],
                }
            )
        return {
            "id": None,
            "cluster": cluster.env_id,
            "status": PENDING,
            "dry_run": request.dry_run,
            "noop_run": request.noop_run,
            "force": request.force,
            "executor": "dry-run" if request.dry_run else request.executor,
            "created_at": executors.now(),
            "source": {
                "commit": cluster.env.snapshot.commit_id,
                "catalog_commit": cluster.catalog.commit_id,
            },
            "runner": {"host": socket.gethostname(), "pid": os.getpid()},
            "graphs": graphs,
        }

    def _run(self, doc: dict, runner: executors.Runner, author: Author) -> WriteResult | None:
        """Run every graph, committing each one's history; never raises (a thread runs it)."""
        try:
            doc["status"] = RUNNING
            self._record(doc, author)
            return self._run_graphs(doc, runner, lambda: self._record(doc, author))
        except Exception as exc:  # noqa: BLE001 - recorded: a thread has nobody to raise to
            log.exception("transaction %s failed", doc.get("id"))
            doc.update(
                status=ERROR,
                finished_at=executors.now(),
                message=f"the executor failed: {type(exc).__name__}: {exc}",
            )
            try:
                return self._record(doc, author)
            except GitstoreError:
                log.exception("transaction %s: could not record the failure", doc.get("id"))
                return None

    def _run_graphs(
        self,
        doc: dict,
        runner: executors.Runner,
        record: Callable[[], WriteResult] | None = None,
        deadline: Deadline = UNBOUNDED,
    ) -> WriteResult | None:
        """Run the graphs in order (a failed one stops the rest), calling `record` after each
        graph; the last call records the finished transaction."""
        failed = None
        for index, graph in enumerate(doc["graphs"]):
            if failed is not None:
                graph.update(status=execution.SKIPPED)
                continue
            context = RunContext(
                doc["id"] or 0, doc["cluster"], graph["type"], doc["noop_run"], deadline
            )
            graph["history"] = runner.run(graph, context)
            graph["status"] = ERROR if _aborted(graph) else READY
            last = index == len(doc["graphs"]) - 1
            if graph["status"] == ERROR:
                failed = graph["type"]
                doc["message"] = f"graph {failed!r} failed" + (
                    "" if last else "; the graphs after it did not run"
                )
            if record is not None and not last:
                record()
        doc.update(status=ERROR if failed else READY, finished_at=executors.now())
        return record() if record is not None else None

    # -- storage ---------------------------------------------------------------------------
    def _record(self, doc: dict, author: Author, *, check_running: bool = False) -> WriteResult:
        path = transaction_path(doc["id"])

        def operation(snapshot: Snapshot) -> ChangeSet:
            if check_running:
                self._check_idle(snapshot, doc["cluster"])
            changes = ChangeSet(
                f"environment {doc['cluster']}: transaction {doc['id']} {doc['status']}"
            )
            # No old bytes: a machine-written record has no comments to keep, and a round trip
            # of a large plan through ruamel costs seconds.
            changes.put(path, documents.encode(snapshot.repository, path, _stored(doc)))
            return changes

        return self._repos.environment_repo(doc["cluster"]).update(operation, author)

    def _check_idle(self, snapshot: Snapshot, env_id: int) -> None:
        ids = _ids(snapshot)
        if not ids:
            return
        latest = snapshot.read_mapping(transaction_path(ids[-1])) or {}
        if latest.get("status") in UNFINISHED and _runner_alive(latest.get("runner")):
            raise Conflict(
                f"transaction {latest.get('id')} of cluster {env_id} is still "
                f"{latest.get('status')}; wait for it to end",
                key="cluster",
            )

    def _next_id(self) -> int:
        highest = 0
        for env_id in self._repos.environment_ids():
            try:
                ids = _ids(self._repos.environment_repo(env_id).snapshot())
            except NotFound:
                continue
            highest = max([highest, *ids])
        return highest + 1

    def _id_lock(self):
        return files.exclusive_lock(self._repos.root / LOCK_FILE, 0o644)


def _check_size(doc: dict, finished: bool) -> None:
    """Refuse, before anything is recorded, a transaction whose record would exceed the limit
    `document_keys`: the plan grows with the nodes, so no bound on the graph alone can keep it
    small; and a record too big for the history its run adds would leave the transaction
    running for good (its runner, this server, is alive), blocking the cluster."""
    steps = sum(len(entries) for g in doc["graphs"] for entries in g["tasks_graph"].values())
    if limits.within_document_keys(doc, reserve=0 if finished else steps * _HISTORY_KEYS):
        return
    graphs = ", ".join(f"{g['type']!r} on {len(g['nodes'])} nodes" for g in doc["graphs"])
    raise InvalidInput(
        f"graph {graphs} of cluster {doc['cluster']}: its transaction would record more than "
        f"{limits.current().document_keys} keys and list items (the plan and one history "
        "entry per task and node), the limit document_keys; run it on fewer nodes, or raise "
        f"the limit in <root>/{limits.LIMITS_FILE} (docs/security.md)",
        key="graphs",
    )


def _ids(snapshot: Snapshot) -> list[int]:
    found = [
        int(e.name[: -len(".yaml")])
        for e in snapshot.list(FOLDER)
        if not e.is_tree and e.name.endswith(".yaml") and is_number(e.name[: -len(".yaml")])
    ]
    return sorted(found)


def _aborted(graph: Mapping[str, Any]) -> bool:
    """Whether a task failure stopped the graph (a `fail_on_error: false` failure does not)."""
    steps = {
        (s["id"], None if node == execution.SYNC else node): s
        for node, entries in graph["tasks_graph"].items()
        for s in entries
    }
    return any(
        h["status"] == ERROR
        and steps.get((h["task_name"], h["node_id"]), {}).get("fail_on_error", True) is not False
        for h in graph["history"]
    )


def _runner_alive(runner: Any) -> bool:
    """False only when the runner ran on this host and its process is gone."""
    if not isinstance(runner, dict) or runner.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(runner.get("pid")), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, TypeError, ValueError):
        return True
    return True


def _stored(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if v is not None or k in ("id",)}


def _summary(doc: dict) -> dict:
    summary = {k: doc.get(k) for k in _SUMMARY if k in doc}
    summary["graphs"] = [
        {"type": g.get("type"), "status": g.get("status")} for g in doc.get("graphs") or []
    ]
    return summary
