"""A node list's page as HTTP: the nodes a `NodeQuery` selects as the JSON list, how many match
in `X-Total-Count` and the next page in `Link` (docs/api.md, "Node lists")."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

from flask import Response, request

from gitstore.api.http import served
from gitstore.nodequery import NodeQuery
from gitstore.served import Served


def node_page(query: NodeQuery, result: Served) -> Response:
    """The nodes of `result` that `query` selects; a filtered or paged answer says how many
    match in `X-Total-Count`, and a page that is not the last links the next (`Link`)."""
    chosen = query.select(result.data)
    response = served(replace(result, data=chosen.nodes))
    if query.filtered or query.limit is not None:
        response.headers["X-Total-Count"] = str(chosen.total)
    if chosen.next_marker is not None:
        args = request.args.to_dict()
        args["marker"] = chosen.next_marker
        response.headers["Link"] = f'<{request.path}?{urlencode(args)}>; rel="next"'
    return response
