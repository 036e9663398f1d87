"""Fuzz the ConfigDB routes: whatever the method, path, query or body, never a 5xx.

Every error answer must be the one JSON shape. The store is shared by the examples of a test,
so writes that succeed change what later examples meet (deleted environments, renamed levels).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import API, ERROR_KEYS

FUZZ = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

METHODS = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
WORDS = [
    "..",
    ".",
    "",
    "resources",
    "values",
    "overrides",
    "keys",
    "set",
    "delete",
    "nodes",
    "1",
    "2",
    "0",
    "astute",
    "override",
    "plugins",
    "hierarchy_levels",
    "global",
    "node-1.domain.tld",
    "environments",
    "components",
    "resource_definitions",
    "%00",
    "ü",
    "\x7f",
    "a/b",
    "99999999999999999999999",
    "9" * 300,
    "x" * 300,
]
SEGMENT = st.one_of(st.sampled_from(WORDS), st.text(max_size=12))
PREFIXES = st.sampled_from(
    [
        f"{API}/components",
        f"{API}/resource_definitions",
        f"{API}/environments",
        f"{API}/environments/1",
        f"{API}/environments/1/nodes/1/resources",
        f"{API}/environments/1/resources",
        f"{API}/environments/1/hierarchy_levels",
        API,
        "",
    ]
)
SUFFIXES = st.sampled_from(
    ["", "/values", "/overrides", "/values/keys/set", "/overrides/keys/delete", "/keys/set"]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
QUERY = st.dictionaries(
    st.sampled_from(["effective", "show_lookup", "key", "version", "component_id"]),
    st.one_of(
        st.sampled_from(["", "1", "no", "maybe", "main~1", "a.b.0", "..", "1"]), st.text(max_size=8)
    ),
    max_size=3,
)


def _path(prefix: str, segments: list[str], suffix: str) -> str:
    encoded = "/".join(quote(segment, safe="/") for segment in segments)
    path = f"{prefix}/{encoded}{suffix}" if segments else f"{prefix}{suffix}"
    return "/" + path.lstrip("/")  # `//x` would name a host to the test client


def _check(response, method: str) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code < 400 or method == "HEAD":
        return
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert isinstance(body, dict) and set(body) <= ERROR_KEYS and "message" in body
    assert body["status"] == response.status_code


@pytest.fixture
def inventory_client(client, inventory):
    client.put(
        f"{API}/environments/1/nodes/1/resources/astute/values", json={"a": {"b": [1, 2]}, "s": "x"}
    )
    return client


@FUZZ
@given(
    method=METHODS,
    prefix=PREFIXES,
    segments=st.lists(SEGMENT, max_size=4),
    suffix=SUFFIXES,
    query=QUERY,
    body=JSON,
)
def test_random_routes_never_fail_with_5xx(
    inventory_client, method, prefix, segments, suffix, query, body
):
    url = _path(prefix, segments, suffix)
    if query:
        url += "?" + urlencode(query)
    response = inventory_client.open(url, method=method, json=body)
    _check(response, method)


TARGETS = st.sampled_from(
    [
        ("POST", f"{API}/components"),
        ("PUT", f"{API}/components/1"),
        ("POST", f"{API}/resource_definitions"),
        ("PATCH", f"{API}/resource_definitions/2"),
        ("PUT", f"{API}/resource_definitions/2/keys/set"),
        ("POST", f"{API}/environments"),
        ("PATCH", f"{API}/environments/1"),
        ("PUT", f"{API}/environments/1/hierarchy_levels/nodes"),
        ("PUT", f"{API}/environments/1/nodes/1/resources/astute/values"),
        ("PUT", f"{API}/environments/1/nodes/2/resources/globals/values/keys/set"),
        ("PATCH", f"{API}/environments/1/resources/astute/overrides/keys/delete"),
    ]
)
FIELDS = st.sampled_from(
    [
        "id",
        "name",
        "components",
        "hierarchy_levels",
        "merge",
        "resource_definitions",
        "content",
        "component_id",
        "schema",
        "secret_keys",
        "parent",
        "values",
    ]
)
OBJECTS = st.dictionaries(FIELDS, JSON | st.lists(JSON | SEGMENT, max_size=3), max_size=4)
KEY_PATHS = st.lists(st.lists(st.one_of(SEGMENT, st.integers(-3, 5), JSON), max_size=4), max_size=3)
RAW = st.binary(max_size=20).map(lambda raw: raw.decode("latin-1"))


@FUZZ
@given(target=TARGETS, body=st.one_of(OBJECTS, KEY_PATHS, JSON, RAW))
def test_random_bodies_never_fail_with_5xx(inventory_client, target, body):
    method, url = target
    data = body if isinstance(body, str) else json.dumps(body)
    response = inventory_client.open(
        url,
        method=method,
        data=data.encode("utf-8", "surrogatepass"),
        content_type="application/json",
    )
    _check(response, method)


# -- every GET route, any query --------------------------------------------------------------
#: Every query parameter some view reads (grep `request.args` in gitstore/api and webhooks/).
PARAMETERS = [
    "all", "catalog_version", "cluster_id", "component_id", "effective", "end", "env",
    "explain", "fetch_related", "fqdn", "from", "graph_type", "key", "levels", "limit", "node",
    "only_latest", "parents_for", "path", "resource", "resources", "reveal", "service",
    "show_lookup", "since", "start", "tags", "to", "user", "version",
]  # fmt: skip
#: Digits that `str.isdigit` accepts and `int` refuses, and other numbers a parser may trip on.
AWKWARD = [
    "\u00b2",
    "\u2460",
    "\u0663",
    "1\u00b2",
    "\uff11",
    "-1",
    "0",
    "1e3",
    "99999999999999999999",
]
QUERY_VALUES = st.one_of(
    st.sampled_from(AWKWARD + ["", "1", "main", "main~1", "astute"]), st.text(max_size=6)
)
#: What to put in each kind of route argument (a real entity where one exists).
ARGUMENTS = {"int": "1", "path": "nodes/1", "default": "astute"}
#: Routes whose one path argument stands for several segments.
MORE_ROUTES = [
    f"{API}/environments/1/resources/astute/values",
    f"{API}/environments/1/nodes/1/resources/astute/overrides",
    f"{API}/environments/1/nodes/1/resources",
    "/git/environments/1.git/info/refs",
]


def _get_routes(app) -> list[str]:
    """Every GET route with its arguments filled in."""
    routes = []
    for rule in app.url_map.iter_rules():
        if "GET" not in rule.methods or rule.endpoint == "static":
            continue
        url = rule.rule
        for name, converter in rule._converters.items():
            kind = type(converter).__name__
            value = ARGUMENTS.get({"IntegerConverter": "int", "PathConverter": "path"}.get(kind))
            if kind == "AnyConverter":
                value = re.search(r"\(\?:?([^|)]+)", converter.regex).group(1)
            filled = quote(value or ARGUMENTS["default"], safe="/")
            url = re.sub(rf"<(?:[^<>:]+(?:\([^)]*\))?:)?{name}>", filled, url)
        routes.append(url)
    return sorted(routes) + MORE_ROUTES


def test_every_get_route_answers_awkward_versions_without_5xx(inventory_client):
    for url in _get_routes(inventory_client.application):
        for value in ("\u00b2", "\u2460"):
            _check(inventory_client.get(url + "?" + urlencode({"version": value})), "GET")


@pytest.mark.parametrize("service", ["\u00b2", "x", "git-upload-archive", ""])
def test_git_is_asked_only_for_its_smart_services(inventory_client, service):
    """Found by the property below: git http-backend answered `service=²` in plain text."""
    response = inventory_client.get("/git/environments/1.git/info/refs?service=" + service)
    assert response.status_code == 400
    _check(response, "GET")
    assert "'service'" in response.get_json()["message"]


@FUZZ
@given(data=st.data())
def test_every_get_route_answers_any_query_without_5xx(inventory_client, data):
    url = data.draw(st.sampled_from(_get_routes(inventory_client.application)))
    query = data.draw(st.dictionaries(st.sampled_from(PARAMETERS), QUERY_VALUES, max_size=3))
    _check(inventory_client.get(url + "?" + urlencode(query)), "GET")
