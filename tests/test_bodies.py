"""`gitstore.bodies`: one check for every JSON body, and docs/api.md listing every body."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import gitstore
from gitstore.bodies import Body
from gitstore.errors import InvalidInput

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
NODE = Body("node", ("id", "fqdn"), required=("fqdn",), example='{"fqdn": "node-1"}')


def declared_bodies() -> list[tuple[str, Body]]:
    """Every `Body` a module of gitstore declares (at module level, or in a module-level dict)."""
    found: dict[int, tuple[str, Body]] = {}
    for info in pkgutil.walk_packages(gitstore.__path__, "gitstore."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            values = value.values() if isinstance(value, dict) else [value]
            for item in values:
                if isinstance(item, Body):
                    found.setdefault(id(item), (f"{info.name}.{name}", item))
    return list(found.values())


def _body_rows() -> list[str]:
    text = API_DOC.read_text()
    start = text.index("**Request bodies take only their fields.**")
    end = text.index("**Every successful write is exactly one commit**")
    return [line for line in text[start:end].splitlines() if line.startswith("| ")]


def test_every_declared_body_is_listed_in_docs_api_md_with_all_its_fields():
    rows = _body_rows()
    bodies = declared_bodies()
    assert len(bodies) > 20  # the walk found them
    missing = []
    for where, body in bodies:
        listed = [
            row
            for row in rows
            if body.what in re.split(r",\s*", row.split("|")[1].strip())
            and all(f"`{field}`" in row for field in body.fields)
        ]
        if not listed:
            missing.append(f"{where} ({body.what}: {', '.join(body.fields)})")
    assert missing == []


def test_an_unknown_field_is_named_with_the_fields_the_body_takes():
    with pytest.raises(InvalidInput) as caught:
        NODE.check({"fqdn": "node-1", "frobnicate_level": 3, "zz": 1})
    assert caught.value.key == "frobnicate_level"
    assert str(caught.value) == ("unknown node field 'frobnicate_level'; known fields: id, fqdn")


def test_a_missing_required_field_and_a_body_that_is_no_object_are_named():
    with pytest.raises(InvalidInput, match="field 'fqdn' is required in the node body"):
        NODE.check({"id": 1})
    with pytest.raises(InvalidInput, match=r"items\[2\] must be a JSON object with fields 'id'"):
        NODE.check(["node-1"], "items[2]")
    assert NODE.check({"fqdn": "node-1"}) == {"fqdn": "node-1"}
