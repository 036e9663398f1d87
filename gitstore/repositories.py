"""The repositories of one store root: `catalog.git` and `environments/<id>.git`
(docs/design.md, "The store on disk").

Every service reaches git through this object: it hands out one `Repository` per folder (their
caches live as long as the store), lists, creates, clones and archives environment
repositories. It knows nothing of the domain; the write guard it is given (the gitops mirror
check) decides which repositories refuse writes through the facade, and the replication it is
given (a cluster member's, `gitstore.cluster`; None on a single node) sees every commit,
creation and archiving before it is done or acknowledged.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol

from gitstore.backend import commits
from gitstore.backend.cache import Caches
from gitstore.backend.changes import ChangeSet
from gitstore.backend.hooks import install_hooks
from gitstore.backend.repository import Author, Operation, Repository
from gitstore.errors import Conflict, GitstoreError, NotFound
from gitstore.layout import CATALOG, ENVIRONMENTS, MAX_ENVIRONMENT_ID
from gitstore.layout import environment_repository as repository_name
from gitstore.names import is_number

DEFAULT_AUTHOR = Author("gitstore", "gitstore@localhost")
ARCHIVE = "archive"

#: Refuses (raises) a write through the facade to the repository served as `name`.
WriteGuard = Callable[[str], None]


class Replication(commits.Replication, Protocol):
    """What a cluster member must do around the changes of its repositories (docs/ha.md):
    before main moves and after a label is made (`gitstore.backend.commits.Replication`, which
    each repository's commit queue is handed), and around creating and archiving one.

    `name` is the repository as served (`catalog.git`, `environments/<id>.git`). Each method
    raises to refuse: nothing is then acknowledged.
    """

    def created(self, name: str, repo: Repository) -> None:
        """After a repository was made (it is undone if this raises)."""

    def archiving(self, name: str, repo: Repository) -> None:
        """Before a repository is moved to the archive."""


def unknown_environment(env_id: int) -> NotFound:
    """The NotFound of an environment id no repository holds, with the step that makes one
    (or, for an id no environment can have, the list of those there are)."""
    if not 1 <= int(env_id) <= MAX_ENVIRONMENT_ID:
        return NotFound(
            f"environment {env_id} does not exist (ids go from 1 to {MAX_ENVIRONMENT_ID}); "
            "list them with `gitstore env list` (GET /api/v1/config/environments)"
        )
    return NotFound(
        f"environment {env_id} does not exist; create it with `gitstore env create --id "
        f"{env_id} --levels nodes` (POST /api/v1/config/environments)"
    )


class Repositories:
    """The repository handles of a store root."""

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        author: Author = DEFAULT_AUTHOR,
        write_guard: WriteGuard | None = None,
        replication: Replication | None = None,
        store_guard: Callable[[], None] | None = None,
        caches: Caches | None = None,
    ) -> None:
        """`caches`: the store's read caches, handed to each repository (and its snapshots)."""
        self.root = Path(root)
        self.caches = caches if caches is not None else Caches()
        self.default_author = author
        self._write_guard = write_guard
        # Raises to refuse creating or archiving a repository (a store of an older format).
        self._store_guard = store_guard or (lambda: None)
        self.replication = replication
        self._repos: dict[Path, Repository] = {}
        # Every request finds its repositories here: plain strings and ids, because pathlib
        # joins cost more than the rest of a warm lookup's own work (docs/performance.md).
        self._catalog_dir = os.path.join(self.root, CATALOG)
        self._by_id: dict[int, tuple[Repository, str]] = {}
        self._catalog: Repository | None = None
        self._lock = threading.Lock()

    # -- reading ---------------------------------------------------------------------------
    def check(self) -> None:
        """Raise NotFound unless `root` holds a store."""
        if not os.path.isdir(self._catalog_dir):
            raise NotFound(f"{self.root} is not a gitstore root (no {CATALOG}); run gitstore init")

    def catalog(self) -> Repository:
        self.check()
        if self._catalog is None:  # a path join per request was a visible share of a warm lookup
            self._catalog = self._repository(self.root / CATALOG, "catalog")
        return self._catalog

    def environment_path(self, env_id: int) -> Path:
        """`environments/<id>.git`; an id no environment can have is NotFound, never an OSError."""
        if not 0 <= int(env_id) <= MAX_ENVIRONMENT_ID:
            raise unknown_environment(env_id)
        return self.root / ENVIRONMENTS / f"{int(env_id)}.git"

    def environment_repo(self, env_id: int) -> Repository:
        known = self._by_id.get(env_id)
        if known is not None and os.path.exists(known[1]):
            return known[0]
        path = self.environment_path(env_id)
        if not (path / "HEAD").exists():
            raise unknown_environment(env_id)
        repo = self._repository(path, f"environment {env_id}")
        self._by_id[env_id] = (repo, os.path.join(path, "HEAD"))
        return repo

    def remembered_heads(self, env_id: int) -> tuple[str | None, str | None]:
        """The heads of environment `env_id` and of the catalog, from the repositories found
        before, without `environment_repo`'s check that the environment still exists (a stat
        per call): one deleted since reads no head (None). A ref is still read per call."""
        known = self._by_id.get(env_id)
        environment = known[0] if known is not None else self.environment_repo(env_id)
        catalog = self._catalog if self._catalog is not None else self.catalog()
        return environment.head(), catalog.head()

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

    def accepts_writes(self, env_id: int) -> bool:
        """Whether the facade may commit to environment `env_id` (a mirror may not)."""
        if self._write_guard is None:
            return True
        try:
            self._write_guard(repository_name(env_id))
        except GitstoreError:
            return False
        return True

    def _repository(self, path: Path, name: str) -> Repository:
        with self._lock:
            repo = self._repos.get(path)
            if repo is None:
                served_as = self.served_as(path)
                guard = None
                if self._write_guard is not None:
                    guard = partial(self._write_guard, served_as)
                repo = self._repos[path] = Repository(
                    path,
                    name,
                    guard,
                    replication=self.replication,
                    served_as=served_as,
                    caches=self.caches,
                )
            return repo

    def served_as(self, path: Path) -> str:
        """`catalog.git` or `environments/<id>.git`: a repository's name below the root."""
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    # -- creating and archiving ------------------------------------------------------------
    def install_hooks(self) -> None:
        """(Re)write the git hooks (the push gate) of every repository of the store."""
        for path in [self.root / CATALOG, *map(self.environment_path, self.environment_ids())]:
            install_hooks(path)

    def create_catalog(self, first: ChangeSet, author: Author) -> None:
        """Create the root's folders and `catalog.git` with its first commit, unless they exist."""
        (self.root / ENVIRONMENTS).mkdir(parents=True, exist_ok=True)
        path = self.root / CATALOG
        if not path.exists():
            _create_atomically(
                path, "catalog", lambda tmp: Repository.create(tmp, "catalog", first, author)
            )

    def create_environment_repo(self, env_id: int, first: ChangeSet, author: Author) -> None:
        """Create `environments/<id>.git` with its first commit; Conflict if the id is taken."""
        self._store_guard()
        path = self.environment_path(env_id)
        if path.exists():
            raise Conflict(f"environment {env_id} already exists")
        name = f"environment {env_id}"
        _create_atomically(path, name, lambda tmp: Repository.create(tmp, name, first, author))
        self._replicate_creation(env_id)

    def clone_environment_repo(
        self, source_id: int, env_id: int, operation: Operation, author: Author
    ) -> None:
        """Create `environments/<id>.git` holding `source_id`'s history plus one commit made by
        `operation` on it (an upgrade seed); Conflict if the id is taken."""
        self._store_guard()
        source = self.environment_repo(source_id)
        path = self.environment_path(env_id)
        if path.exists():
            raise Conflict(f"environment {env_id} already exists")
        name = f"environment {env_id}"
        _create_atomically(
            path, name, lambda tmp: Repository.create_clone(tmp, name, source, operation, author)
        )
        self._replicate_creation(env_id)

    def _replicate_creation(self, env_id: int) -> None:
        """A cluster member's new repository counts once replicated; else it is undone."""
        if self.replication is None:
            return
        path = self.environment_path(env_id)
        try:
            self.replication.created(self.served_as(path), self.environment_repo(env_id))
        except BaseException:
            self._move_to_archive(env_id, path)
            raise

    def archive_environment(self, env_id: int) -> Path:
        """Move an environment's repository aside (never destroyed); its id then answers 404."""
        source = self.environment_path(env_id)
        if not (source / "HEAD").exists():
            raise unknown_environment(env_id)
        self._store_guard()
        if self.replication is not None:
            self.replication.archiving(self.served_as(source), self.environment_repo(env_id))
        return self._move_to_archive(env_id, source)

    def _move_to_archive(self, env_id: int, source: Path) -> Path:
        target_dir = self.root / ARCHIVE / ENVIRONMENTS
        target_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = target_dir / f"{env_id}-{stamp}-{os.getpid()}-{time.monotonic_ns()}.git"
        try:
            os.rename(source, target)
        except FileNotFoundError as exc:
            raise unknown_environment(env_id) from exc
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


def open_repository(path: str | os.PathLike) -> Repository:
    """A repository by path, inside a store or not: a bare repository or any clone (CI checks
    out one)."""
    path = Path(path)
    if not (path / "HEAD").exists() and not (path / ".git").exists():
        raise NotFound(f"{path} is not a git repository")
    return Repository(path, path.name)
