"""Facts uploads: the values files of many nodes written in one commit, the cluster-wide
entries of those files stored once.

Fuel writes into every node's facts the entries that list the whole cluster (`nodes`,
`network_metadata`): stored in each node's document they would make an environment's size and
every upload round grow as the square of its nodes. An upload names, per resource, the
top-level entries every uploaded node's file holds alike (`shared`); a cluster-wide one of them
is stored once, in the global level's values, and left out of the nodes' documents, so that
each node's effective values (and its Hiera document) are still exactly what its file said:

- it is stored at the global level only while every node holding a document of that resource
  is in the upload (no other node relies on an older value);
- a later upload of a node whose value differs (or lacks it) moves it back into the documents
  of the nodes that relied on it, and the global level forgets it;
- a node whose value equals the global one leaves it out of its document.

docs/store-format.md ("Facts of large clusters") describes the layout and its trade-offs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitstore.errors import InvalidInput
from gitstore.factfiles import FactsReader
from gitstore.layout import NODES_LEVEL, EnvironmentView, layer_file
from gitstore.limits import check_plain_data
from gitstore.names import check_resource_name, commit_message
from gitstore.served import Served
from gitstore.yamlio import same

if TYPE_CHECKING:
    from gitstore.backend.repository import Author
    from gitstore.configdb.values import Config

#: Top-level entries of a facts file that list the whole cluster, stored once when every node
#: agrees on them.
CLUSTER_KEYS = ("nodes", "network_metadata")
VALUES = "values"
#: Bounds of one upload's body.
MAX_NODES = 10_000
MAX_RESOURCES = 100


@dataclass
class FactsUpload:
    """What an upload writes: per node (id or fqdn), its resources' documents; per resource,
    the top-level entries every uploaded node holding that resource has too."""

    nodes: dict[str, dict[str, dict]]
    shared: dict[str, dict] = field(default_factory=dict)

    def resources(self) -> list[str]:
        names = {name for documents in self.nodes.values() for name in documents}
        return sorted(names | set(self.shared))


@dataclass
class FactsWritten:
    """The commit an upload made and the cluster-wide entries stored at the global level."""

    served: Served
    documents: int = 0
    hoisted: dict[str, list[str]] = field(default_factory=dict)


class Facts:
    """Writes facts uploads through `Config`, one commit each."""

    def __init__(self, config: Config) -> None:
        self._config = config

    def upload(
        self, env_id: int, upload: FactsUpload, message: str, author: Author | None = None
    ) -> FactsWritten:
        for name in upload.shared:
            if not any(name in documents for documents in upload.nodes.values()):
                raise InvalidInput(f"shared resource {name!r} is uploaded for no node", key=name)
        written = FactsWritten(Served(None, None, None))

        def plan(view: EnvironmentView) -> dict[tuple, dict]:
            ids = _node_ids(view, upload.nodes)
            batch: dict[tuple, dict] = {}
            written.hoisted = {}
            for resource in upload.resources():
                name = self._config.resource_name(view, resource)
                own = {
                    ids[ref]: docs[resource]
                    for ref, docs in upload.nodes.items()
                    if resource in docs
                }
                hoisted = _plan_resource(view, name, own, upload.shared.get(resource, {}), batch)
                if hoisted:
                    written.hoisted[name] = hoisted
            written.documents = len(batch)
            return batch

        written.served = self._config.write_planned(env_id, plan, message, author)
        return written

    def upload_body(self, env_id: int, body: Any, author: Author | None = None) -> dict:
        """An upload given as the REST body (`gitstore/api/facts.py`), and its answer."""
        upload, message, warnings = parse_upload(body)
        return answer(self.upload(env_id, upload, message, author), upload, warnings)


def _node_ids(view: EnvironmentView, nodes: dict[str, dict]) -> dict[str, str]:
    """Node id by the name the upload gives (the unknown-node rule applies to each)."""
    ids: dict[str, str] = {}
    named: dict[str, str] = {}
    for ref in nodes:
        ((_, node_id),) = view.check_levels([(NODES_LEVEL, ref)], write=True)
        if node_id in named:
            raise InvalidInput(
                f"nodes {named[node_id]!r} and {ref!r} are one node ({node_id}) named twice",
                key=NODES_LEVEL,
            )
        ids[ref] = node_id
        named[node_id] = ref
    return ids


def _plan_resource(
    view: EnvironmentView, name: str, own: dict[str, dict], shared: dict, batch: dict
) -> list[str]:
    """Put the documents of resource `name` into `batch`; the cluster-wide keys stored at the
    global level by this upload."""
    snapshot = view.snapshot
    global_doc = snapshot.read_mapping(layer_file(None, VALUES, name)) or {}
    uploaded = set(own)
    others = [node for node in _holders(view, name) if node not in uploaded]
    new_global = dict(global_doc)
    documents = {node: {**shared, **doc} for node, doc in own.items()}
    relied: dict[str, dict] = {}  # other nodes' documents given back a value they relied on
    hoisted = []
    for key in CLUSTER_KEYS:
        if key in shared and not others:
            new_global[key] = shared[key]
            hoisted.append(key)
            for document in documents.values():
                del document[key]
        elif key in global_doc:
            _keep_or_move_back(
                key, global_doc[key], documents, new_global, others, relied, view, name
            )
    for node, document in {**relied, **documents}.items():
        batch[(((NODES_LEVEL, node),), name, VALUES)] = document
    if not same(new_global, global_doc):
        batch[((), name, VALUES)] = new_global
    return hoisted


def _keep_or_move_back(
    key: str,
    kept: Any,
    documents: dict[str, dict],
    new_global: dict,
    others: list[str],
    relied: dict[str, dict],
    view: EnvironmentView,
    name: str,
) -> None:
    """The global level holds `key`: uploaded documents that agree leave it out; if any does
    not, it goes back into the documents of the nodes that relied on it."""
    if all(key in document and same(document[key], kept) for document in documents.values()):
        for document in documents.values():
            del document[key]
        return
    del new_global[key]
    for node in others:
        relied_on = relied.get(node)
        if relied_on is None:
            path = layer_file((NODES_LEVEL, node), VALUES, name)
            relied_on = relied[node] = dict(view.snapshot.read_mapping(path) or {})
        relied_on.setdefault(key, kept)


def _holders(view: EnvironmentView, name: str) -> list[str]:
    """Nodes with a values document of resource `name`."""
    snapshot = view.snapshot
    return (
        [
            node
            for node in view.level_values(NODES_LEVEL)
            if snapshot.exists(layer_file((NODES_LEVEL, node), VALUES, name))
        ]
        if NODES_LEVEL in view.hierarchy
        else []
    )


def answer(written: FactsWritten, upload: FactsUpload, warnings: list[str]) -> dict:
    """What an upload answers (REST and the local CLI alike)."""
    return {
        "commit": written.served.commit,
        "version": written.served.version,
        "nodes": len(upload.nodes),
        "documents": written.documents,
        "stored_once": written.hoisted,
        "warnings": warnings,
    }


# -- the body of an upload ----------------------------------------------------------------


def parse_upload(body: Any) -> tuple[FactsUpload, str, list[str]]:
    """The upload, its commit message and the warnings of the YAML texts it read."""
    if not isinstance(body, dict) or not isinstance(body.get("nodes"), dict):
        raise InvalidInput("body must be an object with an object 'nodes'", key="nodes")
    unknown = sorted(set(body) - {"message", "shared", "nodes"})
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; known: message, nodes, shared")
    if not 0 < len(body["nodes"]) <= MAX_NODES:
        raise InvalidInput(f"'nodes' must name 1 to {MAX_NODES} nodes", key="nodes")
    reader = FactsReader()
    warnings: list[str] = []
    nodes = {
        str(node): _node_documents(node, resources, reader, warnings)
        for node, resources in body["nodes"].items()
    }
    shared = body.get("shared", {})
    if not isinstance(shared, dict) or not all(isinstance(v, dict) for v in shared.values()):
        raise InvalidInput("'shared' must map resource names to objects", key="shared")
    for name in shared:
        check_resource_name(name)
    upload = FactsUpload(nodes, shared)
    return upload, _message(body.get("message"), upload), warnings


def _node_documents(
    node: str, resources: Any, reader: FactsReader, warnings: list[str]
) -> dict[str, dict]:
    if not isinstance(resources, dict) or not 0 < len(resources) <= MAX_RESOURCES:
        raise InvalidInput(
            f"nodes[{node!r}] must map 1 to {MAX_RESOURCES} resource names to documents",
            key="nodes",
        )
    documents = {}
    for name, document in resources.items():
        check_resource_name(name)
        file = f"{node}/{name}.yaml"
        if isinstance(document, str):
            read = reader.read(document.encode("utf-8"), file)
            warnings.extend(repeat.describe(file) for repeat in read.repeats)
            document = check_plain_data(read.document, file)
        elif not isinstance(document, dict):
            raise InvalidInput(
                f"nodes[{node!r}][{name!r}] must be an object or the text of a YAML file",
                key="nodes",
            )
        documents[name] = document
    return documents


def _message(message: Any, upload: FactsUpload) -> str:
    names = ", ".join(upload.resources()[:5])
    return commit_message(message, f"facts: upload {len(upload.nodes)} nodes ({names})")
