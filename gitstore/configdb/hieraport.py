"""Hiera in and out: an import plan written as one commit, and an environment written as Hiera 5.

Import (`HieraPort.apply`): the resources the plan names are defined in the catalog's `hiera`
component (a catalog commit only when one is missing); the environment gets the plan's
hierarchy, `merge: shallow` (Hiera's default `first` for top-level keys), the `lookup_options`
and the eyaml values' key paths as `secret_keys`, and every document, secrets sealed, in one
commit of its repository (its first, when the environment is new).

Export (`HieraPort.export`): the inverse mapping, a `hiera.yaml` (v5) and a `data/` tree whose
lookups answer what the store's effective values answer; sealed values become eyaml values for a
public key, or plain text for a caller who may reveal them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.catalog.view import CatalogView
from gitstore.configdb import hieraplan
from gitstore.configdb.hieraplan import Plan
from gitstore.errors import Forbidden, InvalidInput, NotFound
from gitstore.layout import (
    ENVIRONMENT_FILE,
    NODES_LEVEL,
    EnvironmentView,
    layer_file,
    parse_data_path,
)
from gitstore.secrets import eyaml

if TYPE_CHECKING:
    from gitstore.catalog.components import Components
    from gitstore.repositories import Repositories
    from gitstore.secrets.eyamlpush import EyamlKeyPlace
    from gitstore.secrets.service import Secrets

COMPONENT = "hiera"
SHALLOW = "shallow"


class HieraPort:
    """Imports a Hiera plan into an environment; exports an environment as Hiera files."""

    def __init__(
        self,
        repos: Repositories,
        secrets: Secrets,
        components: Components,
        place: EyamlKeyPlace,
    ) -> None:
        self._repos = repos
        self._secrets = secrets
        self._components = components
        self._place = place  # where an imported eyaml key pair is kept for pushes

    # -- import ----------------------------------------------------------------------------
    @staticmethod
    def plan(
        config: Path,
        datadir: Path | None,
        *,
        public_key: bytes | None = None,
        private_key: bytes | None = None,
        resource: str | None = None,
    ) -> Plan:
        """Read `config` and its data into a Plan (nothing written); eyaml values decrypted with
        the PEM key pair given (`eyaml createkeys`' files)."""
        plan = hieraplan.build(config, datadir, _keys(public_key, private_key), resource)
        if public_key is not None and private_key is not None:
            plan.eyaml_pair = (public_key, private_key)
        return plan

    def apply(self, env_id: int, plan: Plan, author: Author | None = None) -> dict:
        """Write `plan` into environment `env_id` (created when absent): one commit."""
        author = author or self._repos.default_author
        if plan.eyaml_pair is not None:  # pushed eyaml values decrypt with it (eyamlpush)
            self._place.install(*plan.eyaml_pair)
        self._define(plan.resources, author)
        message = (
            f"import hiera: {len(plan.files)} files, {len(plan.keys)} keys, {plan.secrets} secrets"
        )
        path = self._repos.environment_path(env_id)
        if not path.exists():
            doc = self._environment({"id": env_id}, plan)
            changes = self._changes(env_id, doc, plan, message, None)
            self._repos.create_environment_repo(env_id, changes, author)
        else:

            def operation(snapshot):
                view = EnvironmentView(snapshot)
                _check_levels_kept(view, plan)
                return self._changes(
                    env_id, self._environment(dict(view.doc), plan), plan, message, snapshot
                )

            self._repos.environment_repo(env_id).update(operation, author)
        repo = self._repos.environment_repo(env_id)
        head = repo.snapshot()
        return {"commit": head.commit_id, "version": head.version, **plan.summary()}

    def _define(self, resources: list[str], author: Author) -> None:
        """Resource definitions for `resources` in the `hiera` component (added if missing)."""
        view = CatalogView(self._repos.catalog().snapshot())
        try:
            component = view.component(COMPONENT)
        except NotFound:
            component = None
        defined = {d["name"] for d in view.definitions_of([COMPONENT])} if component else set()
        missing = [name for name in resources if name not in defined]
        if component is None:
            body = {"name": COMPONENT, "resource_definitions": [{"name": n} for n in missing]}
            self._components.create(body, author)
        elif missing:
            items = [{"id": d["id"], "name": d["name"]} for d in component["resource_definitions"]]
            items += [{"name": name} for name in missing]
            self._components.update(COMPONENT, {"resource_definitions": items}, author)

    @staticmethod
    def _environment(doc: dict, plan: Plan) -> dict:
        doc["components"] = list(dict.fromkeys([*(doc.get("components") or []), COMPONENT]))
        doc["hierarchy"] = plan.hierarchy
        doc["merge"] = SHALLOW
        doc["hiera_variables"] = plan.variables
        if plan.lookup_options:
            doc["lookup_options"] = plan.lookup_options
        else:
            doc.pop("lookup_options", None)
        keys = sorted({*(doc.get("secret_keys") or []), *plan.secret_keys})
        if keys:
            doc["secret_keys"] = keys
        return doc

    def _changes(
        self, env_id: int, doc: dict, plan: Plan, message: str, snapshot: Any
    ) -> ChangeSet:
        sealer = self._secrets.new_environment_sealer(env_id, doc)
        name = f"environment {env_id}"
        changes = ChangeSet(message)
        changes.put(ENVIRONMENT_FILE, documents.encode(name, ENVIRONMENT_FILE, doc))
        for (pairs, resource, kind), document in plan.documents.items():
            path = layer_file(pairs[-1] if pairs else None, kind, resource)
            old = snapshot.read(path) if snapshot is not None and snapshot.exists(path) else None
            caches = snapshot.caches if snapshot is not None else None
            data = documents.encode(name, path, document, old, sealer=sealer, caches=caches)
            changes.put(path, data)
        return changes

    # -- export ----------------------------------------------------------------------------
    def export(
        self,
        env_id: int,
        out: Path,
        *,
        public_key: bytes | None = None,
        reveal: bool = False,
        who: str | None = None,
        version: str | None = None,
    ) -> dict:
        """Write `hiera.yaml` and `data/` for environment `env_id` into folder `out`.

        Sealed values are re-encrypted for `keys`, or written plain with `reveal` (the caller
        must be allowed to reveal: the reveal is audited as made by `who`); without either an
        environment holding secrets is refused before anything is written.
        """
        keys = _keys(public_key, None)
        repo = self._repos.environment_repo(env_id)
        snapshot = repo.snapshot(version)
        view = EnvironmentView(snapshot)
        files, secrets = self._export_files(env_id, view, keys, reveal)
        if secrets and keys is None and not reveal:
            raise Forbidden(
                f"environment {env_id} holds {secrets} secret values: give an eyaml public key "
                "to re-encrypt them, or --reveal (a secrets holder) to write them plain"
            )
        if reveal and secrets:
            self._secrets.record_reveal(
                who, env_id, "export hiera", snapshot.commit_id, (f"{secrets} values",)
            )
        out.mkdir(parents=True, exist_ok=True)
        (out / "hiera.yaml").write_text(_hiera_yaml(view, files, keys is not None and secrets > 0))
        for relative, data in files.items():
            target = out / "data" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump(data, sort_keys=False, width=1 << 16))
        return {"commit": snapshot.commit_id, "files": len(files), "secrets": secrets}

    def _export_files(
        self, env_id: int, view: EnvironmentView, keys: eyaml.EyamlKeys | None, reveal: bool
    ) -> tuple[dict[str, dict], int]:
        """Every layer file as a Hiera data file by relative path, and the secrets in them."""
        files: dict[str, dict] = {}
        secrets = 0
        opening = keys is not None or reveal
        for path in sorted(view.snapshot.walk("")):
            placed = parse_data_path(path)
            if placed is None or (placed[0] is not None and placed[0][0] not in view.hierarchy):
                continue
            pair, kind, _ = placed
            data = view.snapshot.read_mapping(path) or {}
            shown, paths = self._secrets.show(env_id, view, data, path, reveal=opening)
            secrets += len(paths)
            if keys is not None and paths:  # revealed data may share parsed subtrees: copied
                shown = _encrypt_paths(copy.deepcopy(shown), paths, keys)
            target = _data_file(pair, kind)
            files.setdefault(target, {}).update(shown)
        lookup_options = view.doc.get("lookup_options")
        if lookup_options:
            files.setdefault(_data_file(None, "values"), {})["lookup_options"] = lookup_options
        return files, secrets


