"""Sealing and opening files of a local clone, for GitOps users who hold a copy of the keyring.

A file's place is its path relative to the clone's root; the repository is `environments/<id>`
of `--env ID`. The rules are those of the clone's `environment.yaml` and the store's defaults,
plus the definitions' `secret_keys` when a clone of the catalog is given. Sealing compares with
the file as committed at `HEAD`, so values that did not change keep their ciphertext and the
commit shows only what changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitstore import yamlio
from gitstore.errors import GitstoreError, InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_FILE
from gitstore.repositories import open_repository
from gitstore.secrets.keyring import Keyring
from gitstore.secrets.mask import Opener
from gitstore.secrets.rules import Rules, rules_for_file
from gitstore.secrets.seal import Sealer
from gitstore.secrets.service import repository_of


class CloneFile:
    """One YAML file of a clone of environment `env_id`."""

    def __init__(
        self, file: str | os.PathLike, env_id: int, catalog: str | os.PathLike | None = None
    ) -> None:
        self.file = Path(file).resolve()
        if not self.file.is_file():
            raise NotFound(f"{file} is not a file")
        self.root = _clone_root(self.file)
        self.path = self.file.relative_to(self.root).as_posix()
        self.env_id = int(env_id)
        self.rules_of = _rules_of(self.root, Path(catalog) if catalog else None)

    @property
    def repository(self) -> str:
        return repository_of(self.env_id)

    @property
    def rules(self) -> Rules:
        return self.rules_of(self.path)

    def read(self) -> tuple[bytes, dict]:
        raw = self.file.read_bytes()
        return raw, yamlio.load_mapping(raw, path=self.path)

    def committed(self) -> dict | None:
        """The file as committed at the clone's HEAD (None when it is new or unreadable)."""

        try:
            document = open_repository(self.root).snapshot("HEAD").read_yaml(self.path)
        except GitstoreError:
            return None
        return document if isinstance(document, dict) else None

    def sealed(
        self, keyring: str | os.PathLike, document: dict | None = None, stored: dict | None = None
    ) -> bytes:
        """The file's bytes made to hold `document` (default: its own), secret leaves sealed.

        Comments and order of the file are kept. `stored` (default: the file at HEAD) is what
        unchanged values keep their ciphertext from.
        """
        raw, own = self.read()
        sealer = Sealer(self.repository, Keyring(keyring).require(), self.rules_of)
        stored = stored if stored is not None else self.committed()
        return yamlio.rewrite(
            raw, sealer.seal(self.path, own if document is None else document, stored)
        )

    def opened(self, keyring: str | os.PathLike) -> bytes:
        """The file's bytes with its sealed values in plain text: for reading and editing."""
        raw, document = self.read()
        opener = Opener(self.repository, Keyring(keyring).require())
        plain, _ = opener.reveal(document, self.rules, self.path)
        return yamlio.rewrite(raw, plain)

    def with_document(self, document: dict) -> bytes:
        """The file's bytes made to hold `document` (comments and order kept)."""
        raw, _ = self.read()
        return yamlio.rewrite(raw, document)


def _clone_root(file: Path) -> Path:
    for folder in file.parents:
        if (folder / ".git").exists():
            return folder
    raise InvalidInput(
        f"{file} is not inside a git clone (no .git above it); run this in a "
        "clone of the environment's repository",
        path=str(file),
    )


def _rules_of(root: Path, catalog: Path | None) -> Callable[[str], Rules]:
    environment = _load(root / ENVIRONMENT_FILE) or {}
    definitions = _definitions(catalog) if catalog else None
    return lambda file: rules_for_file(file, definitions, environment)


def _definitions(catalog: Path) -> dict[str, dict]:
    """Resource definitions of a clone of the catalog (components/*.yaml and the orphans)."""
    if not catalog.is_dir():
        raise NotFound(f"catalog clone {catalog} is not a folder")
    found: dict[str, dict] = {}
    files = sorted((catalog / "components").glob("*.yaml")) + [
        catalog / "resource_definitions.yaml"
    ]
    for path in files:
        doc = _load(path) or {}
        for definition in doc.get("resource_definitions") or []:
            if isinstance(definition, dict) and isinstance(definition.get("name"), str):
                found[definition["name"]] = definition
    return found


def _load(path: Path) -> Any:
    if not path.is_file():
        return None
    doc = yamlio.load(path.read_bytes(), path=str(path))
    return doc if isinstance(doc, dict) else None
