"""eyaml values in pushed documents: checked by the push gate, sealed in the served tree.

A team keeps its habit of `eyaml encrypt -s ...` with its public key: a pushed environment
document may hold `ENC[PKCS7,...]` values. The gate refuses a value the store's eyaml private key
does not decrypt, naming file, line and key; once main holds such values, `seal` replaces each by
a gitstore secret (its key path added to `secret_keys`) in one commit of its own, so the served
tree holds no eyaml value for longer than that commit takes (docs/secrets.md#pushed-eyaml-values).

The key place is `<root>/eyaml/` (`private_key.pkcs7.pem`, mode 0600, and `public_key.pkcs7.pem`),
outside every repository like the keyring; `import hiera` with a key pair puts it there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitstore import documents, yamlio
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.errors import Conflict, InvalidInput
from gitstore.layout import ENVIRONMENT_FILE, EnvironmentView
from gitstore.secrets import eyaml

if TYPE_CHECKING:
    from gitstore.backend.snapshot import Snapshot
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

FOLDER = "eyaml"
PRIVATE = "private_key.pkcs7.pem"
PUBLIC = "public_key.pkcs7.pem"
_MARK = b"ENC[PKCS7"
SEALER = Author("gitstore", "gitstore@localhost")


class EyamlKeyPlace:
    """`<root>/eyaml/`: the store's eyaml key pair, outside git."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.path = Path(root) / FOLDER

    def keys(self) -> eyaml.EyamlKeys | None:
        """The pair kept here (None when none was installed)."""
        public = self.path / PUBLIC
        if not public.exists():
            return None
        private = self.path / PRIVATE
        return eyaml.EyamlKeys.load(
            public.read_bytes(), private.read_bytes() if private.exists() else None
        )

    def install(self, public: bytes, private: bytes) -> bool:
        """Keep this pair (True when written); Conflict when another pair is kept already."""
        eyaml.EyamlKeys.load(public, private)  # both must load
        if (self.path / PUBLIC).exists():
            if (self.path / PUBLIC).read_bytes() != public:
                raise Conflict(
                    f"{self.path} holds another eyaml key pair: remove it first to replace it",
                    key="eyaml-public-key",
                )
            return False
        self.path.mkdir(mode=0o700, exist_ok=True)
        _write(self.path / PRIVATE, private, 0o600)
        _write(self.path / PUBLIC, public, 0o644)
        return True


def _write(path: Path, data: bytes, mode: int) -> None:
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    partial.replace(path)


class EyamlPushes:
    """The push gate's eyaml rule, and the commit that seals pushed eyaml values."""

    def __init__(self, repos: Repositories, secrets: Secrets) -> None:
        self._repos = repos
        self._secrets = secrets
        self.place = EyamlKeyPlace(repos.root)

    def problems(self, snapshot: Snapshot) -> list[dict]:
        """A problem (file, line, key) for each eyaml value of `snapshot` that does not
        decrypt with the kept key pair (every one, when no pair is kept)."""
        found: list[dict] = []
        files = _eyaml_files(snapshot)
        if not files:
            return found
        keys = self.place.keys()
        for file in files:
            raw = snapshot.read(file) or b""
            lines = yamlio.key_lines(raw)
            for path, value in _eyaml_leaves(snapshot.read_mapping(file) or {}, ()):
                why = _why_not(value, keys)
                if why:
                    line = next(
                        (lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines),
                        None,
                    )
                    found.append(
                        {"file": file, "line": line, "key": ".".join(path), "message": why}
                    )
        return found

    def seal(self, env_id: int) -> str | None:
        """Replace every eyaml value of environment `env_id`'s main by a sealed secret, in one
        commit (its id; None when main holds none)."""
        keys = self.place.keys()
        if keys is None or keys.private_key is None:
            return None
        repo = self._repos.environment_repo(env_id)

        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            plain: dict[str, dict] = {}
            paths: set[str] = set()
            files = _eyaml_files(snapshot)
            if not files:
                raise _NothingToSeal
            for file in files:
                document = snapshot.read_mapping(file) or {}
                plain[file] = _opened(document, (), keys, paths)
            doc = dict(view.doc)
            doc["secret_keys"] = sorted({*(doc.get("secret_keys") or []), *paths})
            sealer = self._secrets.new_environment_sealer(env_id, doc)
            changes = ChangeSet(f"seal {len(paths)} pushed eyaml values as gitstore secrets")
            name = f"environment {env_id}"
            if paths:
                changes.put(
                    ENVIRONMENT_FILE,
                    documents.encode(
                        name,
                        ENVIRONMENT_FILE,
                        doc,
                        snapshot.read(ENVIRONMENT_FILE),
                        caches=snapshot.caches,
                    ),
                )
            for file, document in plain.items():
                changes.put(
                    file,
                    documents.encode(
                        name,
                        file,
                        document,
                        snapshot.read(file),
                        sealer=sealer,
                        caches=snapshot.caches,
                    ),
                )
            return changes

        try:  # looked for under the write lock: a re-aimed HTTP push lands main holding it
            return repo.update(operation, SEALER).commit
        except _NothingToSeal:
            return None


class _NothingToSeal(Exception):
    """Main holds no eyaml value: no commit."""


def _eyaml_files(snapshot: Snapshot) -> list[str]:
    """The YAML files of `snapshot` whose bytes hold an eyaml value (a byte search first)."""
    return [
        path
        for path in snapshot.walk("")
        if path.endswith(".yaml")
        and path != ENVIRONMENT_FILE
        and _MARK in (snapshot.read(path) or b"")
    ]


def _eyaml_leaves(value: Any, path: tuple[str, ...]):
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _eyaml_leaves(child, (*path, str(key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _eyaml_leaves(child, (*path, str(index)))
    elif eyaml.is_encrypted(value):
        yield path, value


def _why_not(value: str, keys: eyaml.EyamlKeys | None) -> str | None:
    if keys is None:
        return (
            "an eyaml value, and this store keeps no eyaml key pair (import one with "
            "`gitstore import hiera --eyaml-private-key`; docs/secrets.md)"
        )
    try:
        eyaml.decrypt(value, keys)
    except ValueError as exc:
        return f"an eyaml value the store's key pair cannot decrypt: {exc}"
    return None


def _opened(value: Any, path: tuple[str, ...], keys: eyaml.EyamlKeys, paths: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _opened(v, (*path, str(k)), keys, paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_opened(v, (*path, str(i)), keys, paths) for i, v in enumerate(value)]
    if not eyaml.is_encrypted(value):
        return value
    try:
        plain = eyaml.decrypt(value, keys)
    except ValueError as exc:  # the gate let it in with another pair: leave it, say so
        raise InvalidInput(f"{'.'.join(path)}: {exc}", key=".".join(path)) from exc
    paths.add(".".join("*" if "." in s or "*" in s else s for s in path))
    return plain
