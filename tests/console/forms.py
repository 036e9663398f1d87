"""Helpers of the console write tests: a guarded store, forms' CSRF tokens, signing in."""

from __future__ import annotations

import re

from access.helpers import add_users, password_of

from gitstore import Store
from gitstore.api import create_app
from gitstore.backend.repository import Author

ALICE = Author("alice", "alice@example.com")
#: user -> grants of the console tests (passwords are `<user>-pw`).
USERS = {
    "reader": ["reader"],
    "writer1": ["writer:env:1"],
    "keeper": ["writer:env:1", "secrets:env:1"],
}
SCHEMA = {
    "type": "object",
    "properties": {"net": {"type": "object", "properties": {"mtu": {"type": "integer"}}}},
}
COOKIE = "gitstore_session"


def build_store(root) -> Store:
    """Environment 1 (hierarchy [nodes]) with nodes 1-3: global mtu 1500, node 3 overrides
    it to 9000; a secret `db.pass` in globals."""
    store = Store.init(root)
    store.components.create(
        {
            "name": "fuel",
            "resource_definitions": [
                {"name": "astute", "schema": SCHEMA},
                {"name": "globals", "secret_keys": ["db.pass"]},
            ],
        }
    )
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    for node in (1, 2, 3):
        store.nodes.create(1, {"id": node, "fqdn": f"node-{node}.example"})
    store.config.put(1, [], "astute", "values", {"net": {"mtu": 1500, "vlan": 10}}, ALICE)
    store.config.put(1, [("nodes", "3")], "astute", "overrides", {"net": {"mtu": 9000}}, ALICE)
    store.config.put(1, [], "globals", "values", {"db": {"pass": "hunter2-secret"}}, ALICE)
    return store


def guarded_client(root, config: dict | None = None):
    """(store, a test client) of a store with the users of `USERS`."""
    store = build_store(root)
    add_users(store.root, USERS)
    app = create_app({"TESTING": True, **(config or {})}, store=store)
    return store, app.test_client()


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def sign_in(client, user: str, password: str | None = None):
    """Sign `user` in through the form; the response of the POST."""
    token = csrf_of(client.get("/ui/login").get_data(as_text=True))
    return client.post(
        "/ui/login",
        data={"user": user, "password": password or password_of(user), "csrf_token": token},
    )


def form_token(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return csrf_of(response.get_data(as_text=True))
