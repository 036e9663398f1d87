"""`store.secrets`: the facade service that seals, masks, reveals and rotates secrets.

Other services call it at their doors: writes ask for a `sealer` and hand it to
`documents.encode`; reads `show` documents (masked, or revealed for callers allowed to see them)
and `record_reveal` what they revealed. Maintenance (`rotate`, `keys`, `remove_key`) walks the
heads of every environment repository.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gitstore import documents, metrics
from gitstore.backend.cache import Caches
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, Repository
from gitstore.backend.snapshot import Snapshot
from gitstore.catalog.view import CatalogView
from gitstore.errors import GitstoreError, InvalidInput, Unavailable
from gitstore.layout import EnvironmentView, layer_file
from gitstore.names import check_segment
from gitstore.secrets import cipher, mask
from gitstore.secrets.audit import AuditLog
from gitstore.secrets.caller import NOBODY, Caller
from gitstore.secrets.keyring import Keyring, Keys
from gitstore.secrets.leaves import secret_leaves
from gitstore.secrets.rules import NO_SECRETS, Rules, describe, rules_for_file
from gitstore.secrets.seal import Sealer
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.repositories import Repositories

_YAML = ".yaml"
#: The repository part of the places of values sealed in the catalog (plan parameters).
CATALOG = "catalog"


def repository_of(env_id: int) -> str:
    """The repository part of a sealed value's place: `environments/<id>`."""
    return f"environments/{int(env_id)}"


