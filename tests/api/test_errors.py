"""One JSON error shape for every failure: unknown routes and methods, bad bodies, bugs."""

from __future__ import annotations

import pytest

from gitstore import errors
from gitstore.api import create_app
from gitstore.api.errors import STATUS, status_of

from .helpers import API, ENV, assert_error


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/api",
        "/api/v1/config",
        f"{API}/nope",
        f"{API}/components/abc",
        f"{API}/components/1/extra",
        f"{API}/environments/x",
        f"{API}/environments/-1",
        f"{API}/resource_definitions/1/keys",
        f"{ENV}/resources",
        f"{ENV}/resources/astute",
        f"{ENV}/resources/astute/documents",
        f"{ENV}/nodes/1",
        "/api/v2/config/components",
    ],
)
def test_unknown_routes_are_404_in_the_error_shape(client, url):
    assert_error(client.get(url), 404)


def test_404_names_the_request(client):
    assert_error(client.get(f"{API}/nope"), 404, "GET", f"{API}/nope")


@pytest.mark.parametrize(
    "method, url, allowed",
    [
        ("DELETE", f"{API}/components", {"GET", "POST"}),
        ("POST", f"{API}/components/1", {"GET", "PUT", "PATCH", "DELETE"}),
        ("PATCH", f"{API}/environments", {"GET", "POST"}),
        ("POST", f"{API}/environments/1/hierarchy_levels/nodes", {"GET", "PUT"}),
        ("DELETE", f"{API}/environments/1/hierarchy_levels", {"GET"}),
        ("GET", f"{API}/resource_definitions/1/keys/set", {"PUT", "PATCH"}),
        ("DELETE", f"{ENV}/resources/astute/values", {"GET", "PUT", "PATCH"}),
        ("POST", f"{ENV}/resources/astute/values/keys/set", {"GET", "PUT", "PATCH"}),
    ],
)
def test_unknown_methods_are_405_with_allow(client, method, url, allowed):
    response = client.open(url, method=method)
    assert_error(response, 405, method)
    assert allowed <= set(response.headers["Allow"].replace(" ", "").split(","))


@pytest.mark.parametrize(
    "method, url",
    [
        ("POST", f"{API}/components"),
        ("PUT", f"{API}/components/1"),
        ("POST", f"{API}/resource_definitions"),
        ("PATCH", f"{API}/resource_definitions/1"),
        ("POST", f"{API}/environments"),
        ("PUT", ENV),
        ("PUT", f"{ENV}/hierarchy_levels/nodes"),
        ("PUT", f"{ENV}/resources/astute/values"),
        ("PATCH", f"{ENV}/resources/astute/overrides/keys/set"),
    ],
)
def test_malformed_json_is_400_on_every_write(client, method, url):
    for raw in ("{", "nul", "\xff", "[1,]"):
        response = client.open(
            url, method=method, data=raw.encode("latin-1"), content_type="application/json"
        )
        assert_error(response, 400, "JSON")


def test_non_object_bodies_are_400(client):
    for url, method in (
        (f"{API}/components", "POST"),
        (f"{API}/environments", "POST"),
        (f"{API}/resource_definitions", "POST"),
        (ENV, "PATCH"),
    ):
        assert_error(client.open(url, method=method, json=[1]), 400, "object")


def test_schema_violations_list_each_problem(client):
    schema = {"type": "object", "properties": {"port": {"type": "integer"}}}
    client.post(
        f"{API}/resource_definitions", json={"name": "svc", "component_id": 1, "schema": schema}
    )
    response = client.put(f"{ENV}/resources/svc/values", json={"port": "eighty"})
    body = assert_error(response, 400, "port")
    assert body["errors"][0]["key"] == "port"
    assert client.get(f"{ENV}/resources/svc/values").get_json() == {}


def test_an_unexpected_exception_is_a_500_in_the_error_shape(fuel_store):
    app = create_app({"TESTING": False}, store=fuel_store)

    def broken():
        raise RuntimeError("boom")

    app.add_url_rule("/broken", "broken", broken)
    response = app.test_client().get("/broken")
    body = assert_error(response, 500, "bug")
    assert "boom" not in body["message"]


def test_every_error_class_maps_to_a_4xx_or_503():
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, errors.GitstoreError):
            exc = cls.__new__(cls)
            assert 400 <= status_of(exc) < 500 or status_of(exc) == 503, cls
    assert STATUS[errors.UnknownRevision] == 404
    assert STATUS[errors.Conflict] == 409


@pytest.mark.parametrize(
    "raw, word",
    [
        ('{"a": NaN}', "finite"),
        ('{"a": -Infinity}', "finite"),
        ('{"a": 1e400}', "finite"),
        ("[" * 50_000, "deep"),
        ('{"a":' * 100 + "1" + "}" * 100, "deeper"),
        ('{"\\ud800": 1}', "Unicode"),
        ('{"a": "\\udfff"}', "Unicode"),
    ],
)
def test_bodies_that_cannot_be_stored_faithfully_are_400(client, env_commits, raw, word):
    before = env_commits()
    response = client.put(
        f"{ENV}/resources/astute/values", data=raw, content_type="application/json"
    )
    assert_error(response, 400, word)
    assert env_commits() == before


def test_key_paths_that_would_nest_too_deeply_are_400(client):
    url = f"{ENV}/resources/astute/values/keys/set"
    assert_error(client.put(url, json=[["a"] * 100 + [1]]), 400, "longer")
    assert client.put(url, json=[["a"] * 60 + [1]]).status_code == 204
    deep_value = {"q": {"r": {"s": {"t": {"u": 1}}}}}
    assert_error(client.put(url, json=[["a"] * 59 + ["z", deep_value]]), 400, "deeper")