def _keys(public: bytes | None, private: bytes | None) -> eyaml.EyamlKeys | None:
    if public is None and private is None:
        return None
    if public is None:
        raise InvalidInput(
            "an eyaml private key needs its public key (the certificate)", key="eyaml-public-key"
        )
    return eyaml.EyamlKeys.load(public, private)


def _check_levels_kept(view: EnvironmentView, plan: Plan) -> None:
    dropped = [level for level in view.hierarchy if level not in plan.hierarchy]
    held = [level for level in dropped if view.level_values(level)]
    if held:
        raise InvalidInput(
            f"environment {view.env_id} holds data at levels {held} that the imported "
            "hierarchy does not have: import into a new environment",
            key="env",
        )


def _data_file(pair: tuple[str, str] | None, kind: str) -> str:
    """`common.yaml` / `common.overrides.yaml`, `<level>/<value>.yaml` / `.overrides.yaml`."""
    suffix = ".overrides.yaml" if kind == "overrides" else ".yaml"
    return f"common{suffix}" if pair is None else f"{pair[0]}/{pair[1]}{suffix}"


def _encrypt_paths(document: dict, paths: tuple[str, ...], keys: eyaml.EyamlKeys) -> dict:
    """`document` (revealed) with the value at each dotted path replaced by its eyaml value."""
    for dotted in paths:
        parts = dotted.split(".")
        holder: Any = document
        for part in parts[:-1]:
            holder = holder[int(part)] if isinstance(holder, list) else holder[part]
        last = int(parts[-1]) if isinstance(holder, list) else parts[-1]
        holder[last] = eyaml.encrypt(str(holder[last]), keys)
    return document


