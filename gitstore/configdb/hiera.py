"""The Hiera node document: every resource of an environment, effective at one node, one commit.

A Puppet compile asks for this document once and answers every key of every hierarchy level from
it, so all keys of a compile see the same commit (docs/hiera.md). The chain of a node is the
global level, then one folder per hierarchy level up to `nodes`: the node's own id for `nodes`,
and for a level above it the value the node's inventory record names under that level's name
(`inventory/nodes/7.yaml` with `rack: r2` puts `rack/r2/` in node 7's chain). A level the record
does not name contributes nothing, like a layer with no file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitstore.backend.cache import Caches, LRUCache
from gitstore.catalog.view import CatalogView
from gitstore.errors import InvalidInput, NotFound, UnknownPin, UnknownRevision
from gitstore.layout import (
    ENVIRONMENT_FILE,
    INVENTORY,
    INVENTORY_NODES,
    NODES_LEVEL,
    EnvironmentView,
)
from gitstore.merge import effective
from gitstore.names import check_level_value
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.backend.snapshot import Snapshot
    from gitstore.deployment.tags import Tags
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

#: The environment folder of node files and the cluster's own tags and roles.


@dataclass(frozen=True)
class Node:
    """A node of one environment commit and the level folders that feed its values."""

    id: str
    fqdn: str | None
    pairs: tuple[tuple[str, str], ...]
    record_id: str | None  # blob id of its inventory record (None without a record)


#: A section of the node document besides `resources`: (view, node) -> (data, inputs).
#: It must read at `view.snapshot.commit_id` (one commit per document) and return as `inputs`
#: the object ids it read (they feed the ETag). The Puppet backend answers a hierarchy entry
#: whose `uri` is a section's name from that section (puppet/README.md).
Section = Callable[[EnvironmentView, Node], tuple[Any, tuple]]


def instances_section(
    repos: Repositories, tags: Tags, kept: LRUCache, view: EnvironmentView, node: Node
) -> tuple[dict, tuple]:
    """`gitstore_instances`: every instance tag of the cluster, `{"mysql": {"1": [1, 3]}}`.

    The same for every node of a commit. It depends on the node files and the cluster's own
    tags and roles (`inventory/`), on the release and plugins `environment.yaml` names, and on
    their roles and tags in the catalog, pinned here to one catalog commit.
    """
    assert view.env_id is not None  # an environment's view has its id
    env_id = int(view.env_id)
    commit = view.snapshot.commit_id
    catalog = repos.catalog().snapshot().commit_id
    inputs = (
        view.snapshot.object_id(INVENTORY),
        view.snapshot.object_id(ENVIRONMENT_FILE),
        catalog,
    )
    value = kept.get_or_compute(  # shared: never mutate it
        (env_id, *inputs),
        lambda: tags.all_instances(env_id, version=commit, catalog_version=catalog),
    )
    return value, inputs


class Hiera:
    """Builds the node documents that the Puppet backend (`puppet/`) reads once per compile."""

    def __init__(self, repos: Repositories, secrets: Secrets, tags: Tags, caches: Caches) -> None:
        self._repos = repos
        self._secrets = secrets
        #: Effective values and whole documents (`Caches`): shared, never mutated.
        self._effective, self._documents = caches.hiera_documents, caches.hiera_answers
        #: The sections besides `resources`, by name.
        self.sections: dict[str, Section] = {
            "gitstore_instances": functools.partial(
                instances_section, repos, tags, caches.hiera_instances
            )
        }

    def node_document(
        self,
        env_id: int,
        node: str,
        version: str | None = None,
        resources: Sequence[str] | None = None,
        *,
        reveal: bool = False,
        who: str | None = None,
    ) -> Served:
        """Every resource (or those named) of environment `env_id`, effective at `node`.

        Args:
            env_id: the environment (cluster) id.
            node: the node's id or its inventory fqdn.
            version: a pin (integer version or git revision); None serves the head of main.
            resources: only these resource names; None for every resource of the attached
                components.
            reveal: open secret values (for the Puppet master's credential) instead of masking
                them; the reveal is recorded in the audit log as made by `who`.

        Raises:
            NotFound: the environment or the node does not exist (`key` says which).
            UnknownPin: `version` names no commit (distinct from an unknown node).
            InvalidInput: `resources` names a resource no attached component defines.
        """
        repo = self._repos.environment_repo(env_id)
        try:
            snapshot = repo.snapshot(version)
        except UnknownRevision as exc:
            raise UnknownPin(exc.revision, repo.name) from exc
        # The document follows from the two commits, the request and (revealed) the keys: kept
        # whole, so a Puppet master asking for a node again costs neither the merge, nor the
        # reveal, nor (the answer being shared) the JSON encoding. Every reveal is still audited.
        key = (
            repo.path,
            snapshot.commit_id,
            self._repos.catalog().head(),
            node,
            None if resources is None else tuple(resources),
            self._secrets.keys_epoch() if reveal else None,
        )
        document, inputs, shown = self._documents.get_or_compute(
            key, lambda: self._document(env_id, snapshot, node, resources, reveal)
        )
        served = Served(
            document,
            snapshot.commit_id,
            snapshot.version,
            inputs=inputs,
            masked=() if reveal else shown,
            shared=True,
            revealed=shown if reveal else (),
        )
        self.record_reveal(env_id, who, *self.reveal_of(served))
        return served

    @staticmethod
    def reveal_of(served: Served) -> tuple[str, str | None, tuple[str, ...]]:
        """What the audit line of a `node_document` answer names: (node, commit, the revealed
        paths). Small, unlike the document: an answer repeated later keeps only this."""
        return served.data["node"], served.commit, served.revealed

    def record_reveal(
        self, env_id: int, who: str | None, node: str, commit: str | None, paths: tuple[str, ...]
    ) -> None:
        """Audit that node `node`'s document at `commit` revealed `paths` to `who` (nothing
        when it revealed none): once per answer, also of one repeated without reading it
        again (the fast path's 304)."""
        self._secrets.record_reveal(who, env_id, f"hiera node {node}", commit, paths)

    def _document(
        self,
        env_id: int,
        snapshot: Snapshot,
        node: str,
        resources: Sequence[str] | None,
        reveal: bool,
    ) -> tuple[dict, list, tuple[str, ...]]:
        """(the node document, the inputs its ETag follows, the paths masked or revealed)."""
        view = EnvironmentView(snapshot)
        found = find_node(view, node)
        names = self._resource_names(view, resources)
        values, inputs = effective_values(self._effective, view, found, names)
        values, shown = self._show_secrets(env_id, view, found, values, reveal)
        inputs.append(reveal)
        document = {
            "environment": env_id,
            "node": found.id,
            "fqdn": found.fqdn,
            "levels": [list(pair) for pair in found.pairs],
            "commit": snapshot.commit_id,
            "version": snapshot.version,
            "resources": values,
        }
        for section, build in self.sections.items():
            document[section], section_inputs = build(view, found)
            inputs.append((section, section_inputs))
        return document, inputs, shown

    def _show_secrets(
        self, env_id: int, view: EnvironmentView, node: Node, values: dict, reveal: bool
    ) -> tuple[dict, tuple[str, ...]]:
        """Each resource masked (or revealed), and the paths that were, as `resources.<r>.<key>`."""
        shown, paths = {}, []
        for name, merged in values.items():
            shown[name], found = self._secrets.show_effective(
                env_id, view, node.pairs, name, merged, reveal=reveal
            )
            paths += [f"resources.{name}.{path}" for path in found]
        return shown, tuple(paths)

    def _resource_names(self, view: EnvironmentView, wanted: Sequence[str] | None) -> list[str]:
        catalog = CatalogView(self._repos.catalog().snapshot())
        attached = [d["name"] for d in catalog.definitions_of(view.components)]
        if wanted is None:
            return sorted(attached)
        unknown = [name for name in wanted if name not in attached]
        if unknown:
            raise InvalidInput(
                f"resources {unknown} are not defined for environment "
                f"{view.env_id} (no attached component has them)",
                key="resources",
            )
        return list(dict.fromkeys(wanted))


def _merged(view: EnvironmentView, node: Node, name: str) -> dict[str, Any]:
    return effective.merge_layers(view.layers(node.pairs, name), view.merge)


def effective_values(
    kept: LRUCache, view: EnvironmentView, node: Node, names: list[str]
) -> tuple[dict, list]:
    """Each resource's effective values at `node`, and the inputs they were merged from (kept
    in `kept` by merge mode and layer blob ids: a pure function of immutable ids)."""
    values: dict[str, Any] = {}
    inputs: list[Any] = [view.merge, node.pairs, node.record_id, tuple(names)]
    for name in names:
        layer_ids = view.layer_inputs(node.pairs, name)
        values[name] = kept.get_or_compute(
            (view.merge, layer_ids),
            functools.partial(_merged, view, node, name),
        )
        inputs.append(layer_ids)
    return values, inputs


def find_node(view: EnvironmentView, ref: str) -> Node:
    """The node `ref` (id or inventory fqdn) of `view`; NotFound (key `node`) if unknown.

    A node is known when it has an inventory record or a folder at the `nodes` level.
    """
    check_level_value(ref, NODES_LEVEL)
    node_id = view.resolve_value(NODES_LEVEL, ref)
    record_path = f"{INVENTORY_NODES}/{node_id}.yaml"
    record = view.snapshot.read_mapping(record_path)
    if record is None and not view.snapshot.is_tree(f"{NODES_LEVEL}/{node_id}"):
        raise NotFound(
            f"node {ref!r} is unknown in environment {view.env_id}: no inventory "
            f"record has that id or fqdn and no {NODES_LEVEL}/{ref}/ folder exists",
            key="node",
            errors=[{"key": "node", "value": ref}],
        )
    record = record or {}
    return Node(
        node_id,
        _text(record.get("fqdn")),
        _pairs(view, node_id, record),
        view.snapshot.object_id(record_path),
    )


def _pairs(view: EnvironmentView, node_id: str, record: dict) -> tuple[tuple[str, str], ...]:
    """Level folders of the node, least specific first; levels below `nodes` are not a node's."""
    pairs = []
    for level in view.hierarchy:
        value = node_id if level == NODES_LEVEL else _text(record.get(level))
        if value is not None:
            pairs.append((level, check_level_value(value, level)))
        if level == NODES_LEVEL:
            break
    return tuple(pairs)


def _text(value: Any) -> str | None:
    """A scalar of a record as a level value (None for absent, lists and mappings)."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None
    return str(value)
