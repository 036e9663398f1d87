"""Settings of releases and environments, and a release's upgrade rules (docs/upgrade.md).

    catalog.git          releases/<name>/settings.yaml    {editable: {...}, generated: {...}}
                         releases/<name>/upgrade.yaml     {rules: [{since, op, path, ...}]}
    environments/<id>    settings/editable.yaml           {section: {key: {value, ...}}}
                         settings/generated.yaml          credentials: secret as a whole

A release's settings are the defaults of an environment cloned into it (Fuel's
`attributes_metadata`): `generated` holds credential generators (`{generator: password}`) that
become values when a clone needs them. An environment's settings are what it stores: absent files
read as empty mappings.

Generated settings are secret as a whole (and editable ones where a secrets rule says so): reads
mask them unless revealed, and every write goes through `documents.encode` with the
environment's sealer, which encrypts them for their repository, file and key path.
"""

from __future__ import annotations

import string
from random import SystemRandom
from typing import TYPE_CHECKING, Any

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.catalog.releases import RELEASE, OwnerCatalog
from gitstore.errors import InvalidInput
from gitstore.layout import EnvironmentView
from gitstore.merge.migrations import check_rules
from gitstore.names import is_number
from gitstore.served import Served
from gitstore.validation import TreeCheck

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

EDITABLE = "settings/editable.yaml"
GENERATED = "settings/generated.yaml"
RELEASE_SETTINGS = "settings.yaml"
RELEASE_RULES = "upgrade.yaml"
PARTS = ("editable", "generated")
SETTINGS_BODY = Body("settings", PARTS)
_PASSWORD_LENGTH = 24
_PASSWORD_ALPHABET = string.ascii_letters + string.digits
#: The operating system's randomness: generated values are credentials.
_RANDOM = SystemRandom()


# -- shapes -----------------------------------------------------------------------------------
def check_settings(body: Any, what: str) -> dict:
    """`{editable?, generated?}` with each part a mapping (sections of editable too)."""
    body = SETTINGS_BODY.check(body, f"the {what} body")
    for part in PARTS:
        if part in body and not isinstance(body[part], dict):
            raise InvalidInput(f"{what}: field {part!r} must be an object", key=part)
    for section, attributes in (body.get("editable") or {}).items():
        if not isinstance(attributes, dict):
            raise InvalidInput(
                f"{what}: editable section {section!r} must be an object", key="editable"
            )
    return body


# -- generators -------------------------------------------------------------------------------
def generate(defaults: Any) -> Any:
    """`defaults` with every generator spec (`{generator, generator_arg?}`) replaced by a value.

    `password` and `hexstring` make fresh random values, `identical` copies its argument; the
    generators that need the Fuel master's own settings (`ip`, `from_settings`) have no meaning
    outside it and become null.
    """
    if isinstance(defaults, dict):
        if "generator" in defaults and set(defaults) <= {"generator", "generator_arg"}:
            return _generated(defaults["generator"], defaults.get("generator_arg"))
        return {key: generate(value) for key, value in defaults.items()}
    if isinstance(defaults, list):
        return [generate(item) for item in defaults]
    return defaults


def _generated(kind: Any, arg: Any) -> Any:
    if kind == "password":
        return "".join(_RANDOM.choice(_PASSWORD_ALPHABET) for _ in range(_PASSWORD_LENGTH))
    if kind == "hexstring":
        length = int(arg) if is_number(str(arg)) else 32
        return "".join(_RANDOM.choice("0123456789abcdef") for _ in range(length))
    if kind == "identical":
        return arg
    return None


# -- reading and writing files ----------------------------------------------------------------
def read_plain(secrets: Secrets, env_id: int, snapshot: Snapshot, path: str) -> dict:
    """The document at `path` with its sealed leaves opened ({} if absent).

    `env_id` names the environment the values were sealed for: a seed reads its original's files
    through its own history before re-sealing them for itself.
    """
    document = snapshot.read_mapping(path) or {}
    rules = secrets.rules_of(EnvironmentView(snapshot))(path)
    plain, _ = secrets.opener(env_id).reveal(document, rules, path)
    return dict(plain)


def write_file(
    secrets: Secrets,
    env_id: int,
    changes: ChangeSet,
    snapshot: Snapshot,
    path: str,
    document: dict,
    *,
    fresh: bool = False,
) -> None:
    """Write `document` at `path` of environment `env_id` through the one write door: secret
    leaves sealed for this place, unchanged ones keeping their bytes, the mask meaning
    "unchanged".

    `fresh` writes a new file instead of editing the stored one (whose comments and sealed
    values would be kept): for a document made anew, where keeping them costs a slow YAML
    round trip and saves nothing.
    """
    sealer = secrets.sealer(env_id, EnvironmentView(snapshot), secrets.caller)
    old = None if fresh else snapshot.read(path)
    changes.put(
        path,
        documents.encode(
            snapshot.repository, path, document, old, sealer=sealer, caches=snapshot.caches
        ),
    )


def release_folder(catalog: Snapshot, ref: int | str) -> str:
    """`releases/<name>` of the release `ref` (id or name); NotFound otherwise."""
    return OwnerCatalog(catalog, RELEASE).folder_of(ref)


