"""The plan of a transaction: the request, the nodes each graph runs on, its size estimated
before it is built, and the plan itself (docs/graphs.md, "Execute").

A record is refused by size before the plan exists: `merge.plan_size` estimates each node's
file from two representatives of every class of nodes with the same tags, where building the
whole plan costs what a real run does. Each node's file is held to `document_keys`, and all of
them together to `transaction_keys` (a plan within the first can still be too big to build in a
worker). The real node files are checked again before anything is recorded (`encoded_nodes`).
"""

from __future__ import annotations

import collections.abc  # noqa: F401 - yaql reads collections.abc without importing it
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any

import yaql
from yaql.language.exceptions import YaqlException

from gitstore import limits
from gitstore.bodies import Body
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.deployment import executors, records
from gitstore.deployment.graphs import graph_problems, merged_graph
from gitstore.deployment.inventory import Cluster
from gitstore.errors import InvalidInput
from gitstore.merge import execution, plan_size
from gitstore.merge import graphs as merging
from gitstore.merge import tags as tagging
from gitstore.names import is_number

PENDING = "pending"
DEFAULT_EXECUTOR = executors.DryRun.name
EXECUTE_BODY = Body("execute", ("cluster", "graphs", "dry_run", "noop_run", "force", "executor"))
#: An item of an execute body's `graphs`.
GRAPH_REQUEST = Body("graph request", ("type", "nodes", "tasks"))
_YAQL = threading.local()


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
    body = EXECUTE_BODY.check(body)
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
    item = GRAPH_REQUEST.check(item, "an item of 'graphs'")
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


# -- what each graph runs on ---------------------------------------------------------------
@dataclass(frozen=True)
class Chosen:
    """One requested graph: its merged, checked tasks and the tags of the nodes it runs on."""

    wanted: GraphRequest
    tasks: list[dict]
    tags_by_node: dict[int, list[str]]

    @classmethod
    def of(cls, cluster: Cluster, wanted: GraphRequest) -> Chosen:
        merged = merged_graph(cluster, wanted.type)
        tasks = [merging.with_defaults(t) for t in merged["tasks"]]
        merging.raise_problems(
            graph_problems(tasks), f"graph {wanted.type!r} of cluster {cluster.env_id}"
        )
        nodes = choose_nodes(cluster, wanted.nodes, merged.get("node_filter"))
        return cls(wanted, tasks, cluster.tags_by_node(nodes))


def check_estimate(env_id: int, chosen: list[Chosen]) -> None:
    """Refuse, from an estimate, a transaction one of whose node files would hold more than
    `document_keys` keys and list items (its plan and one history entry per task), or whose
    node files together would hold more than `transaction_keys`."""
    per_key: dict[str, float] = {}
    for graph in chosen:
        estimate = plan_size.node_values(graph.tasks, graph.tags_by_node, graph.wanted.tasks)
        for node_key, count in estimate.items():
            per_key[node_key] = per_key.get(node_key, 0) + count
    bounds = limits.current()
    key: str | None
    key, values = max(per_key.items(), key=lambda kv: kv[1], default=(None, 0))
    if values > bounds.document_keys:
        raise InvalidInput(_too_big(env_id, chosen, key, f"about {int(values)}"), key="graphs")
    total = sum(per_key.values())
    if total > bounds.transaction_keys:
        nodes = len({node for graph in chosen for node in graph.tags_by_node})
        what = f"graph {_graphs(chosen)} of cluster {env_id}"
        raise InvalidInput(_all_too_big(what, nodes, f"about {int(total)}"), key="graphs")


def _graphs(chosen: list[Chosen]) -> str:
    return ", ".join(f"{g.wanted.type!r} on {len(g.tags_by_node)} nodes" for g in chosen)


def _too_big(env_id: int, chosen: list[Chosen], key: Any, amount: str) -> str:
    where = "the sync points" if key == execution.SYNC else f"node {key}"
    return (
        f"graph {_graphs(chosen)} of cluster {env_id}: the transaction's record of {where} "
        f"would hold {amount} keys and list items (its tasks, their links and one history "
        f"entry per task), more than {limits.current().document_keys}, the limit "
        f"document_keys; run it on fewer nodes, or raise the limit in "
        f"<root>/{limits.LIMITS_FILE} (docs/security.md)"
    )


def _all_too_big(what: str, nodes: int, amount: str) -> str:
    """The message of a transaction whose node files together hold too much."""
    return (
        f"{what}: the transaction's records of its {nodes} nodes together would hold {amount} "
        f"keys and list items (their tasks, their links and one history entry per task), more "
        f"than {limits.current().transaction_keys}, the limit transaction_keys; run it on "
        f"fewer nodes, or raise the limit in <root>/{limits.LIMITS_FILE} (docs/security.md)"
    )


# -- the plan ------------------------------------------------------------------------------
def plan(
    cluster: Cluster, request: Request, chosen: list[Chosen], deadline: Deadline = UNBOUNDED
) -> dict:
    """The whole record of a new transaction, every graph pending; its building checks
    `deadline` task by task and node by node."""
    graphs = []
    for graph in chosen:
        placed = execution.serialize(
            graph.tasks, graph.tags_by_node, graph.wanted.tasks, deadline.check
        )
        graphs.append(
            {
                "type": graph.wanted.type,
                "status": PENDING,
                "nodes": list(graph.tags_by_node),
                **placed,
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


def encoded_nodes(doc: dict, finished: bool, deadline: Deadline = UNBOUNDED) -> dict[str, bytes]:
    """Each node's file, checked against `document_keys` (with room for the history of an
    unfinished run) and `document_bytes`, and all of them against `transaction_keys`."""
    limit = limits.current()
    found = {}
    total = 0
    for key, node in records.node_files(doc):
        deadline.check()
        entries = sum(len(g["tasks"]) for g in node["graphs"])
        reserve = 0 if finished else entries * plan_size.HISTORY_VALUES
        values = records.values(node) + reserve
        total += values
        if total > limit.transaction_keys:
            nodes = len({n for g in doc["graphs"] for n in g["nodes"]})
            what = f"graph {_doc_graphs(doc)} of cluster {doc['cluster']}"
            raise InvalidInput(_all_too_big(what, nodes, f"at least {total}"), key="graphs")
        if values > limit.document_keys:
            too_many = (
                f"more than {limit.document_keys} keys and list items, the limit document_keys"
            )
            raise InvalidInput(_whole_too_big(doc, key, too_many), key="graphs")
        data = records.encode_node(node)
        if len(data) > limit.document_bytes:
            too_big = (
                f"{len(data)} bytes, more than {limit.document_bytes}, the limit document_bytes"
            )
            raise InvalidInput(_whole_too_big(doc, key, too_big), key="graphs")
        found[key] = data
    return found


def _doc_graphs(doc: dict) -> str:
    return ", ".join(f"{g['type']!r} on {len(g['nodes'])} nodes" for g in doc["graphs"])


def _whole_too_big(doc: dict, key: str, excess: str) -> str:
    graphs = _doc_graphs(doc)
    where = "the sync points" if key == execution.SYNC else f"node {key}"
    return (
        f"graph {graphs} of cluster {doc['cluster']}: the transaction's record of {where} "
        f"(its tasks, their links and one history entry per task) would hold {excess}; run it "
        f"on fewer nodes, or raise the limit in <root>/{limits.LIMITS_FILE} (docs/security.md)"
    )
