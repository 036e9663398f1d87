"""Compare two environments (or two versions of one): what differs between staging and
production, or between an environment and its upgrade seed.

For the global level and for every node present in both (matched by name: a node's inventory
fqdn, else its `nodes` level value), the key paths whose effective values differ, with each
side's value, winning layer and the commit that last changed it. Nodes are what the console
lists: inventory records and level values of `nodes` holding data (facts-only nodes).

Secrets compare by equality of their plain text, opened in memory and kept only as a digest,
and are shown masked whatever the caller's roles. The work is bounded by a page of matched
nodes (`limit`, `offset`) and a cap of keys per node; a node's entries reuse its parent
scope's for the top-level keys its own layers leave alone. Whole answers, node lists, the
entries of each pair of scopes, secret digests and commit attributions are cached by immutable
ids (commits, trees, blobs).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gitstore import keypaths
from gitstore.backend.cache import LRUCache
from gitstore.backend.repository import Repository
from gitstore.configdb.hiera import Node
from gitstore.configdb.scopes import effective_document
from gitstore.errors import GitstoreError, InvalidInput, NotFound, UnknownRevision
from gitstore.layout import INVENTORY_NODES, NODES_LEVEL, EnvironmentView, layer_file
from gitstore.merge.diff import dotted, related, same_value
from gitstore.merge.effective import Layer
from gitstore.names import is_number
from gitstore.secrets import cipher
from gitstore.secrets import mask as secret_masks
from gitstore.secrets.leaves import value_at as leaf_at
from gitstore.served import Served
from gitstore.versions.explain import attribute
from gitstore.versions.keydiff import MISSING, differences, value_at, winner
from gitstore.versions.matching import alone, node_entity, one_node, read_nodes

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
#: Differing keys listed per node (and for the global level); `more` counts the rest.
KEYS_PER_SCOPE = 500
#: The note of a secret whose plain text could not be opened (no keyring, a bad value).
UNVERIFIED = "secret not compared: it does not open here"
#: The key entries the comparison's caches of answers and of entries hold each, at most.
MAX_HELD = 100_000
#: The fields of a side's entry that commit attribution reads, removed before it is shown.
_INTERNAL = ("layers", "winner", "_path")


@dataclass(frozen=True)
class CompareQuery:
    """What a comparison asks for besides the two environments."""

    node: str | None = None
    resource: str | None = None
    key: str | None = None
    version_a: str | None = None
    version_b: str | None = None
    offset: Any = None
    limit: Any = None


@dataclass(frozen=True)
class Side:
    """One environment at one commit."""

    env_id: int
    repo: Repository
    view: EnvironmentView

    @property
    def commit(self) -> str:
        return self.view.snapshot.commit_id

    def summary(self) -> dict[str, Any]:
        snapshot = self.view.snapshot
        return {
            "environment": self.env_id,
            "commit": snapshot.commit_id,
            "version": snapshot.version,
        }


class Comparisons:
    """Compares environments; its caches are keyed by commit, tree and blob ids."""

    def __init__(self, repos: Repositories, secrets: Secrets) -> None:
        self._repos = repos
        self._secrets = secrets
        # Bounded by the key entries they hold too (a page may differ in thousands of keys
        # per node); the answers' entries are the very objects `_entries` holds.
        self._answers = LRUCache(64, max_weight=MAX_HELD, name="compare_answers")
        self._nodes = LRUCache(max_entries=64, name="compare_nodes")
        self._entries = LRUCache(4096, max_weight=MAX_HELD, name="compare_entries")
        self._commits = LRUCache(max_entries=16384, name="compare_commits")
        self._digests = LRUCache(max_entries=16384, name="compare_secret_digests")

    def compare(self, env_a: int, env_b: int, query: CompareQuery = CompareQuery()) -> Served:
        """The differences between environment `env_a` and `env_b` (see the module docstring).

        Raises NotFound naming the unknown environment, version (`version_a`, `version_b`),
        node or resource; InvalidInput for a bad `offset`, `limit` or `key`.
        """
        a = self._side(env_a, query.version_a, "version_a")
        b = self._side(env_b, query.version_b, "version_b")
        query = replace(query, offset=_number(query.offset, "offset", 0, 0, 10**9))
        query = replace(query, limit=_number(query.limit, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT))
        if query.key is not None:
            keypaths.split_dotted(query.key)
        catalog = self._repos.catalog().head()
        epoch = self._secrets.keys_epoch()
        asked = replace(query, version_a=None, version_b=None)
        key = (a.repo.path, a.commit, b.repo.path, b.commit, catalog, epoch, asked)
        data, masked = self._answers.get_or_compute(
            key, lambda: self._compare(a, b, query, catalog), _weight_of_answer
        )
        return Served(
            data,
            a.commit,
            a.view.snapshot.version,
            inputs=("compare", a.commit, b.commit, catalog, epoch),
            masked=masked,
            shared=True,
        )

    # -- the two sides -------------------------------------------------------------------------
    def _side(self, env_id: int, version: str | None, field: str) -> Side:
        repo = self._repos.environment_repo(env_id)
        try:
            snapshot = repo.snapshot(version)
        except UnknownRevision as exc:
            raise NotFound(
                f"unknown {field} {version!r}: no version of environment {env_id} has that "
                "number, commit or label",
                key=field,
            ) from exc
        return Side(env_id, repo, EnvironmentView(snapshot))

    def _compare(
        self, a: Side, b: Side, query: CompareQuery, catalog: str | None
    ) -> tuple[dict, tuple[str, ...]]:
        compared, only_a, only_b = self._resources(a, b, query.resource, catalog)
        nodes_a, nodes_b = self.nodes_of(a.view), self.nodes_of(b.view)
        if query.node is not None:
            matched, alone_a, alone_b = one_node(query.node, a.env_id, b.env_id, nodes_a, nodes_b)
        else:
            matched = sorted(set(nodes_a) & set(nodes_b))
            alone_a = sorted(set(nodes_a) - set(nodes_b))
            alone_b = sorted(set(nodes_b) - set(nodes_a))
        page = matched[query.offset : query.offset + query.limit]
        masked: list[str] = []
        pair = Pair(a, b, catalog, self._secrets.keys_epoch())
        scopes = Scopes(self, pair, compared, query.key)
        first = query.offset == 0 and query.node is None
        global_level = scopes.global_level(masked) if first else None
        nodes = []
        for name in page:
            entry = scopes.node(name, nodes_a[name], nodes_b[name], masked)
            if entry["keys"]:
                nodes.append(entry)
        following = query.offset + query.limit
        data = {
            "a": a.summary(),
            "b": b.summary(),
            "resources": {"compared": compared, "only_a": only_a, "only_b": only_b},
            "global": global_level,
            "nodes": nodes,
            "only_a": alone(alone_a, nodes_a),
            "only_b": alone(alone_b, nodes_b),
            "page": {
                "offset": query.offset,
                "limit": query.limit,
                "matched": len(matched),
                "next": following if following < len(matched) else None,
            },
        }
        return data, tuple(masked)

    def _resources(
        self, a: Side, b: Side, wanted: str | None, catalog: str | None
    ) -> tuple[list[str], list[str], list[str]]:
        """(compared, only in a, only in b): the resources the attached components define."""
        names_a = set(self._secrets.definitions(a.view.components, catalog))
        names_b = set(self._secrets.definitions(b.view.components, catalog))
        if wanted is not None:
            if wanted not in names_a | names_b:
                raise NotFound(
                    f"resource {wanted!r} is defined in neither environment {a.env_id} nor "
                    f"{b.env_id} (no attached component has it)",
                    key="resource",
                )
            names_a, names_b = names_a & {wanted}, names_b & {wanted}
        return sorted(names_a & names_b), sorted(names_a - names_b), sorted(names_b - names_a)

    def nodes_of(self, view: EnvironmentView) -> dict[str, Node]:
        """Name (fqdn, else node id) -> node, for every inventory record and every value of
        the `nodes` level; kept by the trees it follows from (shared: never edit)."""
        snapshot = view.snapshot
        key = (
            tuple(view.hierarchy),
            snapshot.object_id(INVENTORY_NODES),
            snapshot.object_id(NODES_LEVEL) if NODES_LEVEL in view.hierarchy else None,
        )
        return self._nodes.get_or_compute(key, lambda: read_nodes(view))

    # -- the differing keys of one resource at one pair of scopes ----------------------------
    def entries(self, pair: Pair, pairs_a: tuple, pairs_b: tuple, name: str) -> tuple:
        """`(top-level key, entry)` of every differing key path of resource `name` at scopes
        `pairs_a` of A and `pairs_b` of B: secrets opened to compare, then masked; each side
        with its winning layer and last commit. Kept by both commits, both scopes, the catalog
        and the keyring's epoch (shared: never edit)."""
        a, b = pair.a, pair.b
        key: tuple[Any, ...] = (
            str(a.repo.path),
            a.commit,
            str(b.repo.path),
            b.commit,
            pairs_a,
            pairs_b,
            name,
        )
        key += (pair.catalog, pair.epoch)
        return self._entries.get_or_compute(
            key, lambda: self._compute_entries(pair, pairs_a, pairs_b, name), lambda v: len(v) + 1
        )

    def _compute_entries(self, pair: Pair, pairs_a: tuple, pairs_b: tuple, name: str) -> tuple:
        """A node's entries are its parent scopes' for every top-level key its own layers
        leave alone (the effective document holds the parent's very object there), and new
        ones for the keys they touch: a node costs its own keys, not the whole document."""
        a, b = pair.a, pair.b
        inputs_a, inputs_b = a.view.layer_inputs(pairs_a, name), b.view.layer_inputs(pairs_b, name)
        if a.view.merge == b.view.merge and inputs_a == inputs_b:
            return ()  # the very same blobs merged the same way
        doc_a = effective_document(a.view, pairs_a, name, inputs_a)
        doc_b = effective_document(b.view, pairs_b, name, inputs_b)
        parent_a = parent_b = None
        inherited: dict[Any, list] = {}
        touched: set = set()
        if pairs_a and pairs_b:
            parent_a = effective_document(a.view, pairs_a[:-1], name)
            parent_b = effective_document(b.view, pairs_b[:-1], name)
            for top, entry in self.entries(pair, pairs_a[:-1], pairs_b[:-1], name):
                inherited.setdefault(top, []).append((top, entry))
            touched = _own_keys(a.view, pairs_a, name) | _own_keys(b.view, pairs_b, name)
        builder = _Builder(self, pair, pairs_a, pairs_b, name)
        found: list[tuple[Any, dict]] = []
        for top in [*doc_a, *(k for k in doc_b if k not in doc_a)]:
            value_a, value_b = doc_a.get(top, MISSING), doc_b.get(top, MISSING)
            if (
                parent_a is not None
                and parent_b is not None
                and top not in touched  # an equal small int is the parent's very object too
                and value_a is parent_a.get(top, MISSING)
                and value_b is parent_b.get(top, MISSING)
            ):
                found += inherited.get(top, [])
                continue
            one_a = {} if value_a is MISSING else {top: value_a}
            one_b = {} if value_b is MISSING else {top: value_b}
            found += [(top, entry) for entry in builder.entries(differences(one_a, one_b))]
        builder.attribute()
        return tuple(found)

    def attributed(self, side: Side, items: list[dict]) -> None:
        """Set commit, author and date of the last change of each item's winning value; kept
        by (repository, commit, file, key path): fixed once the commit is."""
        pending = []
        for item in items:
            found = self._commits.get(_commit_key(side, item))
            if found is None:
                pending.append(item)
            else:
                item.update(found)
        attribute(side.repo, side.commit, pending)
        for item in pending:
            self._commits.put(
                _commit_key(side, item),
                {field: item[field] for field in ("commit", "author", "date")},
            )

    def digest(self, side: Side, epoch: Any, layers: list[Layer], value: Any, path: tuple) -> Any:
        """`value` with each sealed leaf replaced by a digest of its plain text (a tuple: no
        stored value is one), so that two sides compare by what they hold, not by ciphertexts
        bound to their places. Undecryptable or Unavailable when a leaf does not open."""
        if isinstance(value, dict):
            return {k: self.digest(side, epoch, layers, v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.digest(side, epoch, layers, v, (*path, i)) for i, v in enumerate(value)]
        if not cipher.is_sealed(value):
            return value
        where = tuple(str(segment) for segment in path)
        file = next(
            (layer.file for layer in reversed(layers) if leaf_at(layer.data, where) == value),
            layer_file(None, "values", "?"),
        )

        def opened() -> tuple[str, str]:
            plain = self._secrets.opener(side.env_id).open_at(value, file, where)
            return "sealed", hashlib.sha256(repr((type(plain), plain)).encode()).hexdigest()

        return self._digests.get_or_compute((side.env_id, file, where, value, epoch), opened)

    def rules(self, side: Side, name: str, catalog: str | None):
        return self._secrets.rules_of(side.view, catalog)(layer_file(None, "values", name))


@dataclass(frozen=True)
class Pair:
    """The two sides of one comparison and what its secrets' verdicts follow from."""

    a: Side
    b: Side
    catalog: str | None
    epoch: Any


class _Builder:
    """Entries of one resource at one pair of scopes, from raw differences; `attribute`
    then names the commits of all of them in one walk per side."""

    def __init__(
        self, owner: Comparisons, pair: Pair, pairs_a: tuple, pairs_b: tuple, name: str
    ) -> None:
        self._owner, self._pair, self._name = owner, pair, name
        self._layers = (pair.a.view.layers(pairs_a, name), pair.b.view.layers(pairs_b, name))
        self._rules = (
            owner.rules(pair.a, name, pair.catalog),
            owner.rules(pair.b, name, pair.catalog),
        )
        self._made: list[dict] = []

    def entries(self, raw) -> list[dict]:
        made = [entry for entry in map(self._entry, raw) if entry is not None]
        self._made += made
        return made

    def _entry(self, difference: tuple[tuple, Any, Any]) -> dict | None:
        path, value_a, value_b = difference
        base = tuple(str(segment) for segment in path)
        shown_a, secret_a = _masked(value_a, self._rules[0], base)
        shown_b, secret_b = _masked(value_b, self._rules[1], base)
        note = None
        if (secret_a or secret_b) and value_a is not MISSING and value_b is not MISSING:
            try:
                if self._same_secret(path, value_a, value_b):
                    return None  # equal plain text behind different ciphertexts
            except GitstoreError:
                note = UNVERIFIED
        entry: dict[str, Any] = {
            "resource": self._name,
            "key": dotted(path),
            "a": _side_value(self._layers[0], path, shown_a),
            "b": _side_value(self._layers[1], path, shown_b),
        }
        if secret_a or secret_b:
            entry["secret"] = True
        if note:
            entry["note"] = note
        return entry

    def _same_secret(self, path: tuple, value_a: Any, value_b: Any) -> bool:
        owner, pair = self._owner, self._pair
        opened_a = owner.digest(pair.a, pair.epoch, self._layers[0], value_a, path)
        opened_b = owner.digest(pair.b, pair.epoch, self._layers[1], value_b, path)
        return same_value(opened_a, opened_b)

    def attribute(self) -> None:
        """Commits of every entry made; then the fields attribution reads are removed (the
        stored, unmasked value among them)."""
        for side, which in ((self._pair.a, "a"), (self._pair.b, "b")):
            items = [entry[which] for entry in self._made if entry[which] is not None]
            self._owner.attributed(side, items)
            for item in items:
                for internal in _INTERNAL:
                    del item[internal]


class Scopes:
    """The differing keys of the scopes of one comparison: the global level and node pairs."""

    def __init__(self, owner: Comparisons, pair: Pair, names: list[str], key: str | None) -> None:
        self._owner, self._pair, self._names, self._key = owner, pair, names, key

    def global_level(self, masked: list[str]) -> dict:
        keys, more = self._keys((), (), "global", masked)
        return {"keys": keys, "more": more}

    def node(self, name: str, node_a: Node, node_b: Node, masked: list[str]) -> dict:
        keys, more = self._keys(node_a.pairs, node_b.pairs, name, masked)
        entry = {"name": name, "a": node_entity(node_a), "b": node_entity(node_b)}
        return entry | {"keys": keys, "more": more}

    def _keys(
        self, pairs_a: tuple, pairs_b: tuple, label: str, masked: list[str]
    ) -> tuple[list[dict], int]:
        found: list[dict] = []
        for name in self._names:
            found += [
                entry
                for _, entry in self._owner.entries(self._pair, pairs_a, pairs_b, name)
                if self._key is None or related(self._key, entry["key"])
            ]
        shown = found[:KEYS_PER_SCOPE]
        masked += [f"{label}:{e['resource']}:{e['key']}" for e in shown if e.get("secret")]
        return shown, len(found) - len(shown)


# -- helpers ----------------------------------------------------------------------------------
def _weight_of_answer(answer: tuple[dict, tuple]) -> int:
    data = answer[0]
    scopes = ([data["global"]] if data["global"] else []) + data["nodes"]
    return 1 + sum(len(scope["keys"]) for scope in scopes)


def _own_keys(view: EnvironmentView, pairs: tuple, name: str) -> set:
    """The top-level keys the scope's own layers name (a knockout `--key` names `key`)."""
    keys: set = set()
    for layer in view.own_layers(pairs, name):
        for key in layer.data or {}:
            keys.add(key[2:] if isinstance(key, str) and key.startswith("--") else key)
    return keys


def _masked(value: Any, rules, base: tuple[str, ...]) -> tuple[Any, bool]:
    if value is MISSING:
        return value, False
    shown, paths = secret_masks.mask(value, rules, base)
    return shown, bool(paths)


def _side_value(layers: list[Layer], path: tuple, shown: Any) -> dict | None:
    """One side of a key entry: the value and the layer it won in (None where absent)."""
    if shown is MISSING:
        return None
    won = winner(layers, path)
    return {
        "value": shown,
        "level": won.scope if won else None,
        "kind": won.kind if won else None,
        "file": won.file if won else None,
        "commit": None,
        "author": None,
        "date": None,
        # what `attribute` reads: the winning layer and value, and the key path
        "layers": [{"file": won.file, "value": value_at(won.data, path)}] if won else [],
        "winner": 0 if won else None,
        "_path": path,
    }


def _commit_key(side: Side, item: dict) -> tuple:
    file = item["layers"][0]["file"] if item["layers"] else None
    return (str(side.repo.path), side.commit, file, item["_path"])


def _number(raw: Any, name: str, default: int, low: int, high: int) -> int:
    if raw is None:
        return default
    text = str(raw).strip()
    if not is_number(text) or not low <= int(text) <= high:
        raise InvalidInput(f"{name} {raw!r} must be an integer from {low} to {high}", key=name)
    return int(text)
