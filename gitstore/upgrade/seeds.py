"""Environment upgrade: clone an environment into a newer release as its "upgrade seed".

The seed is a new repository whose history is the original's plus one commit (so `git log` and
`git diff` connect them) that:
- sets the seed's id, name and release and records the relation;
- applies the target release's migration rules to the original's settings, takes editable
  values from them for the keys the new release has, and deep-merges generated credentials
  with the original's winning (re-encrypted for the seed: they are bound to their repository);
- keeps node groups, networks, VIPs, cluster graphs, cluster tags and roles, and every
  ConfigDB override (operator intent);
- drops ConfigDB values (facts the original's deployment uploaded), transactions and the
  node inventory: nodes come over one by one with `assign` (gitstore.upgrade.moves).

The relation is `upgrade: {role: original|seed, peer: <id>}` in both `environment.yaml`s. It
counts only while both sides name each other: the original is claimed (one commit) before the
seed exists, so a crash in between leaves a one-sided claim that counts for nothing. Deleting
either environment removes the relation from the other, so the original can be cloned again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.catalog.releases import RELEASE, OwnerCatalog
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_FILE, GLOBAL, INVENTORY_NODES, EnvironmentView
from gitstore.merge import migrations
from gitstore.merge.diff import changed_keys, diff_documents
from gitstore.secrets.mask import mask_change
from gitstore.served import Served
from gitstore.upgrade.networks import VIPS, copy_vips, network_names, read_network
from gitstore.upgrade.relations import FIELD, ORIGINAL, SEED, Relations
from gitstore.upgrade.settings import (
    EDITABLE,
    GENERATED,
    generate,
    read_plain,
    release_defaults,
    release_rules,
    write_file,
)

if TYPE_CHECKING:
    from gitstore.configdb.environments import Environments
    from gitstore.deployment.inventory import Nodes
    from gitstore.deployment.journal import MoveJournal
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets
    from gitstore.upgrade.moves import Moves

#: Release states that cannot be installed, so never a clone target.
CLOSED_STATES = ("deprecated", "manageonly")
#: Top-level folders a seed does not inherit (values folders of levels are dropped too).
NOT_INHERITED = (INVENTORY_NODES, "transactions", f"{GLOBAL}/values")
CLONE_BODY = Body("clone", ("name", "release_id"))
SETTINGS_FILES = (("editable", EDITABLE), ("generated", GENERATED))
#: Bytes every sealed value starts with: a cheap test before a file is parsed.
SEALED_MARK = b"ENC["


def check_clone_body(body: Any) -> dict:
    """`{name: str, release_id: int}`."""
    body = CLONE_BODY.check(body)
    name = body.get("name")
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > 200
        or any(ord(c) < 32 for c in name)
    ):
        raise InvalidInput(
            "field 'name' must be a non-empty string of printable characters", key="name"
        )
    release = body.get("release_id")
    if isinstance(release, bool) or not isinstance(release, int) or release < 1:
        raise InvalidInput("field 'release_id' must be a positive integer", key="release_id")
    return {"name": name, "release_id": release}


def check_target(source: dict, target: dict) -> None:
    """A clone target is installable, newer than the original's release and of its OS."""
    if target.get("state") in CLOSED_STATES:
        raise InvalidInput(
            f"release {target['id']} ({target['name']}) is {target['state']}: "
            "it cannot be installed, so it cannot be an upgrade target",
            key="release_id",
        )
    old = migrations.parse_version(source.get("version"), "version")
    new = migrations.parse_version(target.get("version"), "version")
    if new <= old:
        raise InvalidInput(
            f"release {target['id']} ({target.get('version')}) is not newer than "
            f"the original's release {source['id']} ({source.get('version')})",
            key="release_id",
        )
    if target.get("operating_system") != source.get("operating_system"):
        raise InvalidInput(
            f"release {target['id']} runs {target.get('operating_system')!r}, "
            f"the original's release runs {source.get('operating_system')!r}: "
            "an upgrade keeps the operating system",
            key="release_id",
        )


def carried_settings(original: dict, source: dict, target: dict, catalog: Snapshot) -> dict:
    """The seed's `{editable, generated}`: the `original`'s (plain), migrated and merged into
    the target release's defaults."""
    folder = f"{RELEASE.folder}/{target['name']}"
    rules = migrations.applicable(
        release_rules(catalog, folder),
        migrations.parse_version(source.get("version")),
        migrations.parse_version(target.get("version")),
    )
    migrated = migrations.apply_rules(original, rules)
    defaults = generate(release_defaults(catalog, folder))
    return {
        "editable": migrations.merge_editable(defaults["editable"], migrated["editable"]),
        "generated": migrations.merge_generated(defaults["generated"], migrated["generated"]),
    }


