"""Rules a stored document must satisfy, shared by REST writes, the push gate and `validate`."""

from __future__ import annotations

import jsonschema

from gitstore.errors import ValidationFailed


def check_document_schema(definition: dict, path: str, document: dict) -> None:
    """Validate `document` against its resource definition's `schema`, if it declares one."""
    schema = definition.get("schema")
    if not schema:
        return
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator = validator_cls(schema)
        problems = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    except jsonschema.exceptions.SchemaError as exc:
        raise ValidationFailed(f"{path}: the schema of resource {definition['name']!r} is "
                               f"invalid: {exc.message}", path=path) from exc
    if problems:
        errors = [{"file": path, "key": ".".join(str(p) for p in e.path) or None,
                   "message": e.message} for e in problems]
        first = errors[0]
        where = f" key {first['key']!r}" if first["key"] else ""
        raise ValidationFailed(f"{path}:{where} {first['message']}", path=path,
                               key=first["key"], errors=errors)
