"""Where things live: the repositories of a store root, the files inside an environment
repository, and a read view of one commit of it.

A level pair `(nodes, 1)` is the folder `nodes/1/` whatever ancestors a request names; a scope is
the request path up to a level (`/`, `/role/compute/`, `/role/compute/nodes/1/`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitstore.backend.snapshot import Snapshot
from gitstore.errors import InvalidInput, NotFound
from gitstore.merge import strategies
from gitstore.merge.effective import DEEP, Layer
from gitstore.merge.strategies import Strategies
from gitstore.names import RESERVED_TOP_LEVEL, check_level_value, check_segment, is_number

# -- the store root ------------------------------------------------------------------------
CATALOG = "catalog.git"
ENVIRONMENTS = "environments"
#: The largest environment id (a signed 64-bit integer, like the cluster ids of Fuel's database):
#: the one bound of ids an environment is created with and of the repository names that reach it.
MAX_ENVIRONMENT_ID = 2**63 - 1
#: An environment id as a repository name spells it: no leading zero, no more digits than
#: MAX_ENVIRONMENT_ID (whose value `parse_repository_name` checks too).
ENVIRONMENT_ID = rf"[1-9][0-9]{{0,{len(str(MAX_ENVIRONMENT_ID)) - 1}}}"
#: Repository kinds, as the push gate names them.
ENVIRONMENT_KIND = "environment"
CATALOG_KIND = "catalog"
_REPO_NAME = re.compile(rf"^(?:catalog\.git|environments/({ENVIRONMENT_ID})\.git)$")


@dataclass(frozen=True)
class Target:
    """A repository of the store, named as in `/git/<name>`: `catalog.git`, `environments/1.git`."""

    name: str
    kind: str
    env_id: int | None


def parse_repository_name(name: str) -> Target:
    """The repository `name` addresses; NotFound for anything else (no path can escape)."""
    match = _REPO_NAME.match(name or "")
    env_id = int(match.group(1)) if match and match.group(1) else None
    if match is None or (env_id or 0) > MAX_ENVIRONMENT_ID:
        raise NotFound(f"no repository {name!r}: use catalog.git or environments/<id>.git")
    return Target(name, ENVIRONMENT_KIND if env_id else CATALOG_KIND, env_id)


def environment_repository(env_id: int) -> str:
    """The served name of an environment's repository: `environments/<id>.git`."""
    return f"{ENVIRONMENTS}/{int(env_id)}.git"


def store_root_of(repo_path: Path) -> Path:
    """The store root a repository folder belongs to (`<root>/catalog.git`,
    `<root>/environments/<id>.git`); NotFound for a folder outside that layout."""
    path = Path(repo_path).resolve()
    if path.name == CATALOG:
        return path.parent
    if path.parent.name == ENVIRONMENTS:
        return path.parent.parent
    raise NotFound(f"{path} is not a repository of a gitstore root")


# -- inside an environment repository -------------------------------------------------------
ENVIRONMENT_FILE = "environment.yaml"
GLOBAL = "global"
KINDS = ("values", "overrides")
NODES_LEVEL = "nodes"
INVENTORY = "inventory"
INVENTORY_NODES = f"{INVENTORY}/nodes"

LevelPairs = Sequence[tuple[str, str]]


def scope_of(pairs: LevelPairs) -> str:
    """`/` for global, `/l1/v1/.../` for a path of level pairs."""
    return "/" + "".join(f"{level}/{value}/" for level, value in pairs)


def layer_file(pair: tuple[str, str] | None, kind: str, resource: str) -> str:
    """Repository path of one document: `global/values/r.yaml` or `nodes/1/overrides/r.yaml`."""
    folder = GLOBAL if pair is None else f"{pair[0]}/{pair[1]}"
    return f"{folder}/{kind}/{resource}.yaml"


def parse_data_path(path: str) -> tuple[tuple[str, str] | None, str, str] | None:
    """`(pair, kind, resource)` of a layer file path (`layer_file`'s inverse), or None for any
    other file."""
    parts = path.split("/")
    if parts[0] == GLOBAL:
        pair, rest = None, parts[1:]
    elif parts[0] not in RESERVED_TOP_LEVEL and len(parts) > 2:
        pair, rest = (parts[0], parts[1]), parts[2:]
    else:
        return None
    if len(rest) < 2 or rest[0] not in KINDS or not rest[-1].endswith(".yaml"):
        return None
    return pair, rest[0], "/".join(rest[1:])[: -len(".yaml")]


