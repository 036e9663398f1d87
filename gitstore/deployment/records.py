"""How a transaction is stored in its environment repository: a small summary, the graphs'
task data, and one file per node, so that a record grows with the nodes without any one file
doing so (docs/graphs.md, "Transactions").

    transactions/<id>/summary.yaml       {id, cluster, status, dry_run, noop_run, force, executor,
                                          created_at, finished_at?, message?, source, runner,
                                          graphs: [{type, status}]}
    transactions/<id>/plans.yaml         {graphs: [{type, nodes, tasks_directory}]}
    transactions/<id>/nodes/<key>.json   {node, graphs: [{type, tasks, history}]}
    transactions/<id>.yaml               a whole record written by an earlier gitstore (read only)

`<key>` is a key of `tasks_graph`: a node id, `master`, or `null` for the sync points. A node
file's `graphs` follow the summary's order; `tasks` are that node's `tasks_graph` entries with
each `requires` item written `"<task>@<key>"`, and `history` the node's history entries in the
order they ran. A listing reads only summaries; one node's view reads its own file.

Node files are JSON (which YAML also reads): machine-written records of thousands of values per
node that a person never edits, which the C JSON encoder and parser handle many times faster
than YAML's (docs/graphs.md, "Stored per node").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.snapshot import Snapshot
from gitstore.errors import InvalidInput
from gitstore.merge.execution import SYNC
from gitstore.names import is_number

FOLDER = "transactions"
SUMMARY = "summary.yaml"
PLANS = "plans.yaml"
NODES = "nodes"
MASTER = "master"
#: Summary fields of a transaction (a listing shows them; plans and nodes live elsewhere).
SUMMARY_FIELDS = (
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
    "runner",
)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def legacy_path(transaction_id: int) -> str:
    return f"{FOLDER}/{int(transaction_id)}.yaml"


def folder(transaction_id: int) -> str:
    return f"{FOLDER}/{int(transaction_id)}"


def summary_path(transaction_id: int) -> str:
    return f"{folder(transaction_id)}/{SUMMARY}"


def node_path(transaction_id: int, key: str) -> str:
    return f"{folder(transaction_id)}/{NODES}/{key}.json"


def is_node_key(key: str) -> bool:
    return key in (SYNC, MASTER) or is_number(key)


# -- ids -------------------------------------------------------------------------------------
def ids(snapshot: Snapshot) -> list[int]:
    """Every transaction id of the commit, whichever form it was recorded in."""
    found = set()
    for entry in snapshot.list(FOLDER):
        stem = entry.name if entry.is_tree else entry.name.removesuffix(".yaml")
        if is_number(stem) and (entry.is_tree or entry.name.endswith(".yaml")):
            found.add(int(stem))
    return sorted(found)


# -- writing ---------------------------------------------------------------------------------
def summary_of(doc: Mapping[str, Any]) -> dict:
    """The summary: the transaction's fields and each graph's type and status."""
    summary = {k: doc[k] for k in SUMMARY_FIELDS if doc.get(k) is not None or k == "id"}
    summary["graphs"] = [{"type": g["type"], "status": g["status"]} for g in doc["graphs"]]
    return summary


def plans_of(doc: Mapping[str, Any]) -> dict:
    return {
        "graphs": [
            {"type": g["type"], "nodes": g["nodes"], "tasks_directory": g["tasks_directory"]}
            for g in doc["graphs"]
        ]
    }


def node_files(doc: Mapping[str, Any]) -> Iterator[tuple[str, dict]]:
    """(node key, file document) of each node, requires written compactly, made one at a time
    so that only one node's copy is held at once."""
    keys: dict[str, None] = {}
    for graph in doc["graphs"]:
        keys.update(dict.fromkeys(graph["tasks_graph"]))
    histories = [_history_by_node(graph.get("history") or []) for graph in doc["graphs"]]
    for key in keys:
        graphs = [
            {
                "type": graph["type"],
                "tasks": [_compact(e) for e in graph["tasks_graph"].get(key, ())],
                "history": history.get(key, []),
            }
            for graph, history in zip(doc["graphs"], histories, strict=True)
        ]
        yield key, {"node": key, "graphs": graphs}


