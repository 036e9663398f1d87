"""`/api/v1/hiera/<env>/<node>`: the node document the Puppet backend reads once per compile.

An unknown node is 404; an unknown `version` pin is 422 (`UnknownPin`), so a client configured
to treat an unknown node as "no data" never mistakes a bad pin for it. The ETag is weak and
follows the data the document was merged from: a commit that changes none of it keeps the ETag
although the body names the newer commit.
"""

from __future__ import annotations

from flask import Blueprint, Response, g, request

from gitstore.api import request_state
from gitstore.api.blocking import blocking_read
from gitstore.api.http import app_store, may_reveal, served
from gitstore.errors import InvalidInput
from gitstore.served import Served

bp = Blueprint("hiera", __name__, url_prefix="/api/v1/hiera")
#: The caching of a document that reveals secrets.
REVEALED = "private, no-cache"


def _resources_arg() -> list[str] | None:
    text = request.args.get("resources")
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise InvalidInput(
            f"query parameter 'resources' {text!r} has an empty name; "
            "give names separated by commas",
            key="resources",
        )
    return names


@bp.get("/<int:env_id>/<node>")
def node_document(env_id: int, node: str):
    # Puppet needs the real passwords: the node document reveals them to a caller holding the
    # `secrets` role (grant it to the Puppet master's user) and masks them for everyone else.
    reveal, resources, who = may_reveal(env_id), _resources_arg(), g.get("user")
    hiera, state = app_store().hiera, request_state.of(request.environ)

    def read_at(version: str | None) -> Served:
        result = hiera.node_document(env_id, node, version, resources, reveal=reveal, who=who)
        # How the document was read, for the fast path to audit a reveal when it repeats the
        # answer (what it revealed is the answer's) and to read a pinned document again.
        if state is not None:
            state.hiera_read = (env_id, node, version, resources, reveal, who)
        return result

    def respond(result: Served) -> Response:
        response = served(result, weak=True)
        if result.revealed:
            # Plain-text secrets: never in a shared cache, and never used again without asking
            # the server (a `secrets` role withdrawn must reach the master: no max-age, not
            # even for a pinned commit). The module revalidates every compile anyway.
            response.headers["Cache-Control"] = REVEALED
        elif reveal:  # revealed nothing, but what a masked caller gets may differ: never shared
            cache_control = response.headers.get("Cache-Control", "")
            response.headers["Cache-Control"] = cache_control.replace("public", "private")
        return response

    return blocking_read(env_id, read_at, respond)
