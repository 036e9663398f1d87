"""The CLI's one operation table (`cli.client.Client`): each route is one the app serves, and
every operation has an HTTP form, derived from its route or written in `HttpClient`."""

from __future__ import annotations

import re

import pytest
from werkzeug.exceptions import MethodNotAllowed, NotFound

from cli.client import Client, operations, route_of
from cli.http_client import HttpClient
from cli.local_client import LocalClient
from gitstore.api import create_app

ROUTED = {name: route_of(op) for name, op in operations().items() if route_of(op) is not None}
_PLACEHOLDER = re.compile(r"<(?:int:)?([A-Za-z_][A-Za-z0-9_]*)>")


def _example(path: str) -> str:
    """The route's path with an example argument in each place (`1` for ids, a name else)."""
    return _PLACEHOLDER.sub(lambda m: "1" if "int:" in m.group(0) else "release", path)


def test_most_operations_are_derived_from_a_route():
    assert len(ROUTED) >= 50


def test_every_operation_has_an_http_form():
    by_hand = {name for name in operations() if name not in ROUTED}
    missing = sorted(name for name in by_hand - {"read"} if name not in vars(HttpClient))
    assert missing == [], f"give these a route (cli.client.rest) or an HttpClient method: {missing}"


def test_a_routed_operation_is_derived_not_inherited():
    for name in ROUTED:
        assert getattr(HttpClient, name) is not getattr(Client, name), name
        assert getattr(LocalClient, name) is getattr(Client, name), name


@pytest.mark.parametrize("name", sorted(ROUTED))
def test_each_route_is_served_by_the_app(name, store):
    route = ROUTED[name]
    urls = create_app({"TESTING": True}, store=store).url_map.bind("localhost")
    url = route.root + _example(route.path)
    try:
        urls.match(url, method=route.method)
    except (NotFound, MethodNotAllowed) as exc:
        pytest.fail(f"{name}: the app does not serve {route.method} {url} ({exc.code})")


def test_a_route_the_app_lacks_is_found(store):
    urls = create_app({"TESTING": True}, store=store).url_map.bind("localhost")
    with pytest.raises((NotFound, MethodNotAllowed)):
        urls.match("/api/v1/clusters/1/no_such_thing", method="POST")
