"""`PUT /api/v1/config/environments/<id>/documents`: several documents in one commit.

The REST form of `Config.write_many`: documents at any addresses, values or overrides, as one
commit (facts uploads have their own route, `facts.py`, which reads machine-written YAML and
stores a cluster's lists once). Body::

    {"message": "facts: upload nodes/1 values (2 resources)",       (optional)
     "documents": [{"levels": [["nodes", "1"]], "resource": "astute",
                    "kind": "values", "document": {...}}, ...]}

`levels` defaults to `[]` (global) and `kind` to `values`. Each document replaces the one at its
address, as a PUT of `.../resources/<resource>/<kind>` would; the batch is all or nothing.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from gitstore.api.http import app_store, author, json_body, written
from gitstore.bodies import Body
from gitstore.errors import InvalidInput
from gitstore.names import commit_message

bp = Blueprint("batch", __name__, url_prefix="/api/v1/config/environments")

MAX_DOCUMENTS = 1000
BATCH_BODY = Body(
    "documents", ("documents", "message"), required=("documents",), example='{"documents": [...]}'
)
#: One item of `documents`.
ITEM_BODY = Body("documents item", ("levels", "resource", "kind", "document"))


@bp.put("/<int:env_id>/documents")
def write_documents(env_id: int):
    documents, message = parse_batch(json_body())
    return written(app_store().config.write_many(env_id, documents, message, author()))


def parse_batch(body: Any) -> tuple[dict[tuple, dict], str]:
    """The facade's `{(pairs, resource, kind): document}` and the commit message."""
    if not isinstance(BATCH_BODY.check(body)["documents"], list):
        raise InvalidInput("body must be an object with a list 'documents'", key="documents")
    items = body["documents"]
    if not 0 < len(items) <= MAX_DOCUMENTS:
        raise InvalidInput(f"'documents' must hold 1 to {MAX_DOCUMENTS} items", key="documents")
    batch: dict[tuple, dict] = {}
    for index, item in enumerate(items):
        address, document = _item(item, f"documents[{index}]")
        if address in batch:
            raise InvalidInput(
                f"documents[{index}] repeats the address of an earlier item", key="documents"
            )
        batch[address] = document
    return batch, _message(body.get("message"), len(batch))


def _item(item: Any, where: str) -> tuple[tuple, dict]:
    item = ITEM_BODY.check(item, where)
    levels = item.get("levels", [])
    if not isinstance(levels, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p) for p in levels
    ):
        raise InvalidInput(
            f"{where}.levels must be a list of [level, value] pairs", key=f"{where}.levels"
        )
    resource, kind = item.get("resource"), item.get("kind", "values")
    if not isinstance(resource, str) or not isinstance(kind, str):
        raise InvalidInput(f"{where}.resource and {where}.kind must be strings", key=where)
    if not isinstance(item.get("document"), dict):
        raise InvalidInput(
            f"{where}.document must be an object (a mapping)", key=f"{where}.document"
        )
    pairs = tuple((level, value) for level, value in levels)
    return (pairs, resource, kind), item["document"]


def _message(message: Any, count: int) -> str:
    return commit_message(message, f"config: write {count} documents")
