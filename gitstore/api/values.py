"""`/api/v1/config/environments/<id>/<levels>resources/<resource>/values|overrides[/keys/<op>]`.

`<levels>` is zero or more `level/value/` pairs; a resource name may contain `/`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flask import Blueprint, g, request
from werkzeug.exceptions import MethodNotAllowed

from gitstore import Query
from gitstore.api.blocking import blocking_read
from gitstore.api.http import app_store, author, flag, json_body, served, version_arg, written
from gitstore.errors import NotFound
from gitstore.keypaths import KEY_OPS
from gitstore.layout import KINDS
from gitstore.names import check_segment
from gitstore.served import Served

bp = Blueprint("values", __name__, url_prefix="/api/v1/config/environments")


@dataclass(frozen=True)
class Address:
    pairs: list[tuple[str, str]]
    resource: str
    kind: str
    op: str | None


def parse_address(rest: str) -> Address:
    """Split the path after the environment id into level pairs, resource, kind and key op."""
    parts = rest.split("/")
    pairs: list[tuple[str, str]] = []
    index = 0
    while index < len(parts) and parts[index] != "resources":
        if index + 1 >= len(parts):
            raise NotFound(f"level {parts[index]!r} has no value in the path")
        pairs.append((parts[index], parts[index + 1]))
        index += 2
    tail = parts[index + 1 :]
    if len(tail) >= 2 and tail[-1] in KINDS:
        return Address(pairs, _resource_ref(tail[:-1]), tail[-1], None)
    if len(tail) >= 4 and tail[-2] == "keys" and tail[-3] in KINDS:
        return Address(pairs, _resource_ref(tail[:-3]), tail[-3], tail[-1])
    raise NotFound("no such route: expected .../resources/<resource>/values|overrides")


def _resource_ref(segments: list[str]) -> str:
    for segment in segments:
        check_segment(segment, "resource name segment")
    return "/".join(segments)


@bp.get("/<int:env_id>/<path:rest>")
def read(env_id: int, rest: str):
    address = parse_address(rest)
    if address.op is not None:
        raise MethodNotAllowed(
            valid_methods=["PUT", "PATCH"],
            description="key operations take PUT or PATCH; read a key with GET .../values?key=a.b",
        )
    query = Query(
        effective=flag("effective"),
        show_lookup=flag("show_lookup"),
        key=request.args.get("key"),
        version=version_arg(),
        reveal=flag("reveal"),
    )
    if flag("explain"):
        return served(
            app_store().versions.explain(
                env_id,
                address.pairs,
                address.resource,
                query.key,
                query.version,
                effective=query.effective,
                reveal=query.reveal,
                who=g.user,
            )
        )
    config, who = app_store().config, g.user

    def read_at(version: str | None) -> Served:
        at = replace(query, version=version)
        return config.read(env_id, address.pairs, address.resource, address.kind, at, who=who)

    return blocking_read(env_id, read_at)


@bp.route("/<int:env_id>/<path:rest>", methods=["PUT", "PATCH"])
def write(env_id: int, rest: str):
    address = parse_address(rest)
    config = app_store().config
    if address.op is None and request.method == "PATCH":
        raise MethodNotAllowed(
            valid_methods=["GET", "HEAD", "PUT"],
            description="a values or overrides document is replaced with "
            "PUT; PATCH applies only to .../keys/set|delete",
        )
    if address.op is None:
        result = config.put(
            env_id, address.pairs, address.resource, address.kind, json_body(), author()
        )
    elif address.op not in KEY_OPS:
        raise NotFound(f"unknown key operation {address.op!r}; use set or delete")
    else:
        result = config.update_keys(
            env_id, address.pairs, address.resource, address.kind, address.op, json_body(), author()
        )
    return written(result)
