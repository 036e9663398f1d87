"""A resource definition's JSON schema: checked when a definition is written, so that every
later write of the resource can be judged by it (docs/api.md, "resource definitions").

A schema is refused unless it is valid against its draft's meta-schema, every `$ref` resolves
inside the schema itself, and no chain of references and in-place applicators (`allOf`, `not`,
`if`, ...) leads back to where it started. Remote references are refused rather than fetched:
jsonschema's default registry would download any `http://` URL a schema names, from the server
and from the push gate. A cycle that reads no input (`{"$ref": "#"}`) recurses until Python's
RecursionError; one through `properties` or `items` consumes a level of the document each time
and ends with it, so recursive schemas of trees stay allowed.

`validator` builds what `gitstore.validation` runs on documents (once per schema in the store's
`Caches.schema_validators` when given); it applies the same check, so a schema stored before the
check existed is a 400 at write time, not a 500.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema

from gitstore import schema_regex
from gitstore.backend.cache import Caches
from gitstore.errors import InvalidInput

#: Keywords whose subschemas apply to the same instance: following them reads no input.
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
#: References resolved by the dynamic scope of a validation, which a static check cannot follow.
_DYNAMIC_REFS = ("$dynamicRef", "$recursiveRef")


def check(schema: Any, resource: str) -> None:
    """Raise InvalidInput (key `schema`) unless `schema` can judge documents of `resource`."""
    validator(schema, resource)


def validator(
    schema: Any, resource: str, caches: Caches | None = None
) -> jsonschema.protocols.Validator:
    """The validator of `schema`, checked as `check` describes (kept in `caches` by the
    schema's text)."""
    if caches is None:
        return _build(schema, resource)
    key = json.dumps(schema, sort_keys=True, default=str)
    return caches.schema_validators.get_or_compute(key, lambda: _build(schema, resource))


def invalid(resource: str, why: str) -> InvalidInput:
    """The one error of an unusable schema, naming the resource and what is wrong."""
    return InvalidInput(f"the schema of resource {resource!r} is invalid: {why}", key="schema")


def _build(schema: Any, resource: str) -> jsonschema.protocols.Validator:
    if not isinstance(schema, dict):
        raise invalid(resource, "it must be a mapping (a JSON schema)")
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise invalid(resource, exc.message) from exc
    spec = referencing.jsonschema.specification_with(
        schema.get("$schema", ""), default=referencing.jsonschema.DRAFT202012
    )
    edges, objects = _walk(schema, spec, resource)
    if _has_cycle(edges):
        raise invalid(
            resource,
            "a $ref recurses without reading the document "
            f"(a cycle through $ref, {', '.join(_IN_PLACE_LISTS + _IN_PLACE_ONE)})",
        )
    unbounded = schema_regex.check(objects)
    if unbounded:
        raise invalid(resource, unbounded)
    # (mypy reads `referencing`'s attrs fields without their aliases: `retrieve`, `ref`)
    registry = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
    return schema_regex.bounded(cls)(schema, registry=registry)


def _refuse(uri: str) -> Any:
    """The registry's retriever: nothing outside the schema is ever fetched."""
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


def _walk(schema: dict, spec: Any, resource: str) -> tuple[dict[int, list[int]], list[dict]]:
    """Every subschema (by identity) -> the subschemas that apply to the same instance; and
    every subschema object.

    Walks every subschema, resolving each `$ref` inside the schema (InvalidInput otherwise).
    """
    registry = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
    todo = [(schema, registry.resolver_with_root(spec.create_resource(schema)))]
    edges: dict[int, list[int]] = {}
    objects: list[dict] = []
    while todo:
        contents, resolver = todo.pop()
        if not isinstance(contents, dict) or id(contents) in edges:
            continue
        objects.append(contents)
        _refuse_dynamic(contents, resource)
        same = [(c, resolver.in_subresource(spec.create_resource(c))) for c in _in_place(contents)]
        if isinstance(contents.get("$ref"), str):
            resolved = _lookup(resolver, contents["$ref"], resource)
            same.append((resolved.contents, resolved.resolver))
        edges[id(contents)] = [id(c) for c, _ in same if isinstance(c, dict)]
        todo.extend(same)
        todo.extend(
            (c, resolver.in_subresource(spec.create_resource(c)))
            for c in spec.subresources_of(contents)
        )
    return edges, objects


def _in_place(contents: dict) -> list[Any]:
    found = [contents[k] for k in _IN_PLACE_ONE if k in contents]
    for key in _IN_PLACE_LISTS:
        if isinstance(contents.get(key), list):
            found.extend(contents[key])
    for key in _IN_PLACE_MAPS:
        if isinstance(contents.get(key), dict):
            found.extend(v for v in contents[key].values() if isinstance(v, dict))
    return found


def _refuse_dynamic(contents: dict, resource: str) -> None:
    for key in _DYNAMIC_REFS:
        if key in contents:
            raise invalid(resource, f"{key} is not supported; use $ref")


def _lookup(resolver: Any, ref: str, resource: str) -> Any:
    try:
        return resolver.lookup(ref)
    except referencing.exceptions.Unresolvable as exc:
        raise invalid(
            resource,
            f"$ref {ref!r} does not resolve within the schema "
            "(references to other documents are not followed)",
        ) from exc


def _has_cycle(edges: dict[int, list[int]]) -> bool:
    """Whether the graph has a cycle (an iterative depth-first search: chains may be long)."""
    done: set[int] = set()
    for start in edges:
        if start in done:
            continue
        path, stack = {start}, [(start, iter(edges[start]))]
        while stack:
            node, successors = stack[-1]
            following = next(successors, None)
            if following is None:
                stack.pop()
                path.discard(node)
                done.add(node)
            elif following in path:
                return True
            elif following not in done:
                path.add(following)
                stack.append((following, iter(edges.get(following, ()))))
    return False
