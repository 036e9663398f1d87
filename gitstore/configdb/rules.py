"""The push gate's rules for an environment repository's own layout (docs/store-format.md):
`environment.yaml`, the top-level folders, the level folders and the resource documents in
them (each within the limits of a REST write and satisfying its definition's schema, secret
leaves aside), and every mapping folder's files being mappings.

Each rule is a function of one `TreeCheck` (`gitstore.validation`); `gitstore.gitops.rules`
lists them with every other package's rules.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from gitstore import limits
from gitstore.errors import InvalidInput, ValidationFailed
from gitstore.layout import ENVIRONMENT_FILE, GLOBAL, KINDS
from gitstore.merge import strategies
from gitstore.merge.effective import MODES
from gitstore.names import (
    RESERVED_TOP_LEVEL,
    check_level_name,
    check_level_value,
    check_resource_name,
)
from gitstore.secrets.gate import marked_leaves_of
from gitstore.secrets.rules import rules_for_file
from gitstore.validation import YAML_SUFFIXES, TreeCheck, resource_document_problems

#: Folders of an environment whose `.yaml` files must each be a mapping.
MAPPING_FOLDERS = ("inventory", "settings", "network", "transactions")


def environment_file(tree: TreeCheck) -> None:
    doc = tree.mapping(ENVIRONMENT_FILE)
    if doc is None:
        if not tree.snapshot.exists(ENVIRONMENT_FILE):
            tree.report(ENVIRONMENT_FILE, "missing: every environment repository needs one")
        return
    _check_env_id(tree, doc.get("id"))
    name = doc.get("name")
    if name is not None and not isinstance(name, str):
        tree.report(ENVIRONMENT_FILE, "must be a string", key="name")
    merge = doc.get("merge", MODES[0])
    if merge not in MODES:
        tree.report(ENVIRONMENT_FILE, f"{merge!r} is not one of {', '.join(MODES)}", key="merge")
    try:
        strategies.parse(doc.get("lookup_options"), MODES[0])
    except InvalidInput as exc:
        tree.report(ENVIRONMENT_FILE, exc.message, key="lookup_options")
    _check_hierarchy(tree, doc.get("hierarchy"))
    _check_env_components(tree, doc.get("components"))


def _check_env_id(tree: TreeCheck, env_id: Any) -> None:
    if isinstance(env_id, bool) or not isinstance(env_id, int) or env_id < 1:
        tree.report(ENVIRONMENT_FILE, f"must be a positive integer, not {env_id!r}", key="id")
    elif tree.env_id is not None and env_id != tree.env_id:
        tree.report(
            ENVIRONMENT_FILE,
            f"is {env_id} but this is the repository of environment {tree.env_id}",
            key="id",
        )


def _check_hierarchy(tree: TreeCheck, levels: Any) -> None:
    if levels is None:
        return
    if not isinstance(levels, list):
        tree.report(ENVIRONMENT_FILE, "must be a list of level names", key="hierarchy")
        return
    for level in levels:
        try:
            check_level_name(level)
        except InvalidInput as exc:
            tree.report(ENVIRONMENT_FILE, exc.message, key="hierarchy")
    for level in sorted({lvl for lvl in levels if isinstance(lvl, str) and levels.count(lvl) > 1}):
        tree.report(ENVIRONMENT_FILE, f"level {level!r} is repeated", key="hierarchy")


def _check_env_components(tree: TreeCheck, components: Any) -> None:
    if components is None:
        return
    if not isinstance(components, list) or not all(isinstance(c, str) for c in components):
        tree.report(ENVIRONMENT_FILE, "must be a list of component names", key="components")
        return
    known = {c.get("name") for c in tree.catalog.components} if tree.catalog else None
    for name in components:
        if known is not None and name not in known:
            tree.report(
                ENVIRONMENT_FILE,
                f"component {name!r} does not exist in the catalog",
                key="components",
            )


def _hierarchy(tree: TreeCheck) -> list[str]:
    """The declared levels usable for the layout checks (valid names only)."""
    doc = tree.document(ENVIRONMENT_FILE)
    levels = doc.get("hierarchy") if isinstance(doc, dict) else None
    if not isinstance(levels, list):
        return []
    return [lvl for lvl in levels if isinstance(lvl, str) and lvl not in RESERVED_TOP_LEVEL]


def top_level(tree: TreeCheck) -> None:
    levels = _hierarchy(tree)
    for entry in tree.snapshot.list(""):
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_tree and name not in RESERVED_TOP_LEVEL and name not in levels:
            tree.report(
                tree.first_file(name),
                f"top-level folder {name!r} is neither a level declared in "
                f"{ENVIRONMENT_FILE} (hierarchy: {levels}) nor a reserved name",
            )
        elif not entry.is_tree and name != ENVIRONMENT_FILE:
            if name in RESERVED_TOP_LEVEL or name in levels:
                tree.report(name, f"{name!r} must be a folder")
            elif name.endswith(YAML_SUFFIXES):
                tree.report(
                    name,
                    "a YAML file at the top level is not part of the layout "
                    f"(only {ENVIRONMENT_FILE}); data lives in global/ or a level",
                )


def layers(tree: TreeCheck) -> None:
    _check_scope(tree, GLOBAL)
    for level in _hierarchy(tree):
        for name, is_folder in tree.children(level):
            where = f"{level}/{name}"
            if not is_folder:
                tree.report(
                    where, f"level folder {level}/ holds only one folder per level value, not files"
                )
                continue
            try:
                check_level_value(name, level)
            except InvalidInput as exc:
                tree.report(tree.first_file(where), f"invalid level value: {exc.message}")
                continue
            _check_scope(tree, where)


def _check_scope(tree: TreeCheck, folder: str) -> None:
    """`folder` (`global` or `<level>/<value>`) holds only values/ and overrides/ documents."""
    for name, is_folder in tree.children(folder):
        if name not in KINDS or not is_folder:
            tree.report(
                tree.first_file(f"{folder}/{name}"),
                f"{folder}/ may hold only the folders values/ and overrides/",
            )
    definitions = tree.memo("definitions", lambda: _attached_definitions(tree))
    context = tree.data_context()
    for kind in KINDS:
        for path in tree.files_under(f"{folder}/{kind}"):
            name = path[len(folder) + len(kind) + 2 :]
            tree.per_file(
                "layers",
                path,
                context,
                partial(_check_resource_file, tree, path, name, definitions),
            )


def _check_resource_file(
    tree: TreeCheck, path: str, name: str, definitions: dict[str, dict] | None
) -> None:
    if not name.endswith(".yaml"):
        tree.report(path, "resource files are named <resource>.yaml")
        return
    resource = name[: -len(".yaml")]
    try:
        check_resource_name(resource)
    except InvalidInput as exc:
        tree.report(path, exc.message)
        return
    if definitions is not None and resource not in definitions:
        tree.report(
            path,
            f"resource {resource!r} is not defined by any component attached to "
            "this environment (environment.yaml components)",
        )
        return
    doc = tree.mapping(path)
    if doc is None or not _within_limits(tree, path, doc) or definitions is None:
        return
    environment = tree.document(ENVIRONMENT_FILE)
    rules = rules_for_file(path, definitions, environment if isinstance(environment, dict) else {})
    try:
        problems = resource_document_problems(
            definitions[resource],
            path,
            doc,
            secrets=[leaf[0] for leaf in marked_leaves_of(tree, path, doc, rules)],
            caches=tree.snapshot.caches,
        )
    except ValidationFailed as exc:
        problems = [{"file": path, "message": exc.message}]
    for problem in problems:
        tree.report(
            problem["file"], problem["message"], key=problem.get("key"), line=problem.get("line")
        )


def _within_limits(tree: TreeCheck, path: str, doc: dict) -> bool:
    """Whether a resource document keeps `document_bytes` and `document_keys`, the limits of a
    REST write (docs/security.md): one rule for both ways in."""
    try:
        limits.check_stored(path, tree.snapshot.size(path) or 0, doc)
    except InvalidInput as exc:
        tree.report(path, exc.message.removeprefix(f"{path}: "))
        return False
    return True


def _attached_definitions(tree: TreeCheck) -> dict[str, dict] | None:
    """Resource name -> definition for the environment's components (None: no catalog)."""
    if tree.catalog is None:
        return None
    doc = tree.document(ENVIRONMENT_FILE)
    names = doc.get("components") if isinstance(doc, dict) else None
    if not isinstance(names, list):
        return {}
    names = [n for n in names if isinstance(n, str)]
    return {d["name"]: d for d in tree.catalog.definitions_of(names)}


def mapping_files(tree: TreeCheck) -> None:
    context = tree.file_context()
    for folder in MAPPING_FOLDERS:
        for path in tree.files_under(folder):
            if path.endswith(YAML_SUFFIXES):
                tree.per_file("mapping_files", path, context, partial(tree.mapping, path))