def parse_levels(text: str) -> list[tuple[str, str]]:
    """`nodes=1,role=compute` (the CLI's and query strings' form) as level pairs."""
    pairs = []
    for part in text.split(","):
        level, sep, value = part.partition("=")
        if not sep or not level.strip() or not value.strip():
            raise InvalidInput(f"level {part!r} must look like name=value", key="level")
        pairs.append((level.strip(), value.strip()))
    return pairs


class EnvironmentView:
    """`environment.yaml` and the level folders of one commit of an environment."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        doc = snapshot.read_mapping(ENVIRONMENT_FILE)
        if doc is None:
            raise NotFound(f"{snapshot.repository} has no {ENVIRONMENT_FILE} at this version")
        self.doc = doc
        self.env_id = doc.get("id")
        self.hierarchy: list[str] = list(doc.get("hierarchy") or [])
        #: The mode string, or Strategies when `lookup_options` name keys (merge/strategies.py).
        self.merge: str | Strategies = strategies.parse(
            doc.get("lookup_options"), doc.get("merge") or DEEP
        )
        self.components: list[str] = list(doc.get("components") or [])

    # -- levels ----------------------------------------------------------------------------
    def check_levels(
        self,
        pairs: LevelPairs,
        *,
        write: bool = False,
        head: Callable[[], EnvironmentView] | None = None,
    ) -> list[tuple[str, str]]:
        """Pairs that are a prefix of the hierarchy, node fqdns resolved to ids, every node
        one the environment knows (`known_node`; a `write` may also create one).

        A read at an older version passes `head`, the view of the head: a node known now is
        read as it was then (with no data of its own yet, the levels above it), so history,
        explain and revert can look at any version of a node that exists. A diff passes the
        view of its other end: a node that exists at either end is known.

        Every segment is validated first (400), so a malformed name never reaches the
        comparison with the hierarchy (404).
        """
        for level, value in pairs:
            check_segment(level, "hierarchy level")
            check_level_value(value, level)
        if len(pairs) > len(self.hierarchy):
            raise NotFound(
                f"environment {self.env_id} has {len(self.hierarchy)} hierarchy "
                f"levels {self.hierarchy}; the request names {len(pairs)}; "
                f"{self.add_level_step(pairs[len(self.hierarchy)][0])}"
            )
        checked = []
        for (level, value), expected in zip(pairs, self.hierarchy, strict=False):
            if level != expected:
                raise NotFound(
                    f"environment {self.env_id}: level {level!r} is not next in the "
                    f"hierarchy; expected {expected!r}; {self.add_level_step(level)}"
                )
            if level == NODES_LEVEL:
                checked.append((level, self._known_node_now_or_then(value, write, head)))
            else:
                checked.append((level, value))
        return checked

    def _known_node_now_or_then(
        self, ref: str, write: bool, head: Callable[[], EnvironmentView] | None
    ) -> str:
        try:
            return self.known_node(ref, write=write)
        except NotFound:
            if head is None:
                raise
            return head().known_node(ref)

    def add_level_step(self, level: str) -> str:
        """What to do about a request naming `level`: order the levels as the hierarchy
        does, or add the level to it."""
        if level in self.hierarchy:
            order = ",".join(f"{name}=..." for name in self.hierarchy)
            return f"name the levels in hierarchy order: --level {order}"
        levels = ",".join([*self.hierarchy, level])
        return (
            f"add the level with `gitstore env update {self.env_id} --levels {levels}` "
            f"(PUT /api/v1/config/environments/{self.env_id})"
        )

    def known_node(self, ref: str, *, write: bool = False) -> str:
        """The id of node `ref` (id or inventory fqdn); NotFound naming it when the environment
        does not know it (ConfigDB's "Cannot find a node with the given identifier").

        A node is known when the inventory has it or its level value holds data. Only a write
        to a new numeric id of an environment without an inventory creates a node: that is
        ConfigDB's upload path (`facts upload`). With an inventory, the inventory decides.
        """
        node_id = self.resolve_value(NODES_LEVEL, ref)
        fqdns, ids = self._fqdn_map()
        if node_id in ids or self.snapshot.exists(f"{NODES_LEVEL}/{node_id}"):
            return node_id
        has_inventory = self.snapshot.object_id(INVENTORY_NODES) is not None
        if write and not has_inventory and is_number(node_id):
            return node_id
        add = f"gitstore node create --env {self.env_id} --fqdn FQDN"
        if has_inventory:
            why = (
                "no inventory record has that id or fqdn and no level value holds its data; "
                f"add the node to the inventory with `{add}` "
                f"(POST /api/v1/clusters/{self.env_id}/nodes)"
            )
        elif is_number(node_id):
            why = (
                "no level value holds its data (a write of values creates it); upload its facts "
                f"with `gitstore facts upload --env {self.env_id} --node {node_id}`"
            )
        else:
            why = (
                "it is no node id, and without an inventory no fqdn is known; name it by id, "
                f"or add it to the inventory with `{add}`"
            )
        raise NotFound(
            f"cannot find node {ref!r} in environment {self.env_id}: {why}",
            key=NODES_LEVEL,
        )

    def resolve_value(self, level: str, value: str) -> str:
        """A node named by its inventory fqdn becomes its id; other values stay as given."""
        if level != NODES_LEVEL:
            return value
        fqdns, ids = self._fqdn_map()
        if value in ids or self.snapshot.exists(f"{level}/{value}"):
            return value
        return fqdns.get(value, value)

    def _fqdn_map(self) -> tuple[dict[str, str], frozenset[str]]:
        """fqdn -> node id of the inventory, and the set of every record's id (a lookup per
        request must not scan 5,000 of them)."""
        tree_id = self.snapshot.object_id(INVENTORY_NODES)
        if tree_id is None:
            return {}, frozenset()
        return self.snapshot.caches.fqdn_maps.get_or_compute(tree_id, self._read_fqdns)

    def _read_fqdns(self) -> tuple[dict[str, str], frozenset[str]]:
        found, ids = {}, set()
        for entry in self.snapshot.list(INVENTORY_NODES):
            if entry.is_tree or not entry.name.endswith(".yaml"):
                continue
            node = self.snapshot.read_yaml(f"{INVENTORY_NODES}/{entry.name}") or {}
            if not isinstance(node, dict):
                continue
            node_id = str(node.get("id", entry.name[: -len(".yaml")]))
            ids.add(node_id)
            if node.get("fqdn"):
                found[str(node["fqdn"])] = node_id
        return found, frozenset(ids)

    def level_values(self, level: str) -> list[str]:
        return sorted(entry.name for entry in self.snapshot.list(level) if entry.is_tree)

    def level_entities(self) -> list[dict]:
        entities = []
        for index, level in enumerate(self.hierarchy):
            parent = self.hierarchy[index - 1] if index else None
            entities.append({"name": level, "parent": parent, "values": self.level_values(level)})
        return entities

    # -- documents -------------------------------------------------------------------------
    def chain(self, pairs: LevelPairs) -> list[tuple[str, tuple[str, str] | None]]:
        """(scope, pair) from global down to the last pair."""
        chain: list[tuple[str, tuple[str, str] | None]] = [("/", None)]
        for depth, pair in enumerate(pairs, start=1):
            chain.append((scope_of(pairs[:depth]), pair))
        return chain

    def layers(self, pairs: LevelPairs, resource: str) -> list[Layer]:
        """Values then overrides at each scope, least specific first."""
        return [
            layer
            for scope, pair in self.chain(pairs)
            for layer in self._scope_layers(scope, pair, resource)
        ]

    def own_layers(self, pairs: LevelPairs, resource: str) -> list[Layer]:
        """The last scope's layers of `layers` (values then overrides), read alone."""
        return self._scope_layers(scope_of(pairs), pairs[-1] if pairs else None, resource)

    def _scope_layers(self, scope: str, pair: tuple[str, str] | None, resource: str) -> list[Layer]:
        layers = []
        for kind in KINDS:
            path = layer_file(pair, kind, resource)
            layers.append(Layer(scope, kind, self.snapshot.read_mapping(path), path))
        return layers

    def layer_inputs(self, pairs: LevelPairs, resource: str) -> tuple:
        """Blob ids of every layer file (None where absent): what an effective answer reads."""
        return tuple(
            self.snapshot.object_id(layer_file(pair, kind, resource))
            for _, pair in self.chain(pairs)
            for kind in KINDS
        )

    def resource_has_data(self, resource: str) -> bool:
        folders = [GLOBAL] + [
            f"{lvl}/{val}" for lvl in self.hierarchy for val in self.level_values(lvl)
        ]
        return any(
            self.snapshot.exists(f"{folder}/{kind}/{resource}.yaml")
            for folder in folders
            for kind in KINDS
        )
