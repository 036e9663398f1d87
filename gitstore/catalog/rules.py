"""The push gate's rules for the catalog's own documents: components and resource definitions.

Each component file is a mapping named like its file with a unique positive id; definition ids
and resource names are unique across the catalog; a definition's `schema` compiles and its
`secret_keys` is a list of strings; a definition environments hold data for is neither renamed,
deleted nor moved out of their reach, and a component environments attach is neither renamed
nor deleted (REST's rules, asked of `usage`). Listed in `gitstore.gitops.rules`.
"""

from __future__ import annotations

from typing import Any

from gitstore.catalog import usage
from gitstore.catalog.view import ORPHANS
from gitstore.errors import InvalidInput, ValidationFailed
from gitstore.names import check_component_name, check_resource_name
from gitstore.repositories import Repositories
from gitstore.validation import Catalog, TreeCheck, schema_validator


def catalog_documents(tree: TreeCheck) -> None:
    seen_components: dict[int, str] = {}
    seen_definitions: dict[str, dict] = {"ids": {}, "names": {}}  # id/name -> file
    for entry in tree.snapshot.list("components"):
        path = f"components/{entry.name}"
        if entry.is_tree or not entry.name.endswith(".yaml"):
            tree.report(tree.first_file(path), "components/ holds one <name>.yaml per component")
            continue
        doc = tree.mapping(path)
        if doc is not None:
            _check_component(tree, path, doc, seen_components)
            _check_definitions(tree, path, doc, seen_definitions)
    if tree.snapshot.exists(ORPHANS):
        doc = tree.mapping(ORPHANS)
        if doc is not None:
            _check_definitions(tree, ORPHANS, doc, seen_definitions)


def _check_component(tree: TreeCheck, path: str, doc: dict, seen: dict[int, str]) -> None:
    stem = path[len("components/") : -len(".yaml")]
    try:
        check_component_name(stem, "component name")
    except InvalidInput as exc:
        tree.report(path, exc.message)
    if doc.get("name") != stem:
        tree.report(path, f"must be {stem!r}, the name of the file", key="name")
    cid = doc.get("id")
    if isinstance(cid, bool) or not isinstance(cid, int) or cid < 1:
        tree.report(path, f"must be a positive integer, not {cid!r}", key="id")
    elif cid in seen:
        tree.report(path, f"id {cid} is also the id of {seen[cid]}", key="id")
    else:
        seen[cid] = path


def _check_definitions(tree: TreeCheck, path: str, doc: dict, seen: dict[str, dict]) -> None:
    definitions = doc.get("resource_definitions", [])
    if not isinstance(definitions, list):
        tree.report(path, "must be a list of resource definitions", key="resource_definitions")
        return
    for index, definition in enumerate(definitions):
        key = f"resource_definitions.{index}"
        if not isinstance(definition, dict):
            tree.report(path, "a resource definition must be a mapping", key=key)
            continue
        _check_definition(tree, path, key, definition, seen)


def _check_definition(
    tree: TreeCheck, path: str, key: str, definition: dict, seen: dict[str, dict]
) -> None:
    did, name = definition.get("id"), definition.get("name")
    if isinstance(did, bool) or not isinstance(did, int) or did < 1:
        tree.report(path, f"must be a positive integer, not {did!r}", key=f"{key}.id")
    elif did in seen["ids"]:
        tree.report(path, f"id {did} is also used in {seen['ids'][did]}", key=f"{key}.id")
    else:
        seen["ids"][did] = path
    try:
        check_resource_name(name)
        if name in seen["names"]:
            tree.report(
                path,
                f"resource {name!r} is also defined in {seen['names'][name]}",
                key=f"{key}.name",
            )
        seen["names"][name] = path
    except InvalidInput as exc:
        tree.report(path, exc.message, key=f"{key}.name")
    schema = definition.get("schema")
    if schema is not None:
        _check_schema(tree, path, f"{key}.schema", schema, str(name))
    secret_keys = definition.get("secret_keys")
    if secret_keys is not None and (
        not isinstance(secret_keys, list) or not all(isinstance(k, str) for k in secret_keys)
    ):
        tree.report(path, "must be a list of strings", key=f"{key}.secret_keys")