def values(node: Mapping[str, Any]) -> int:
    """Keys and list items of a node file, counted from its known shape (entries hold only
    scalars and `requires`, a list of strings) rather than by walking every value."""
    count = len(node) + len(node["graphs"])
    for graph in node["graphs"]:
        count += len(graph) + len(graph["tasks"]) + len(graph["history"])
        count += sum(len(e) + len(e["requires"]) for e in graph["tasks"])
        count += sum(map(len, graph["history"]))
    return count


def _history_by_node(history: Iterable[Mapping[str, Any]]) -> dict[str, list]:
    found: dict[str, list] = {}
    for entry in history:
        node = entry.get("node_id")
        found.setdefault(SYNC if node is None else str(node), []).append(entry)
    return found


def _compact(entry: Mapping[str, Any]) -> dict:
    requires = [f"{r['name']}@{_key(r.get('node_id'))}" for r in entry.get("requires") or ()]
    return {**entry, "requires": requires}


def _key(node_id: Any) -> str:
    return SYNC if node_id is None else str(node_id)


def put_summary(changes: ChangeSet, repository: str, doc: Mapping[str, Any]) -> None:
    path = summary_path(doc["id"])
    changes.put(path, documents.encode(repository, path, summary_of(doc)))


def put_plans(changes: ChangeSet, repository: str, doc: Mapping[str, Any]) -> None:
    path = f"{folder(doc['id'])}/{PLANS}"
    changes.put(path, documents.encode(repository, path, plans_of(doc)))


def put_nodes(changes: ChangeSet, encoded: Mapping[str, bytes], transaction_id: int) -> None:
    for key, data in encoded.items():
        changes.put(node_path(transaction_id, key), data)


def encode_node(node: Mapping[str, Any]) -> bytes:
    """A node file: one line per task entry and per history entry, so a diff of a run shows
    the entries that changed."""
    graphs = []
    for graph in node["graphs"]:
        tasks = ",\n".join(map(_ENCODER.encode, graph["tasks"]))
        history = ",\n".join(map(_ENCODER.encode, graph["history"]))
        graphs.append(
            f'{{"type":{_ENCODER.encode(graph["type"])},\n"tasks":[\n{tasks}],\n'
            f'"history":[\n{history}]}}'
        )
    text = f'{{"node":{_ENCODER.encode(node["node"])},"graphs":[\n' + ",\n".join(graphs) + "]}\n"
    return text.encode("utf-8")


# -- reading ---------------------------------------------------------------------------------
def read_summary(snapshot: Snapshot, transaction_id: int) -> dict | None:
    """The summary of a transaction (None if the commit has none of that id)."""
    summary = snapshot.read_mapping(summary_path(transaction_id))
    if summary is not None:
        return summary
    legacy = snapshot.read_mapping(legacy_path(transaction_id))
    return None if legacy is None else summary_of(_with_defaults(legacy))


def read_whole(snapshot: Snapshot, transaction_id: int, *, nodes: bool = True) -> dict | None:
    """The record as one document (`nodes` false: without `tasks_graph` and `history`)."""
    summary = snapshot.read_mapping(summary_path(transaction_id))
    if summary is None:
        legacy = snapshot.read_mapping(legacy_path(transaction_id))
        if legacy is None or nodes:
            return legacy
        return {**legacy, "graphs": [_without_nodes(g) for g in legacy.get("graphs") or []]}
    plans = snapshot.read_mapping(f"{folder(transaction_id)}/{PLANS}") or {}
    graphs = [
        {**graph, **plan}
        for graph, plan in zip(summary["graphs"], plans.get("graphs") or [], strict=False)
    ]
    if nodes:
        _add_nodes(snapshot, transaction_id, graphs)
    return {**summary, "graphs": graphs}