def _hiera_yaml(view: EnvironmentView, files: dict[str, dict], eyaml_entries: bool) -> str:
    """A Hiera 5 hierarchy, most specific first: each level's overrides then values."""
    levels = list(reversed(view.hierarchy))
    variables = view.doc.get("hiera_variables") or {}
    hierarchy = []
    for level in levels:
        variable = variables.get(level) or (
            "trusted.certname" if level == NODES_LEVEL else f"facts.{level}"
        )
        for kind in ("overrides", "values"):
            hierarchy.append(_entry(f"{level} {kind}", f"{level}/%{{{variable}}}", kind))
    for kind in ("overrides", "values"):
        hierarchy.append(_entry(f"common {kind}", "common", kind))
    config: dict[str, Any] = {"version": 5, "defaults": {"datadir": "data"}}
    if eyaml_entries:
        config["defaults"]["lookup_key"] = "eyaml_lookup_key"
        config["defaults"]["options"] = {
            "pkcs7_private_key": "keys/private_key.pkcs7.pem",
            "pkcs7_public_key": "keys/public_key.pkcs7.pem",
        }
    else:
        config["defaults"]["data_hash"] = "yaml_data"
    config["hierarchy"] = hierarchy
    text = yaml.safe_dump(config, sort_keys=False)
    del files  # the hierarchy names every level: a node without a file skips it, as Hiera does
    return text


def _entry(name: str, base: str, kind: str) -> dict:
    suffix = ".overrides.yaml" if kind == "overrides" else ".yaml"
    return {"name": name, "path": f"{base}{suffix}"}