def _check_schema(tree: TreeCheck, path: str, key: str, schema: Any, resource: str) -> None:
    if not isinstance(schema, dict):
        tree.report(path, "must be a mapping (a JSON schema)", key=key)
        return
    try:
        schema_validator(schema, resource, path, tree.snapshot.caches)
    except ValidationFailed as exc:
        tree.report(path, exc.message.split(": ", 1)[-1], key=key)


def kept_definitions(tree: TreeCheck) -> None:
    """Refuse what REST refuses (409): renaming, deleting or moving a definition that
    environments hold data for. Their files are named by it, so after such a push every read
    of that data was a 404 and every later push to those environments was refused."""
    judged = _judged(tree)
    if judged is None:
        return
    served, repos = judged
    owners = {c.get("id"): c.get("name") for c in served.components}
    after = _placements(tree)
    by_name = {placed[2]: placed for placed in after.values()}
    for old in served.definitions():
        owner = owners.get(old["component_id"])
        if old["name"] in by_name:
            path, key, _, component = by_name[old["name"]]
            if component != owner:
                _refuse(tree, path, key, usage.move_refusal(repos, old["name"], component))
        elif old["id"] in after:
            path, key, _, _ = after[old["id"]]
            refusal = usage.held_refusal(repos, old["name"], "renamed")
            _refuse(tree, path, f"{key}.name", refusal)
        else:
            path = f"components/{owner}.yaml" if owner is not None else ORPHANS
            refusal = usage.held_refusal(repos, old["name"], "deleted")
            _refuse(tree, path, "resource_definitions", refusal)


def kept_components(tree: TreeCheck) -> None:
    """Refuse what REST refuses (409): renaming or deleting a component environments attach.
    Their `environment.yaml` names it, so after such a push every later push to those
    environments was refused (a component that does not exist)."""
    judged = _judged(tree)
    if judged is None:
        return
    served, repos = judged
    after = _component_names(tree)
    for old in served.components:
        name = old.get("name")
        if name is None or name in after.values():
            continue  # (a component without a name is attached by none)
        if old.get("id") in after:
            path, key, change = f"components/{after[old['id']]}.yaml", "name", "renamed"
        else:
            path, key, change = f"components/{name}.yaml", None, "deleted"
        _refuse(tree, path, key, usage.attached_refusal(repos, name, change))


def _component_names(tree: TreeCheck) -> dict[Any, Any]:  # (ids and names as stored)
    """Component id -> name in the catalog under check."""
    docs = [tree.mapping(f"components/{e.name}") or {} for e in tree.snapshot.list("components")]
    return {doc.get("id"): doc.get("name") for doc in docs}


def _judged(tree: TreeCheck) -> tuple[Catalog, Repositories] | None:
    """What the pushed catalog replaces (the served catalog) and the store whose environments
    it must keep whole, or None when it is not judged against environments: outside a store,
    or a catalog whose own documents were refused (their ids and names are not to be trusted).
    Decided once, before the `kept_` rules report anything themselves."""

    def judged() -> tuple[Catalog, Repositories] | None:
        if tree.problems or tree.catalog is None or tree.repos is None:
            return None
        return tree.catalog, tree.repos

    return tree.memo("kept.served", judged)


def _refuse(tree: TreeCheck, path: str, key: str | None, refusal: str | None) -> None:
    if refusal:
        tree.report(path, refusal, key=key)


def _placements(tree: TreeCheck) -> dict[int, tuple[str, str, str, str | None]]:
    """Definition id -> (file, key, name, owning component) in the catalog under check."""
    files = [f"components/{e.name}" for e in tree.snapshot.list("components")]
    found = {}
    for path in [*files, ORPHANS]:
        doc = tree.mapping(path) or {}
        owner = doc.get("name") if path != ORPHANS else None
        for index, definition in enumerate(doc.get("resource_definitions") or []):
            key = f"resource_definitions.{index}"
            found[definition["id"]] = (path, key, definition["name"], owner)
    return found