def node_bytes(snapshot: Snapshot, transaction_id: int) -> int:
    """What the node files of a split record hold together, read from object headers."""
    base = f"{folder(transaction_id)}/{NODES}"
    return sum(snapshot.size(f"{base}/{e.name}") or 0 for e in snapshot.list(base))


def _add_nodes(snapshot: Snapshot, transaction_id: int, graphs: list[dict]) -> None:
    for graph in graphs:
        graph.update(tasks_graph={}, history=[])
    names = [e.name for e in snapshot.list(f"{folder(transaction_id)}/{NODES}")]
    for key in sorted((n.removesuffix(".json") for n in names), key=_rank):
        node = _read_node_file(snapshot, transaction_id, key)
        for graph, part in zip(graphs, node.get("graphs") or [], strict=False):
            if part.get("tasks"):
                graph["tasks_graph"][key] = [_expanded(e) for e in part["tasks"]]
            graph["history"] += part.get("history") or []
    for graph in graphs:  # in the order they ran (a tie: sync points, master, nodes by id)
        graph["history"].sort(key=lambda h: h.get("time_start") or "")


def read_node(snapshot: Snapshot, transaction_id: int, key: str) -> dict | None:
    """One node's part of a transaction: `{id, cluster, status, node, graphs: [{type, status,
    tasks, history}]}`; None if the transaction or the node is not in it."""
    summary = snapshot.read_mapping(summary_path(transaction_id))
    if summary is None:
        return _legacy_node(snapshot, transaction_id, key)
    if not snapshot.exists(node_path(transaction_id, key)):
        return None
    node = _read_node_file(snapshot, transaction_id, key)
    parts = node.get("graphs") or []
    graphs = [
        {
            "type": graph["type"],
            "status": graph["status"],
            "tasks": [_expanded(e) for e in part.get("tasks") or []],
            "history": part.get("history") or [],
        }
        for graph, part in zip(summary["graphs"], parts, strict=False)
    ]
    return {**_head(summary), "node": key, "graphs": graphs}


def _legacy_node(snapshot: Snapshot, transaction_id: int, key: str) -> dict | None:
    doc = snapshot.read_mapping(legacy_path(transaction_id))
    if doc is None:
        return None
    graphs = doc.get("graphs") or []
    if not any(key in (g.get("tasks_graph") or {}) for g in graphs):
        return None
    node_id = None if key == SYNC else key
    return {
        **_head(doc),
        "node": key,
        "graphs": [
            {
                "type": g.get("type"),
                "status": g.get("status"),
                "tasks": (g.get("tasks_graph") or {}).get(key, []),
                "history": [h for h in g.get("history") or [] if h.get("node_id") == node_id],
            }
            for g in graphs
        ],
    }


def _read_node_file(snapshot: Snapshot, transaction_id: int, key: str) -> dict:
    path = node_path(transaction_id, key)
    data = snapshot.read(path) or b"{}"
    try:
        node = json.loads(data)
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON: {exc}", path=path) from exc
    if not isinstance(node, dict):
        raise InvalidInput(f"{path}: document is not a mapping", path=path)
    return node


def _expanded(entry: Mapping[str, Any]) -> dict:
    requires = []
    for item in entry.get("requires") or ():
        name, _, node = str(item).rpartition("@")
        requires.append({"name": name, "node_id": None if node == SYNC else node})
    return {**entry, "requires": requires}


def _head(doc: Mapping[str, Any]) -> dict:
    return {k: doc.get(k) for k in ("id", "cluster", "status")}


def _rank(key: str) -> tuple:
    return (key != SYNC, key != MASTER, int(key) if is_number(key) else 0, key)


def _without_nodes(graph: Mapping[str, Any]) -> dict:
    return {k: v for k, v in graph.items() if k not in ("tasks_graph", "history")}


def _with_defaults(doc: Mapping[str, Any]) -> dict:
    return {**doc, "graphs": [{"type": None, "status": None, **g} for g in doc.get("graphs") or []]}
