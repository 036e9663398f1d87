"""Fuzz the ConfigDB routes: whatever the method, path, query or body, never a 5xx.

Every error answer must be the one JSON shape. The store is shared by the examples of a test,
so writes that succeed change what later examples meet (deleted environments, renamed levels).
"""

from __future__ import annotations

import json
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