def release_defaults(catalog: Snapshot, folder: str) -> dict:
    """A release's `settings.yaml` as `{editable, generated}` (empty parts when absent)."""
    doc = catalog.read_mapping(f"{folder}/{RELEASE_SETTINGS}") or {}
    return {part: dict(doc.get(part) or {}) for part in PARTS}


def release_rules(catalog: Snapshot, folder: str) -> list[dict]:
    doc = catalog.read_mapping(f"{folder}/{RELEASE_RULES}") or {}
    return list(doc.get("rules") or [])


class Settings:
    """Read and write release defaults, upgrade rules and environment settings."""

    def __init__(self, repos: Repositories, secrets: Secrets) -> None:
        self._repos = repos
        self._secrets = secrets

    # -- releases --------------------------------------------------------------------------
    def release_settings(self, ref: int | str, version: str | None = None) -> Served:
        catalog = self._repos.catalog().snapshot(version)
        data = release_defaults(catalog, release_folder(catalog, ref))
        return Served(data, catalog.commit_id, catalog.version)

    def put_release_settings(
        self, ref: int | str, body: Any, author: Author | None = None
    ) -> Served:
        body = check_settings(body, "release settings")
        document = {part: body.get(part) or {} for part in PARTS}
        self._put_release_file(ref, RELEASE_SETTINGS, document, "settings", author)
        return self.release_settings(ref)

    def upgrade_rules(self, ref: int | str, version: str | None = None) -> Served:
        catalog = self._repos.catalog().snapshot(version)
        rules = release_rules(catalog, release_folder(catalog, ref))
        return Served({"rules": rules}, catalog.commit_id, catalog.version)

    def put_upgrade_rules(self, ref: int | str, body: Any, author: Author | None = None) -> Served:
        document = check_rules(body)
        self._put_release_file(ref, RELEASE_RULES, document, "upgrade rules", author)
        return self.upgrade_rules(ref)

    def _put_release_file(
        self, ref: int | str, name: str, document: dict, what: str, author: Author | None
    ) -> None:
        def operation(snapshot: Snapshot) -> ChangeSet:
            folder = release_folder(snapshot, ref)
            changes = ChangeSet(f"catalog: set {what} of {folder}")
            path = f"{folder}/{name}"
            changes.put(
                path,
                documents.encode(
                    snapshot.repository,
                    path,
                    document,
                    snapshot.read(path),
                    caches=snapshot.caches,
                ),
            )
            return changes

        self._repos.catalog().update(operation, author or self._repos.default_author)

    # -- environments ----------------------------------------------------------------------
    def cluster_settings(
        self, env_id: int, version: str | None = None, reveal: bool = False, who: str | None = None
    ) -> Served:
        """`{editable, generated}` with secrets masked unless `reveal` (recorded as `who`'s)."""
        snapshot = self._repos.environment_repo(env_id).snapshot(version)
        view = EnvironmentView(snapshot)
        data: dict[str, Any] = {}
        shown: list[str] = []
        for part, path in (("editable", EDITABLE), ("generated", GENERATED)):
            data[part], paths = self._secrets.show(
                env_id,
                view,
                snapshot.read_mapping(path) or {},
                path,
                cache_key=("layer", snapshot.object_id(path)),
                reveal=reveal,
            )
            shown += [f"{part}.{p}" for p in paths]
        if reveal:
            self._secrets.record_reveal(who, env_id, "settings", snapshot.commit_id, shown)
        inputs = (snapshot.object_id(EDITABLE), snapshot.object_id(GENERATED), reveal)
        return Served(
            data, snapshot.commit_id, snapshot.version, inputs, () if reveal else tuple(shown)
        )

    def put_cluster_settings(self, env_id: int, body: Any, author: Author | None = None) -> Served:
        """Replace the parts given; a secret sent back masked keeps its stored value."""
        body = check_settings(body, "cluster settings")

        def operation(snapshot: Snapshot) -> ChangeSet:
            changes = ChangeSet(
                f"environment {env_id}: set settings "
                f"({', '.join(p for p in PARTS if p in body) or 'nothing'})"
            )
            for part, path in (("editable", EDITABLE), ("generated", GENERATED)):
                if part in body:
                    write_file(self._secrets, env_id, changes, snapshot, path, body[part])
            return changes

        self._repos.environment_repo(env_id).update(operation, author or self._repos.default_author)
        return self.cluster_settings(env_id)


# -- the push gate ----------------------------------------------------------------------------
def release_settings_files(tree: TreeCheck) -> None:
    """A pushed release's `settings.yaml` and `upgrade.yaml` have the shapes the API writes."""
    for entry in tree.snapshot.list(RELEASE.folder):
        folder = f"{RELEASE.folder}/{entry.name}"
        for name, check in (
            (RELEASE_SETTINGS, lambda d: check_settings(d, "release settings")),
            (RELEASE_RULES, check_rules),
        ):
            _gate(tree, f"{folder}/{name}", check)


def environment_settings_files(tree: TreeCheck) -> None:
    """Editable settings are sections of attributes."""
    _gate(tree, EDITABLE, lambda d: check_settings({"editable": d}, "settings"))


def _gate(tree: TreeCheck, path: str, check) -> None:
    document = tree.mapping(path)
    if document is None:
        return  # absent, or already reported as not a mapping
    try:
        check(document)
    except InvalidInput as exc:
        tree.report(path, exc.message)
