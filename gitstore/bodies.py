"""The fields a JSON request body may hold: one `Body` declared per body, one check.

A field a body does not declare is refused with a 400 naming it, never stored: a typo
(`has_primay`) kept silently is found only when a deployment misbehaves. Where Nailgun documents
a field, the declaration names it, so Fuel clients keep working (the release's `modes_metadata`
is kept as given). docs/api.md ("Request bodies") lists every declaration;
tests/test_bodies.py keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitstore.errors import InvalidInput


@dataclass(frozen=True)
class Body:
    """The fields of one kind of request body.

    `what` names the body in messages ("release", "node"); `required` fields must be present;
    `example` is a short JSON text shown when the body is not an object at all.
    """

    what: str
    fields: tuple[str, ...]
    required: tuple[str, ...] = ()
    example: str = ""

    def check(self, body: Any, where: str = "") -> dict[str, Any]:
        """`body` as a new dict, when it is an object holding only declared fields and every
        required one; `where` names a nested body (`documents[2]`) in messages."""
        named = where or f"the {self.what} body"
        if not isinstance(body, dict):
            like = f", like {self.example}" if self.example else ""
            raise InvalidInput(
                f"{named} must be a JSON object with fields {', '.join(map(repr, self.fields))}"
                f"{like}",
                key=where or None,
            )
        unknown = sorted(str(key) for key in body if key not in self.fields)
        if unknown:
            raise InvalidInput(
                f"{where + ': ' if where else ''}unknown {self.what} field {unknown[0]!r}; "
                f"known fields: {', '.join(self.fields)}",
                key=unknown[0],
            )
        for name in self.required:
            if name not in body:
                raise InvalidInput(f"field {name!r} is required in {named}", key=name)
        return dict(body)