def sealed_files(snapshot: Snapshot, skip: frozenset[str], folder: str = "") -> list[str]:
    """YAML files holding sealed values (bound to their repository); folders and files in
    `skip` are not entered."""
    found = []
    for entry in snapshot.list(folder):
        path = f"{folder}/{entry.name}" if folder else entry.name
        if path in skip:
            continue
        if entry.is_tree:
            found += sealed_files(snapshot, skip, path)
        elif path.endswith(".yaml") and SEALED_MARK in (snapshot.read(path) or b""):
            found.append(path)
    return found


def values_folders(view: EnvironmentView) -> list[str]:
    """Every `values/` folder of the levels (the global one is in NOT_INHERITED)."""
    return [
        f"{level}/{value}/values" for level in view.hierarchy for value in view.level_values(level)
    ]


def editable_values(editable: dict) -> dict:
    """`{section: {key: value}}`: what an operator set, without definitions or metadata."""
    result = {}
    for section, attributes in editable.items():
        if not isinstance(attributes, dict):
            continue
        result[section] = {
            key: (a["value"] if isinstance(a, dict) and "value" in a else a)
            for key, a in attributes.items()
            if key != migrations.METADATA
        }
    return result


class Upgrades:
    """Clone into a seed, copy VIPs, read the relation and its status, forget it."""

    def __init__(
        self,
        repos: Repositories,
        relations: Relations,
        environments: Environments,
        journal: MoveJournal,
        moves: Moves,
        nodes: Nodes,
        secrets: Secrets,
    ) -> None:
        self._repos = repos
        self._relations = relations
        self._environments = environments
        self._journal = journal
        self._moves = moves
        self._nodes = nodes
        self._secrets = secrets

    # -- clone -----------------------------------------------------------------------------
    def clone(self, orig_id: int, body: Any, author: Author | None = None) -> Served:
        """Create the seed of `orig_id` in release `release_id`; the new environment."""
        request = check_clone_body(body)
        author = author or self._repos.default_author
        self._moves.recover()
        with self._journal.exclusive():
            view = self._environments.view(orig_id)
            relation = self._relations.relation(orig_id)
            if relation is not None:
                raise InvalidInput(
                    f"environment {orig_id} is already in an upgrade (the "
                    f"{relation.role} of environment {relation.peer})"
                )
            catalog = self._repos.catalog().snapshot()
            target = OwnerCatalog(catalog, RELEASE).entity(request["release_id"])
            source = self._source_release(view, catalog)
            check_target(source, target)
            self._check_name(request["name"])
            seed_id = self._create_seed(orig_id, request["name"], source, target, author)
        return self._environments.get(seed_id)

    def _source_release(self, view: EnvironmentView, catalog: Snapshot) -> dict:
        name = view.doc.get("release")
        if not name:
            raise InvalidInput(
                f"environment {view.env_id} names no release: there is nothing to upgrade from",
                key="release_id",
            )
        try:
            return OwnerCatalog(catalog, RELEASE).entity(name)
        except NotFound as exc:
            raise InvalidInput(
                f"the release of environment {view.env_id}, {name!r}, is not in the catalog",
                key="release_id",
            ) from exc

    def _check_name(self, name: str) -> None:
        for env_id in self._repos.environment_ids():
            try:
                taken = self._environments.view(env_id).doc.get("name") == name
            except NotFound:
                continue
            if taken:
                raise Conflict(
                    f"environment name {name!r} is taken by environment {env_id}", key="name"
                )

    def _create_seed(
        self, orig_id: int, name: str, source: dict, target: dict, author: Author
    ) -> int:
        for _ in range(100):
            seed_id = max(self._repos.environment_ids(), default=0) + 1
            self._relations.set_claim(
                orig_id,
                {"role": ORIGINAL, "peer": seed_id},
                author,
                f"cloning into environment {seed_id}",
            )
            operation = self._seed_commit(orig_id, seed_id, name, source, target)
            try:
                self._repos.clone_environment_repo(orig_id, seed_id, operation, author)
                return seed_id
            except Conflict:
                if self._repos.environment_path(seed_id).exists():
                    continue  # another creator took the id first: claim the next one
                self._relations.set_claim(orig_id, None, author, "the clone failed", expect=seed_id)
                raise
            except BaseException:
                self._relations.set_claim(orig_id, None, author, "the clone failed", expect=seed_id)
                raise
        raise Conflict("could not allocate an environment id for the seed")

    def _seed_commit(
        self, orig_id: int, seed_id: int, name: str, source: dict, target: dict
    ) -> Callable[[Snapshot], ChangeSet]:
        """The operation that makes the seed's one commit on the original's history."""
        catalog = self._repos.catalog().snapshot()
        secrets = self._secrets

        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            changes = ChangeSet(
                f"environment {seed_id}: upgrade seed of environment {orig_id} "
                f"into release {target['name']}"
            )
            doc = {
                **view.doc,
                "id": seed_id,
                "name": name,
                "release": target["name"],
                FIELD: {"role": SEED, "peer": orig_id},
            }
            changes.put(
                ENVIRONMENT_FILE,
                documents.encode(
                    snapshot.repository,
                    ENVIRONMENT_FILE,
                    doc,
                    snapshot.read(ENVIRONMENT_FILE),
                    caches=snapshot.caches,
                ),
            )
            original = {
                part: read_plain(secrets, orig_id, snapshot, path) for part, path in SETTINGS_FILES
            }
            settings = carried_settings(original, source, target, catalog)
            for part, path in SETTINGS_FILES:
                write_file(secrets, seed_id, changes, snapshot, path, settings[part], fresh=True)
            dropped = (*NOT_INHERITED, *values_folders(view))
            for folder in dropped:
                changes.delete(folder)
            for file in sealed_files(snapshot, frozenset((*dropped, EDITABLE, GENERATED))):
                plain = read_plain(secrets, orig_id, snapshot, file)
                write_file(secrets, seed_id, changes, snapshot, file, plain)
            return changes

        return operation

    # -- VIPs ------------------------------------------------------------------------------
    def copy_vips(self, seed_id: int, author: Author | None = None) -> Served:
        """Copy the original's VIPs into the seed (same names replaced); the seed's VIPs."""
        self._moves.recover()
        with self._journal.exclusive():
            original = self._relations.original_of(seed_id)
            theirs = read_network(self._repos.environment_repo(original).snapshot())["vips"]
            outcome: dict[str, list] = {}

            def operation(snapshot: Snapshot) -> ChangeSet:
                copied = copy_vips(theirs, network_names(snapshot))
                names = {v.get("name") for v in copied}
                kept = [v for v in read_network(snapshot)["vips"] if v.get("name") not in names]
                outcome["vips"] = kept + copied
                changes = ChangeSet(
                    f"environment {seed_id}: upgrade: copy VIPs of environment {original}"
                )
                write_file(
                    self._secrets, seed_id, changes, snapshot, VIPS, {"vips": outcome["vips"]}
                )
                return changes

            result = self._repos.environment_repo(seed_id).update(
                operation, author or self._repos.default_author
            )
        return Served(outcome["vips"], result.commit, result.version)

    # -- status ----------------------------------------------------------------------------
    def status(self, env_id: int) -> Served:
        """The relation, the nodes on each side, moves under way and the settings diff."""
        snapshot = self._repos.environment_repo(env_id).snapshot()
        relation = self._relations.relation(env_id)
        data: dict[str, Any] = {"environment": env_id, "role": None, "peer": None}
        if relation is None:
            return Served(data, snapshot.commit_id, snapshot.version)
        original, seed = relation.original, relation.seed
        data.update(role=relation.role, peer=relation.peer, original=original, seed=seed)
        data["nodes"] = {"original": self._node_ids(original), "seed": self._node_ids(seed)}
        data["moves_in_progress"] = [i.id for i in self._moves.pending() if i.seed == seed]
        data["settings_diff"] = self._settings_diff(original, seed)
        return Served(data, snapshot.commit_id, snapshot.version)

    def _node_ids(self, env_id: int) -> list[int]:
        return sorted(self._nodes.cluster(env_id).nodes)

    def _settings_diff(self, original: int, seed: int) -> dict:
        """Editable values that differ (secrets masked) and generated keys that differ."""
        sides = []
        for env_id in (original, seed):
            snapshot = self._repos.environment_repo(env_id).snapshot()
            sides.append(
                {
                    part: read_plain(self._secrets, env_id, snapshot, path)
                    for part, path in SETTINGS_FILES
                }
            )
        before, after = sides
        diff = diff_documents(
            editable_values(before["editable"]), editable_values(after["editable"])
        )
        view = self._environments.view(seed)
        editable, _ = mask_change(
            diff or {"added": {}, "removed": {}, "changed": {}},
            self._secrets.rules_of(view)(EDITABLE),
        )
        return {
            "editable": editable,
            "generated": changed_keys(before["generated"], after["generated"]),
        }