class Secrets:
    """Secrets of one store: its keyring, rules, sealing, masking, revealing and rotation."""

    def __init__(self, repos: Repositories, caches: Caches) -> None:
        self._repos = repos
        self._caches = caches  # masking's (`mask.py`), beside the two below
        self._definitions = caches.secret_definitions
        self._revealed = caches.revealed_documents
        self.keyring = Keyring.of_root(repos.root)
        self.audit = AuditLog(repos.root)
        #: Whether the caller of a write may compare sent secrets with stored ones: the rule
        #: the front end bound (`bind_caller`), nobody until it binds one.
        self.caller: Caller = NOBODY

    # -- rules -------------------------------------------------------------------------------
    def definitions(
        self, components: list[str], catalog_head: str | None = None
    ) -> dict[str, dict]:
        """Resource name -> definition for `components`, from the catalog at `catalog_head`
        (a commit id the caller read; None: the served head now)."""
        catalog = self._repos.catalog()
        if catalog_head is None:
            catalog_head = catalog.head()
        return self._definitions.get_or_compute(
            (catalog_head, tuple(components)),
            lambda: {
                d["name"]: d
                for d in CatalogView(catalog.snapshot(catalog_head)).definitions_of(components)
            },
        )

    def rules_of(
        self, view: EnvironmentView, catalog_head: str | None = None
    ) -> Callable[[str], Rules]:
        """File path -> its rules, for one commit of an environment (and of the catalog:
        `catalog_head`, None for the served head)."""
        definitions = self.definitions(view.components, catalog_head)
        return lambda file: rules_for_file(file, definitions, view.doc)

    def rules(self, env_id: int, version: str | None = None) -> Served:
        """The rules in force in environment `env_id` (`gitstore secrets rules`)."""
        view = EnvironmentView(self._repos.environment_repo(env_id).snapshot(version))
        definitions = self.definitions(view.components)
        return Served(
            describe(definitions, view.doc, definitions),
            view.snapshot.commit_id,
            view.snapshot.version,
        )

    # -- keys --------------------------------------------------------------------------------
    def _keys(self) -> tuple[Keys | None, str]:
        """The keyring's keys (None if unusable) and, for errors, why they are missing."""
        try:
            keys = self.keyring.current()
        except Unavailable as exc:
            return None, exc.message
        return keys, f"no keyring at {self.keyring.path}"

    # -- writing -----------------------------------------------------------------------------
    def bind_caller(self, rule: Caller) -> None:
        """Make `rule` decide, for every write of this store, whether its caller may compare
        sent secrets with stored ones (`caller.py`); until a front end binds one, nobody may."""
        self.caller = rule

    def sealer(self, env_id: int, view: EnvironmentView, caller: Caller) -> Sealer:
        """The sealer of writes to environment `env_id` at the commit of `view`; it compares
        sent secrets with stored ones only when `caller` may reveal them (`caller.py`)."""
        keys, problem = self._keys()
        return Sealer(
            repository_of(env_id),
            keys,
            self.rules_of(view),
            problem,
            compare=caller(env_id),
        )

    def new_environment_sealer(self, env_id: int, environment: Mapping) -> Sealer:
        """The sealer of the first commit of an environment (no view of it exists yet)."""
        keys, problem = self._keys()
        definitions = self.definitions(list(environment.get("components") or []))
        return Sealer(
            repository_of(env_id),
            keys,
            lambda file: rules_for_file(file, definitions, environment),
            problem,
        )

    def encrypt(self, env_id: int, path: Any, document: Any) -> Served:
        """`document` as it would be stored at `path` of environment `env_id`: secrets sealed.

        Nothing is written. For a caller who may reveal the secrets, a value equal to the one
        stored at the head keeps its ciphertext, so a GitOps change re-sealed this way shows
        only what changed; for anyone else every secret is sealed anew (no guessing oracle).
        """
        path = _check_file(path)
        if not isinstance(document, dict):
            raise InvalidInput("field 'document' must be an object (a mapping)", key="document")
        snapshot = self._repos.environment_repo(env_id).snapshot()
        view = EnvironmentView(snapshot)
        old = snapshot.read_yaml(path) if snapshot.exists(path) else None
        sealed = self.sealer(env_id, view, self.caller).seal(path, document, old)
        return Served(sealed, snapshot.commit_id, snapshot.version)

    def moved_folder(
        self, env_id: int, snapshot: Snapshot, old: str, new: str, changes: ChangeSet
    ) -> None:
        """Re-seal, into `changes`, the sealed values of files moving from `old/` to `new/`.

        A sealed value is bound to its file path, so a moved file would no longer open.
        """
        sealer = self.sealer(env_id, EnvironmentView(snapshot), NOBODY)  # rebinds, compares nothing
        for file in snapshot.walk(old):
            document = _mapping(snapshot, file)
            if document is None:
                continue
            target = new + file[len(old) :]
            moved = sealer.rebind(file, target, document)
            if moved is not document:
                changes.put(
                    target,
                    documents.encode(
                        snapshot.repository,
                        target,
                        moved,
                        snapshot.read(file),
                        caches=snapshot.caches,
                    ),
                )

    # -- reading -----------------------------------------------------------------------------
    def show(
        self,
        env_id: int,
        view: EnvironmentView,
        document: Any,
        sources: str | list[tuple[str, Any]] | Callable[[], list[tuple[str, Any]]],
        *,
        cache_key: Any = None,
        reveal: bool = False,
        rules_file: str | None = None,
        places: Any = None,
        catalog_head: str | None = None,
    ) -> tuple[Any, tuple[str, ...]]:
        """`document` masked (the default) or revealed, and the dotted paths masked/revealed.

        Args:
            sources: the file the document is stored in, or the layers an effective document
                was merged from as (file, data), most specific first (or a function making
                them: they are needed only when a reveal is not cached).
            cache_key: immutable ids of the document's inputs; masked results are cached by
                it, revealed ones by it and the files of the sources (`sources` when it is a
                file, else `places`: what names them).
            rules_file: the file whose rules apply (default: `sources` when it is a file).
            catalog_head: the catalog commit whose definitions' rules apply (None: the
                served head); a cached answer passes the head it is keyed by.
        """
        rules = self.rules_of(view, catalog_head)(rules_file or str(sources))
        paths: Sequence[tuple[str, ...]]
        if cache_key is None:
            masked_data, paths = mask.mask_paths(document, rules, caches=self._caches)
        else:
            masked_data, paths = mask.mask_cached(self._caches, cache_key, document, rules)
        if not reveal:
            return masked_data, tuple(mask.dotted(path) for path in paths)
        keys, problem = self._keys()

        def reveal_now() -> tuple[Any, tuple[str, ...]]:
            opener = mask.Opener(repository_of(env_id), keys, problem)
            found = sources() if callable(sources) else sources
            data, revealed = opener.reveal_paths(document, paths, found)
            return data, tuple(revealed)

        if cache_key is None or keys is None:
            return reveal_now()
        # Opening ~60 sealed leaves was most of a Puppet master's request (docs/performance.md).
        # What they open to follows from the ciphertexts (the cache key's blob ids), their
        # places (environment, files: a value sealed for one file must not open at another)
        # and the keys: a keyring that gained or lost a key is a new epoch. Never edit it.
        where = sources if isinstance(sources, str) else places
        key = (env_id, cache_key, where, rules, _epoch(keys))
        return self._revealed.get_or_compute(key, reveal_now)

    def keys_epoch(self) -> tuple | None:
        """What revealed values follow from besides the ciphertexts: the keyring's key ids
        (None without a usable keyring). A key added or removed makes a new epoch."""
        return _epoch(self._keys()[0])

    def opener(self, env_id: int) -> mask.Opener:
        keys, problem = self._keys()
        return mask.Opener(repository_of(env_id), keys, problem)

    def show_effective(
        self,
        env_id: int,
        view: EnvironmentView,
        pairs: Any,
        resource: str,
        document: Any,
        *,
        reveal: bool,
        inputs: tuple | None = None,
        catalog_head: str | None = None,
    ) -> tuple[Any, tuple[str, ...]]:
        """`show` for the effective document of `resource` at `pairs` of `view` (`inputs`: its
        `view.layer_inputs`, when the caller has them)."""

        def layers() -> list[tuple[str, Any]]:
            return [
                (layer.file, layer.data)
                for layer in reversed(view.layers(pairs, resource))
                if layer.data
            ]

        return self.show(
            env_id,
            view,
            document,
            layers,
            cache_key=(
                "effective",
                view.merge,
                view.layer_inputs(pairs, resource) if inputs is None else inputs,
            ),
            reveal=reveal,
            rules_file=layer_file(None, "values", resource),
            places=(tuple(map(tuple, pairs)), resource),  # the layers' files follow from these
            catalog_head=catalog_head,
        )

    def record_reveal(
        self,
        who: str | None,
        env_id: int,
        what: str,
        commit: str | None,
        paths: tuple[str, ...] | list[str],
    ) -> None:
        """Append a reveal to the audit log (nothing when no secret was revealed)."""
        if paths:
            self.audit.record(who, env_id, what, commit, paths)
            metrics.secret_revealed()

    # -- keys and rotation ---------------------------------------------------------------------
    def _repositories(self) -> list[tuple[str, Repository, Callable[[Snapshot], Sealer]]]:
        """Every repository that may hold sealed values, with a sealer factory for rotation.

        The catalog holds the sealed parameters of deployment plans (`gitstore.plans`); it has
        no rules of its own here, so rotation re-seals what is sealed and nothing more.
        """
        keys, problem = self._keys()
        found: list[tuple[str, Repository, Callable[[Snapshot], Sealer]]] = [
            (
                CATALOG,
                self._repos.catalog(),
                lambda snapshot: Sealer(CATALOG, keys, lambda file: NO_SECRETS, problem),
            )
        ]
        for env_id in self._repos.environment_ids():
            found.append(
                (
                    repository_of(env_id),
                    self._repos.environment_repo(env_id),
                    functools.partial(self._rotation_sealer, env_id),
                )
            )
        return found

    def _rotation_sealer(self, env_id: int, snapshot: Snapshot) -> Sealer:
        return self.sealer(env_id, EnvironmentView(snapshot), NOBODY)

    def usage(self) -> dict[str, int]:
        """Key id -> how many values at the heads of the store's repositories it seals."""
        counts: dict[str, int] = {}
        for _, repo, _ in self._repositories():
            snapshot = repo.snapshot()
            for file in _yaml_files(snapshot):
                document = _mapping(snapshot, file)
                for _, value, _ in secret_leaves(document or {}, Rules(defaults=False)):
                    if cipher.is_sealed(value):
                        key_id = cipher.key_id_of(value) or "(malformed)"
                        counts[key_id] = counts.get(key_id, 0) + 1
        return counts

    def key_report(self) -> list[dict]:
        """Every key of the keyring: id, whether active, creation time, values it seals."""
        keys = self.keyring.require()
        usage = self.usage()
        found = [
            {
                "id": key_id,
                "active": key_id == keys.active,
                "created": keys.created.get(key_id),
                "values": usage.pop(key_id, 0),
            }
            for key_id in keys.keys
        ]
        found += [
            {"id": key_id, "active": False, "created": None, "values": count, "missing": True}
            for key_id, count in sorted(usage.items())
        ]
        return found

    def remove_key(self, key_id: str) -> None:
        """Remove an old key; refused while any value at a head still uses it."""
        self.keyring.remove_key(key_id, lambda kid: self.usage().get(kid, 0))

    def rotate(self, author: Author | None = None, *, new_key: bool = True) -> dict:
        """Add a key and make it active (unless `new_key` is false), then re-seal every value
        of every repository with it: one commit per repository that holds secrets."""
        active = self.keyring.add_key() if new_key else self.keyring.require().active
        report: dict[str, Any] = {"active": active, "repositories": []}
        for name, repo, sealer_of in self._repositories():
            report["repositories"].append(self._reseal(name, repo, sealer_of, author))
        return report

    def _reseal(
        self,
        name: str,
        repo: Repository,
        sealer_of: Callable[[Snapshot], Sealer],
        author: Author | None,
    ) -> dict:
        counted: dict[str, int] = {}

        def operation(snapshot: Snapshot) -> ChangeSet:
            sealer = sealer_of(snapshot)
            changes = ChangeSet()
            for file in _yaml_files(snapshot):
                document = _mapping(snapshot, file)
                if document is None:
                    continue
                sealed = sealer.reseal(file, document)
                if sealed is not document:
                    changes.put(
                        file,
                        documents.encode(
                            snapshot.repository,
                            file,
                            sealed,
                            snapshot.read(file),
                            caches=snapshot.caches,
                        ),
                    )
            counted["values"] = sealer.sealed
            active = sealer.keys.active if sealer.keys else "?"
            changes.message = f"secrets: re-encrypt {sealer.sealed} values with key {active}"
            return changes

        result = repo.update(operation, author or self._repos.default_author)
        return {
            "repository": name,
            "values": counted["values"],
            "commit": result.commit if result.changed else None,
        }


def _yaml_files(snapshot: Snapshot) -> list[str]:
    return [path for path in snapshot.walk() if path.endswith(_YAML) and not path.startswith(".")]


def _mapping(snapshot: Snapshot, file: str) -> dict | None:
    """The parsed file if it is a readable mapping (shared cache: never edit), else None."""
    try:
        document = snapshot.read_yaml(file)
    except GitstoreError:
        return None
    return document if isinstance(document, dict) else None


def _check_file(path: Any) -> str:
    if not isinstance(path, str) or not path.strip("/").endswith(_YAML):
        raise InvalidInput(
            "field 'path' must be the repository path of a .yaml file, e.g. "
            "global/values/astute.yaml",
            key="path",
        )
    path = path.strip("/")
    for segment in path.split("/"):
        check_segment(segment, f"path {path!r} segment")
    return path


def _epoch(keys: Keys | None) -> tuple | None:
    return None if keys is None else (keys.active, tuple(keys.keys))
