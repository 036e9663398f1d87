"""Build repositories from a folder of files: how `gitstore init --sample` loads `sample_repo/`.

The folder mirrors a store (docs/design.md, "The store on disk"): `catalog/**` holds files of
`catalog.git` and `environments/<id>/**` the files of `environments/<id>.git`. The catalog's new
files are added in one commit; each environment becomes a new repository holding one commit.

Loading never replaces data: a catalog file that already exists and an environment that already
exists are kept as they are, so loading the same folder twice changes nothing, and a load that was
interrupted can simply be run again. Every file is read and checked before anything is written,
so a broken file names itself and nothing is loaded. YAML documents go through
`documents.encode`, the one door of every write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitstore import documents, yamlio
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.catalog.view import CatalogView
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_FILE
from gitstore.names import RESERVED_TOP_LEVEL, check_level_name, check_level_value, is_number

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

#: The sample deployment shipped with the project (found here when installed editable).
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_repo"
YAML_SUFFIXES = (".yaml", ".yml")
COMPONENTS = "components/"


@dataclass
class Tree:
    """The files of one repository-to-be: stored bytes by path, and the parsed YAML documents."""

    label: str
    data: dict[str, bytes] = field(default_factory=dict)
    docs: dict[str, dict] = field(default_factory=dict)


@dataclass
class LoadReport:
    """What a load did: catalog files added or kept, environments created or kept."""

    catalog_added: list[str] = field(default_factory=list)
    catalog_kept: list[str] = field(default_factory=list)
    environments_created: list[int] = field(default_factory=list)
    environments_kept: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.catalog_added or self.environments_created)


class Importer:
    """Builds a store's repositories from a folder tree (`gitstore init --sample`)."""

    def __init__(self, repos: Repositories, secrets: Secrets) -> None:
        self._repos = repos
        self._secrets = secrets

    def load_tree(self, source: str | Path, author: Author | None = None) -> LoadReport:
        """Load `source/catalog/**` and `source/environments/<id>/**` (see `load_tree`)."""
        return load_tree(self._repos, self._secrets, source, author)


def load_tree(
    repos: Repositories, secrets: Secrets, source: str | Path, author: Author | None = None
) -> LoadReport:
    """Load `source/catalog/**` and `source/environments/<id>/**` into the store.

    Raises:
        NotFound: `source` is not a folder, or an environment names a component no catalog has.
        InvalidInput: a file does not parse or is not a mapping, an environment folder is not an
            integer id, or an environment's files do not fit its `environment.yaml`.
        Conflict: a new catalog component reuses the id or a name of an existing one.
    """
    source = Path(source)
    if not source.is_dir():
        raise NotFound(f"{source} is not a folder")
    catalog = read_tree(source / "catalog", "catalog")
    environments = _read_environments(source / "environments")
    if not catalog.data and not environments:
        raise InvalidInput(f"{source} holds neither catalog/ nor environments/<id>/ files")
    known = _component_names(repos) | _component_names_in(catalog)
    for env_id, tree in environments.items():
        _check_environment(env_id, tree, known)
    author = author or repos.default_author
    report = LoadReport()
    if catalog.data:
        _load_catalog(repos, catalog, source.name, author, report)
    for env_id, tree in environments.items():
        _load_environment(repos, secrets, env_id, tree, source.name, author, report)
    return report


# -- reading the folder ------------------------------------------------------------------------
def read_tree(folder: Path, label: str) -> Tree:
    """Every file below `folder` (hidden ones skipped), YAML parsed, checked and encoded."""
    tree = Tree(label)
    if not folder.is_dir():
        return tree
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = file.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        path = relative.as_posix()
        raw = file.read_bytes()
        if file.suffix in YAML_SUFFIXES:
            doc = yamlio.load_mapping(raw, path=f"{label}/{path}")
            tree.docs[path] = doc
            raw = documents.encode(label, path, doc, raw)
        tree.data[path] = raw
    return tree


def _read_environments(folder: Path) -> dict[int, Tree]:
    trees: dict[int, Tree] = {}
    if not folder.is_dir():
        return trees
    for child in sorted(folder.iterdir()):
        if child.name.startswith("."):
            continue
        if not child.is_dir() or not is_number(child.name) or int(child.name) < 1:
            raise InvalidInput(
                f"environments/{child.name}: expected a folder named by an "
                "environment id (a positive integer)",
                path=str(child),
            )
        trees[int(child.name)] = read_tree(child, f"environments/{child.name}")
    return dict(sorted(trees.items()))


# -- checks before writing ---------------------------------------------------------------------
def _component_names(repos: Repositories) -> set[Any]:  # (names as stored)
    return {c.get("name") for c in CatalogView(repos.catalog().snapshot()).components}


