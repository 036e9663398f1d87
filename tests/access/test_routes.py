"""Every route family under access control, through the real app.

Each route is tried anonymously (401), with a role too small (403 naming the role needed), with
the right role on another environment (403) and with the right role on the right scope or as an
admin (allowed). Allowed requests aim at environment 9 or entity 99, which do not exist: they
pass the access check and get the view's own answer (404, 400), so nothing is changed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from .helpers import bearer


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # `{env}` stands for an environment id
    role: str  # reader, writer or admin
    scope: str  # env (per environment), store (needs '*') or catalog (reads: any scope)
    body: object = None  # None: `{}` for methods that send a body

    def at(self, env_id: int) -> str:
        return self.path.format(env=env_id)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


C = "/api/v1/config"
ROUTES = [
    # ConfigDB: environments, levels, values, batch
    Route("GET", C + "/environments/{env}", "reader", "env"),
    Route("PATCH", C + "/environments/{env}", "writer", "env"),
    Route("DELETE", C + "/environments/{env}", "admin", "env"),
    Route("GET", C + "/environments/{env}/hierarchy_levels", "reader", "env"),
    Route("PUT", C + "/environments/{env}/hierarchy_levels/nodes", "writer", "env"),
    Route("GET", C + "/environments/{env}/resources/astute/values?effective=1", "reader", "env"),
    Route("PUT", C + "/environments/{env}/resources/astute/values", "writer", "env"),
    Route(
        "PATCH",
        C + "/environments/{env}/nodes/1/resources/astute/overrides/keys/set",
        "writer",
        "env",
    ),
    Route("PUT", C + "/environments/{env}/documents", "writer", "env"),
    # versions
    Route("GET", C + "/environments/{env}/history", "reader", "env"),
    Route("GET", C + "/environments/{env}/labels", "reader", "env"),
    Route("POST", C + "/environments/{env}/labels", "writer", "env"),
    Route("POST", C + "/environments/{env}/revert", "writer", "env"),
    # Hiera
    Route("GET", "/api/v1/hiera/{env}/node-1", "reader", "env"),
    # clusters, nodes, tags
    Route("GET", "/api/v1/clusters/{env}", "reader", "env"),
    Route("GET", "/api/v1/clusters/{env}/nodes", "reader", "env"),
    Route("POST", "/api/v1/clusters/{env}/nodes", "writer", "env"),
    Route("PATCH", "/api/v1/clusters/{env}/nodes/1", "writer", "env"),
    Route("DELETE", "/api/v1/clusters/{env}/nodes/1", "admin", "env"),
    Route("POST", "/api/v1/clusters/{env}/nodes/1/tags", "writer", "env"),
    Route("DELETE", "/api/v1/clusters/{env}/nodes/1/tags", "writer", "env"),
    Route("PUT", "/api/v1/clusters/{env}/roles", "writer", "env"),
    Route("GET", "/api/v1/clusters/{env}/tags", "reader", "env"),
    Route("POST", "/api/v1/clusters/{env}/tags", "writer", "env"),
    Route("DELETE", "/api/v1/clusters/{env}/tags/compute", "admin", "env"),
    Route("GET", "/api/v1/clusters/{env}/deployment_graphs/default", "reader", "env"),
    Route("PUT", "/api/v1/clusters/{env}/deployment_tasks", "writer", "env"),
    Route("DELETE", "/api/v1/clusters/{env}/deployment_graphs/default", "admin", "env"),
    # git smart HTTP
    Route("GET", "/git/environments/{env}.git/info/refs?service=git-upload-pack", "reader", "env"),
    Route("GET", "/git/environments/{env}.git/info/refs?service=git-receive-pack", "writer", "env"),
    Route("POST", "/git/environments/{env}.git/git-receive-pack", "writer", "env"),
    Route("GET", "/git/catalog.git/info/refs?service=git-upload-pack", "reader", "catalog"),
    Route("POST", "/git/catalog.git/git-receive-pack", "writer", "store"),
    # the catalog
    Route("GET", C + "/components", "reader", "catalog"),
    Route("POST", C + "/components", "writer", "store"),
    Route("PATCH", C + "/components/99", "writer", "store"),
    Route("DELETE", C + "/components/99", "admin", "store"),
    Route("GET", C + "/resource_definitions", "reader", "catalog"),
    Route("POST", C + "/resource_definitions", "writer", "store"),
    Route("DELETE", C + "/resource_definitions/99", "admin", "store"),
    Route("GET", "/api/v1/releases", "reader", "catalog"),
    Route("POST", "/api/v1/releases", "writer", "store"),
    Route("PUT", "/api/v1/releases/99", "writer", "store"),
    Route("DELETE", "/api/v1/releases/99", "admin", "store"),
    Route("GET", "/api/v1/plugins/99/tags", "reader", "catalog"),
    Route("DELETE", "/api/v1/plugins/99", "admin", "store"),
    Route("DELETE", "/api/v1/releases/99/tags/compute", "admin", "store"),
    Route("GET", "/api/v1/templates", "reader", "catalog"),
    Route("POST", "/api/v1/templates", "writer", "store"),
    Route("GET", "/api/v1/roles", "reader", "catalog"),
    Route("PUT", "/api/v1/roles/99", "writer", "store"),
    Route("GET", "/api/v1/plans", "reader", "catalog"),
    Route("PATCH", "/api/v1/plans/99", "writer", "store"),
    Route("DELETE", "/api/v1/plans/99", "admin", "store"),
    Route("DELETE", "/api/v1/plans/99/roles/98", "writer", "store"),
    # store-wide
    Route("GET", C + "/environments", "reader", "store"),
    Route("POST", C + "/environments", "writer", "store", {"id": "not an id"}),
    Route("GET", "/api/v1/clusters", "reader", "store"),
    Route("GET", "/api/v1/nodes", "reader", "store"),
    Route("GET", "/api/v1/status", "reader", "store"),
    Route("GET", "/api/v1/transactions", "reader", "store"),
    Route("GET", "/api/v1/transactions/1/nodes/1", "reader", "store"),
    Route("GET", "/api/v1/graphs", "reader", "store"),
    Route("POST", "/api/v1/graphs/execute", "writer", "store"),
    # user and token management
    Route("GET", "/api/v1/access/users", "admin", "store"),
    Route("GET", "/api/v1/access/tokens", "admin", "store"),
    Route("DELETE", "/api/v1/access/tokens/0000", "admin", "store"),
]
#: A user holding the role just below the one a route needs, on the whole store.
TOO_SMALL = {"reader": "secrets_only", "writer": "reader", "admin": "writer"}
#: A user holding exactly the role a route needs, on environment 9 only.
ON_ENV_9 = {"reader": "reader9", "writer": "writer9", "admin": "admin9"}
#: A user holding exactly the role a route needs, on environment 1 only.
ON_ENV_1 = {"reader": "reader1", "writer": "writer1", "admin": None}
#: A user holding exactly the role a route needs, on the whole store.
ON_STORE = {"reader": "reader", "writer": "writer", "admin": "admin"}


def call(client, route: Route, env_id: int, user: str | None, tokens: dict[str, str]):
    headers = bearer(tokens[user]) if user else {}
    body = None if route.method in ("GET", "DELETE") else route.body or {}
    return client.open(route.at(env_id), method=route.method, json=body, headers=headers)


def assert_allowed(response) -> None:
    """The access check let the request through to its view."""
    assert response.status_code not in (401, 403, 429), response.get_data(as_text=True)


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_anonymous_gets_401_with_a_challenge(guarded_client, tokens, route):
    got = call(guarded_client, route, 1, None, tokens)
    assert got.status_code == 401
    assert got.headers["WWW-Authenticate"] == 'Basic realm="gitstore"'
    assert got.json["status"] == 401
    assert "authentication required" in got.json["message"]


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_a_role_too_small_gets_403_naming_the_role_needed(guarded_client, tokens, route):
    got = call(guarded_client, route, 1, TOO_SMALL[route.role], tokens)
    assert got.status_code == 403
    assert got.json == {"status": 403, "message": got.json["message"]}
    assert f"needs role {route.role!r}" in got.json["message"]


@pytest.mark.parametrize(
    "route", [r for r in ROUTES if r.scope == "env" and ON_ENV_1[r.role]], ids=str
)
def test_a_role_on_environment_1_cannot_touch_environment_2(guarded_client, tokens, route):
    got = call(guarded_client, route, 2, ON_ENV_1[route.role], tokens)
    assert got.status_code == 403
    assert "on environment 2" in got.json["message"]


@pytest.mark.parametrize("route", [r for r in ROUTES if r.scope != "env"], ids=str)
def test_a_role_on_one_environment_is_not_a_role_on_the_store(guarded_client, tokens, route):
    got = call(guarded_client, route, 1, ON_ENV_9[route.role], tokens)
    if route.scope == "catalog":
        assert_allowed(got)  # every environment is built from the catalog: its readers read it
    else:
        assert got.status_code == 403
        assert "on the whole store" in got.json["message"]


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_the_role_needed_on_the_right_scope_is_allowed(guarded_client, tokens, route):
    user = ON_ENV_9[route.role] if route.scope == "env" else ON_STORE[route.role]
    assert_allowed(call(guarded_client, route, 9, user, tokens))


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_an_admin_may_do_everything(guarded_client, tokens, route):
    assert_allowed(call(guarded_client, route, 9, "admin", tokens))


def test_webhooks_are_not_checked_here_but_by_their_signature(guarded_client):
    got = guarded_client.post("/webhooks/github", json={})
    assert got.status_code == 401
    assert "signature" in got.json["message"]
    assert "WWW-Authenticate" not in got.headers


def test_revealing_catalog_secrets_needs_the_secrets_role_on_the_whole_store(
    guarded_client, tokens
):
    got = guarded_client.get("/api/v1/plans?reveal=1", headers=bearer(tokens["env_secrets"]))
    assert got.status_code == 403 and "on the whole store" in got.json["message"]
    got = guarded_client.get("/api/v1/plans?reveal=1", headers=bearer(tokens["store_secrets"]))
    assert_allowed(got)


def test_a_reveal_needs_the_secrets_role_which_admin_lacks(guarded_client, tokens):
    path = C + "/environments/{env}/resources/astute/values?reveal=1"
    got = guarded_client.get(path.format(env=1), headers=bearer(tokens["admin"]))
    assert got.status_code == 403
    assert "needs role 'secrets'" in got.json["message"]
    assert_allowed(guarded_client.get(path.format(env=1), headers=bearer(tokens["env_secrets"])))
    got = guarded_client.get(path.format(env=2), headers=bearer(tokens["env_secrets"]))
    assert got.status_code == 403 and "on environment 2" in got.json["message"]


RECEIVE_PACK_SPELLINGS = [
    ("POST", "/git/environments/1.git/./git-receive-pack"),
    ("POST", "/git/environments/1.git/objects/../git-receive-pack"),
    ("POST", "/git/environments/1.git/git-receive-pack/."),
    ("POST", "/git/environments/1.git/info/./../git-receive-pack"),
    ("GET", "/git/environments/1.git/./info/refs?service=git-receive-pack"),
    ("GET", "/git/environments/1.git/info/refs?service=git-upload-pack&service=git-receive-pack"),
    ("POST", "/git/catalog.git/./git-receive-pack"),
]


@pytest.mark.parametrize(("method", "path"), RECEIVE_PACK_SPELLINGS)
def test_every_spelling_of_receive_pack_needs_writer(guarded_client, tokens, method, path):
    """Access is decided on the normalised path and every `service`, not on a suffix."""
    got = guarded_client.open(path, method=method, headers=bearer(tokens["reader"]))
    assert got.status_code == 403, got.get_data(as_text=True)
    assert got.json["status"] == 403
    assert "needs role 'writer'" in got.json["message"]
