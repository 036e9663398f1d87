"""`/api/v1/config/environments/<id>/<levels>resources/<resource>/values|overrides[/keys/<op>]`.

`<levels>` is zero or more `level/value/` pairs; a resource name may contain `/`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from flask import Blueprint, g, request
from werkzeug.exceptions import MethodNotAllowed

from gitstore.api import request_state
from gitstore.api.blocking import PARAMETERS as BLOCKING_PARAMETERS
from gitstore.api.blocking import blocking_read
from gitstore.api.deadlines import deadline
from gitstore.api.http import (
    app_store,
    author,
    etag_of,
    flag,
    if_match,
    json_body,
    served,
    version_arg,
    written,
)
from gitstore.api.offload import heavy_service
from gitstore.api.request_state import RequestState
from gitstore.configdb.values import Config, Query
from gitstore.errors import NotFound, PreconditionFailed
from gitstore.keypaths import KEY_OPS
from gitstore.layout import KINDS
from gitstore.names import check_segment, is_commit_id, is_number
from gitstore.served import Served

bp = Blueprint("values", __name__, url_prefix="/api/v1/config/environments")
#: An ETag of ours: 32 hex digits (a commit id has 40, a version number is decimal).
_ETAG = re.compile(r"^[0-9a-f]{32}$")


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
            heavy_service("versions").explain(
                env_id,
                address.pairs,
                address.resource,
                query.key,
                query.version,
                effective=query.effective,
                reveal=query.reveal,
                who=g.user,
                deadline=deadline(),
            )
        )
    config, who = app_store().config, g.user
    heads = _heads_for_this_request(config, env_id, request_state.of(request.environ))

    def read_at(version: str | None) -> Served:
        at = query if version == query.version else replace(query, version=version)
        return config.read(
            env_id, address.pairs, address.resource, address.kind, at, who=who, heads=heads
        )

    return blocking_read(env_id, read_at, head=heads[0] if heads is not None else None)


def _heads_for_this_request(
    config: Config, env_id: int, state: RequestState | None
) -> tuple[str, str] | None:
    """The heads (environment, catalog) a read of the head or at a version number or commit
    id is made at, each ref read once per request: the ones the fast path read (fastpath.py),
    marked as those the answer is read at, else read here (a request the fast path leaves to
    the app, such as a conditional one). A version is looked up on the environment's head,
    which `X-Gitstore-Index` names. None for a read at a revision name or a blocking read,
    whose answer is not of the heads of the request's start."""
    args = request.args
    if any(name in args for name in BLOCKING_PARAMETERS):
        return None
    version = args.get("version")
    if version is not None and not (is_number(version) or is_commit_id(version)):
        return None
    if state is not None and state.heads is not None:
        state.read_at = state.heads
        return state.heads
    environment, catalog = config.heads(env_id)
    return (environment, catalog) if environment and catalog else None


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
    if address.op is not None and address.op not in KEY_OPS:
        raise NotFound(f"unknown key operation {address.op!r}; use set or delete")
    body = json_body()
    expected = _expected_version(env_id, address)
    if address.op is None:
        result = config.put(
            env_id,
            address.pairs,
            address.resource,
            address.kind,
            body,
            author(),
            expected=expected,
        )
    else:
        result = config.update_keys(
            env_id,
            address.pairs,
            address.resource,
            address.kind,
            address.op,
            body,
            author(),
            expected=expected,
        )
    return written(result)


def _expected_version(env_id: int, address: Address) -> str | None:
    """The version a conditional write (`If-Match`) was read at: a commit id or version number
    as given, or the commit of the current document when the ETag of a plain GET of it is.

    An ETag that is not the current one is a 412 at once; the store compares the document at a
    version with the current one under the write lock, so a writer racing in between is caught.
    """
    token = if_match()
    if token is None or not _ETAG.match(token):
        return token
    current = app_store().config.read(
        env_id, address.pairs, address.resource, address.kind, who=g.user
    )
    document = request.path if address.op is None else request.path.rsplit("/", 2)[0]
    if etag_of(document, [], current) != token:
        raise PreconditionFailed(
            f"the document changed since the read that returned ETag {token!r} (or that "
            "ETag is of another read): GET it again for its new ETag and reapply the edit",
            key="If-Match",
        )
    return current.commit