def _component_names_in(tree: Tree) -> set[Any]:
    return {doc.get("name") for path, doc in tree.docs.items() if path.startswith(COMPONENTS)}


def _check_environment(env_id: int, tree: Tree, components: set[Any]) -> None:
    """The environment's description fits its folder, the catalog and its own files."""
    where = f"{tree.label}/{ENVIRONMENT_FILE}"
    doc = tree.docs.get(ENVIRONMENT_FILE)
    if doc is None:
        raise InvalidInput(f"{tree.label} has no {ENVIRONMENT_FILE}", path=where)
    if doc.get("id") != env_id:
        raise InvalidInput(
            f"{where}: id {doc.get('id')!r} does not match the folder name {env_id}",
            path=where,
            key="id",
        )
    missing = [name for name in doc.get("components") or [] if name not in components]
    if missing:
        raise NotFound(
            f"{where}: component {missing[0]!r} is in no catalog", path=where, key="components"
        )
    hierarchy = [check_level_name(level) for level in doc.get("hierarchy") or []]
    for path in tree.data:
        top, _, rest = path.partition("/")
        if top in RESERVED_TOP_LEVEL:
            continue
        if top not in hierarchy:
            raise InvalidInput(
                f"{tree.label}/{top}: neither a reserved name nor a level of the "
                f"hierarchy {hierarchy}",
                path=f"{tree.label}/{top}",
            )
        check_level_value(rest.partition("/")[0], top)


def _check_new_component(view: CatalogView, path: str, doc: dict) -> None:
    """A component file being added must not reuse an id or a name the catalog already has."""
    if doc.get("name") != Path(path).stem:
        raise InvalidInput(
            f"catalog/{path}: name {doc.get('name')!r} does not match the file name",
            path=path,
            key="name",
        )
    if any(c.get("id") == doc.get("id") for c in view.components):
        raise Conflict(
            f"catalog/{path}: component id {doc.get('id')!r} is already used", path=path, key="id"
        )
    taken = {(d["id"], d["name"]) for d in view.definitions()}
    ids, names = {i for i, _ in taken}, {n for _, n in taken}
    for definition in doc.get("resource_definitions") or []:
        if definition.get("id") in ids or definition.get("name") in names:
            raise Conflict(
                f"catalog/{path}: resource definition {definition.get('name')!r} "
                f"(id {definition.get('id')!r}) clashes with an existing one",
                path=path,
                key="resource_definitions",
            )


# -- writing -----------------------------------------------------------------------------------
def _load_catalog(
    repos: Repositories, tree: Tree, source: str, author: Author, report: LoadReport
) -> None:
    outcome: dict[str, list[str]] = {}

    def operation(snapshot: Snapshot) -> ChangeSet:
        added = [path for path in tree.data if not snapshot.exists(path)]
        view = CatalogView(snapshot)
        for path in added:
            if path.startswith(COMPONENTS):
                _check_new_component(view, path, tree.docs.get(path, {}))
        changes = ChangeSet(f"catalog: load {_count(added)} from {source}{_listing(added)}")
        for path in added:
            changes.put(path, tree.data[path])
        outcome["added"] = added
        return changes

    repos.catalog().update(operation, author)
    report.catalog_added = outcome["added"]
    report.catalog_kept = [path for path in tree.data if path not in outcome["added"]]


def _load_environment(
    repos: Repositories,
    secrets: Secrets,
    env_id: int,
    tree: Tree,
    source: str,
    author: Author,
    report: LoadReport,
) -> None:
    if repos.environment_path(env_id).exists():
        report.environments_kept.append(env_id)
        return
    first = ChangeSet(f"environment {env_id}: load {_count(tree.data)} from {source}")
    sealer = secrets.new_environment_sealer(env_id, tree.docs.get(ENVIRONMENT_FILE, {}))
    for path, data in tree.data.items():
        if path in tree.docs:  # secret leaves are sealed before they reach git
            doc = tree.docs[path]
            data = documents.encode(tree.label, path, doc, data, sealer=sealer, caches=repos.caches)
        first.put(path, data)
    try:
        repos.create_environment_repo(env_id, first, author)
    except Conflict:  # created by someone else since the check above: theirs is kept
        report.environments_kept.append(env_id)
        return
    report.environments_created.append(env_id)


def _count(paths) -> str:
    return f"{len(paths)} file" + ("" if len(paths) == 1 else "s")


def _listing(paths: list[str], limit: int = 5) -> str:
    if not paths:
        return ""
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ": " + ", ".join(paths[:limit]) + more
