"""The facade: the one object every front end (REST, CLI, hooks) calls.

A Store is a root folder holding `catalog.git` and `environments/<id>.git` (DESIGN.md §3). It
owns the repository handles and exposes one service per entity family; the services hold the
domain rules and reach git only through `gitstore.backend`.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gitstore.backend.changes import ChangeSet
from gitstore.backend.hooks import install_hooks
from gitstore.backend.repository import Author, Operation, Repository
from gitstore.catalog.components import Components, ResourceDefinitions
from gitstore.catalog.releases import Plugins, Releases
from gitstore.configdb.environments import MAX_ENVIRONMENT_ID, Environments
from gitstore.configdb.hiera import Hiera
from gitstore.configdb.values import Config
from gitstore.deployment.graphs import Graphs
from gitstore.deployment.inventory import Nodes
from gitstore.deployment.tags import Tags
from gitstore.deployment.transactions import Transactions
from gitstore.errors import Conflict, NotFound
from gitstore.gitops.service import GitOps
from gitstore.names import is_number
from gitstore.plans import Plans
from gitstore.secrets.service import Secrets
from gitstore.upgrade.moves import Moves
from gitstore.upgrade.networks import Networks
from gitstore.upgrade.seeds import Upgrades
from gitstore.upgrade.settings import Settings
from gitstore.versions.service import Versions

DEFAULT_AUTHOR = Author("gitstore", "gitstore@localhost")
CATALOG = "catalog.git"
ENVIRONMENTS = "environments"
ARCHIVE = "archive"


class Store:
    """A gitstore root and its services."""

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        author: Author = DEFAULT_AUTHOR,
        local_executor: bool = False,
    ) -> None:
        self.root = Path(root)
        self.default_author = author
        #: Whether graph execution may use the `local` executor, which runs shell commands as
        #: this process's user: on for an operator at a shell (`--root`), off for a server
        #: unless `gitstore serve --enable-local-executor` says otherwise.
        self.local_executor = local_executor
        self._repos: dict[Path, Repository] = {}
        # Every request finds its repositories here: plain strings and ids, because pathlib
        # joins cost more than the rest of a warm lookup's own work (docs/performance.md).
        self._catalog_dir = os.path.join(self.root, CATALOG)
        self._by_id: dict[int, tuple[Repository, str]] = {}
        self._lock = threading.Lock()
        self.components = Components(self)
        self.definitions = ResourceDefinitions(self)
        self.environments = Environments(self)
        self.config = Config(self)
        self.gitops = GitOps(self)
        self.versions = Versions(self)
        self.hiera = Hiera(self)
        self.releases = Releases(self)
        self.plugins = Plugins(self)
        self.nodes = Nodes(self)
        self.tags = Tags(self)
        self.secrets = Secrets(self)
        self.plans = Plans(self)
        self.graphs = Graphs(self)
        self.transactions = Transactions(self)
        self.settings = Settings(self)
        self.networks = Networks(self)
        self.moves = Moves(self)
        self.upgrades = Upgrades(self)

    # -- creation --------------------------------------------------------------------------
    @classmethod
    def init(cls, root: str | os.PathLike, *, author: Author = DEFAULT_AUTHOR) -> Store:
        """Create an empty store at `root` (an existing store is left as it is)."""
        root = Path(root)
        (root / ENVIRONMENTS).mkdir(parents=True, exist_ok=True)
        if not (root / CATALOG).exists():
            first = ChangeSet("catalog: initialise the store")
            _create_atomically(
                root / CATALOG,
                "catalog",
                lambda tmp: Repository.create(tmp, "catalog", first, author),
            )
        store = cls(root, author=author)
        store.secrets.keyring.create()  # the keys that seal secrets live beside the repositories
        store.install_hooks()
        return store

    def install_hooks(self) -> None:
        """(Re)write the git hooks (the push gate) of every repository of the store."""
        for path in [self.root / CATALOG, *map(self.environment_path, self.environment_ids())]:
            install_hooks(path)

    def check(self) -> None:
        """Raise NotFound unless `root` holds a store."""
        if not os.path.isdir(self._catalog_dir):
            raise NotFound(f"{self.root} is not a gitstore root (no {CATALOG}); run gitstore init")

    # -- repositories ----------------------------------------------------------------------
    def _repository(self, path: Path, name: str) -> Repository:
        with self._lock:
            repo = self._repos.get(path)
            if repo is None:
                served_as = os.path.relpath(path, self.root).replace(os.sep, "/")
                guard = functools.partial(self.gitops.check_writable, served_as)
                repo = self._repos[path] = Repository(path, name, write_guard=guard)
            return repo

    def catalog(self) -> Repository:
        self.check()
        return self._repository(self.root / CATALOG, "catalog")

    def environment_path(self, env_id: int) -> Path:
        """`environments/<id>.git`; an id no environment can have is NotFound, never an OSError."""
        if not 0 <= int(env_id) <= MAX_ENVIRONMENT_ID:
            raise NotFound(f"environment {env_id} does not exist")
        return self.root / ENVIRONMENTS / f"{int(env_id)}.git"

    def environment_repo(self, env_id: int) -> Repository:
        known = self._by_id.get(env_id)
        if known is not None and os.path.exists(known[1]):
            return known[0]
        path = self.environment_path(env_id)
        if not (path / "HEAD").exists():
            raise NotFound(f"environment {env_id} does not exist")
        repo = self._repository(path, f"environment {env_id}")
        self._by_id[env_id] = (repo, os.path.join(path, "HEAD"))
        return repo

    def environment_ids(self) -> list[int]:
        folder = self.root / ENVIRONMENTS
        if not folder.is_dir():
            return []
        ids = []
        for child in folder.iterdir():
            stem = child.name.removesuffix(".git")
            if child.name.endswith(".git") and is_number(stem) and (child / "HEAD").exists():
                ids.append(int(stem))
        return sorted(ids)

    def create_environment_repo(self, env_id: int, first: ChangeSet, author: Author) -> None:
        """Create `environments/<id>.git` with its first commit; Conflict if the id is taken."""
        path = self.environment_path(env_id)
        if path.exists():
            raise Conflict(f"environment {env_id} already exists")
        name = f"environment {env_id}"
        _create_atomically(path, name, lambda tmp: Repository.create(tmp, name, first, author))

    def clone_environment_repo(
        self, source_id: int, env_id: int, operation: Operation, author: Author
    ) -> None:
        """Create `environments/<id>.git` holding `source_id`'s history plus one commit made by
        `operation` on it (an upgrade seed); Conflict if the id is taken."""
        source = self.environment_repo(source_id)
        path = self.environment_path(env_id)
        if path.exists():
            raise Conflict(f"environment {env_id} already exists")
        name = f"environment {env_id}"
        _create_atomically(
            path, name, lambda tmp: Repository.create_clone(tmp, name, source, operation, author)
        )

    def archive_environment(self, env_id: int) -> Path:
        """Move an environment's repository aside (never destroyed); its id then answers 404."""
        source = self.environment_path(env_id)
        if not (source / "HEAD").exists():
            raise NotFound(f"environment {env_id} does not exist")
        target_dir = self.root / ARCHIVE / ENVIRONMENTS
        target_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = target_dir / f"{env_id}-{stamp}-{os.getpid()}-{time.monotonic_ns()}.git"
        try:
            os.rename(source, target)
        except FileNotFoundError as exc:
            raise NotFound(f"environment {env_id} does not exist") from exc
        with self._lock:
            self._repos.pop(source, None)
            self._by_id.pop(env_id, None)
        return target


def _create_atomically(path: Path, name: str, build: Callable[[Path], Repository]) -> None:
    """Build the repository in a temporary folder, then rename it into place in one step.

    A concurrent creator of the same path loses the rename and gets Conflict; a crash leaves
    only a temporary folder, never a half-made repository at `path`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".creating-", dir=path.parent))
    try:
        build(tmp / "repo.git")
        install_hooks(tmp / "repo.git")
        try:
            os.rename(tmp / "repo.git", path)
        except OSError as exc:
            raise Conflict(f"{name} already exists") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
