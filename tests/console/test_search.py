"""Search: what the console finds is what REST serves (effective values at global and at each
node), matched by substring or regular expression; a bad or runaway regex is a 400."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlencode

import pytest

from gitstore.api.console import search as console_search
from gitstore.backend.repository import Author

from .pages import rows

ALICE = Author("alice", "alice@example.com")
ENV = "/api/v1/config/environments/1"
RESOURCES = ["astute", "globals", "override/plugins", "override/node"]
SEARCH = "/ui/environments/1/search"


@pytest.fixture
def data(fuel_store):
    config = fuel_store.config
    config.put(
        1, [], "astute", "values", {"net": {"mtu": 1500, "vlan": 10}, "ntp": ["ntp1"]}, ALICE
    )
    config.put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 9000}}, ALICE)
    config.put(
        1, [("nodes", "2")], "globals", "values", {"role": "compute", "mtu_note": "x"}, ALICE
    )
    config.put(
        1,
        [("nodes", "3")],
        "astute",
        "values",
        {"hostname": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"},
        ALICE,
    )


def _leaves(value, path=()):
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(child, (*path, key))
    elif path:
        yield ".".join(map(str, path)), value


def _rest_hits(client, matches, version: str = "") -> set[tuple[str, str, str, str]]:
    """(where, resource, key, value as JSON) of every REST effective leaf that matches."""
    pin = f"&version={version}" if version else ""
    scopes = [("global", "")] + [(node, f"/nodes/{node}") for node in ("1", "2", "3")]
    found = set()
    for where, prefix in scopes:
        for resource in RESOURCES:
            quoted = resource.replace("/", "%2F")
            url = f"{ENV}{prefix}/resources/{quoted}/values?effective{pin}"
            response = client.get(url)
            if response.status_code == 404 and version:
                continue  # the node did not exist then
            for key, value in _leaves(response.get_json()):
                text = json.dumps(value, sort_keys=True)
                if matches(key) or matches(text):
                    found.add((where, resource, key, json.dumps(value)))
    return found


def _page_hits(client, **params: str) -> set[tuple[str, str, str, str]]:
    parsed = rows(client, f"{SEARCH}?{urlencode(params)}", "resource")
    return {(r["node"] or "global", r["resource"], r["key"], r["value"]) for r in parsed.rows}


@pytest.mark.parametrize("text", ["mtu", "MTU", "compute", "ntp1", "9000"])
def test_substring_search_finds_what_rest_serves(client, data, text):
    expected = _rest_hits(client, lambda s: text.casefold() in s.casefold())
    assert expected
    assert _page_hits(client, q=text) == expected


@pytest.mark.parametrize("pattern", [r"^net\.(mtu|vlan)$", r"^9\d+$", r"comp.te", r"\[.ntp"])
def test_regex_search_finds_what_rest_serves(client, data, pattern):
    compiled = re.compile(pattern)
    expected = _rest_hits(client, lambda s: compiled.search(s) is not None)
    assert expected
    assert _page_hits(client, q=pattern, mode="regex") == expected


def test_search_travels_in_time(client, data, fuel_store):
    version = str(fuel_store.versions.history(1, limit=1).data["entries"][0]["version"])
    fuel_store.config.put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 9100}}, ALICE)
    expected = _rest_hits(client, lambda s: "9000" in s, version)
    assert _page_hits(client, q="9000", version=version) == expected != set()
    assert _page_hits(client, q="9000") == set()


def test_hits_link_to_the_node_view_keeping_the_version(client, data):
    parsed = rows(client, f"{SEARCH}?q=9000&version=3", "resource")
    assert "/ui/environments/1/nodes/1?version=3" in parsed.hrefs


@pytest.mark.parametrize(
    ("pattern", "words"),
    [("(", "invalid"), ("a" * 201, "at most 200"), ("[z-a]", "invalid")],
)
def test_a_bad_regex_is_a_400_naming_it(client, data, pattern, words):
    response = client.get(SEARCH, query_string={"q": pattern, "mode": "regex"})
    assert response.status_code == 400
    body = response.get_json()
    assert body["status"] == 400 and words in body["message"]
    if len(pattern) < 20:
        assert repr(pattern) in body["message"]


def test_a_runaway_regex_is_stopped_and_a_400(client, data):
    started = time.monotonic()
    response = client.get(SEARCH, query_string={"q": "(a|aa)+$", "mode": "regex"})
    assert response.status_code == 400
    assert "took longer than" in response.get_json()["message"]
    assert time.monotonic() - started < 60  # generous: the limit is a few seconds


@pytest.mark.parametrize(
    "pattern", ["(?(DEFINE)(?<a>(?&a)))(?&a)", "a(?R)?b", "(a(?1)?b)", "(?P<x>a(?P>x)?)"]
)
def test_a_recursive_regex_is_a_400(client, data, pattern):
    # `(?&a)` calling itself grew a worker by 0.5 GB in a second and ended in a MemoryError (a
    # 500); no search of keys and values needs recursion.
    response = client.get(SEARCH, query_string={"q": pattern, "mode": "regex"})
    assert response.status_code == 400, response.get_data(as_text=True)[:200]
    assert "recursion" in response.get_json()["message"]


def test_an_unknown_mode_is_a_400(client, data):
    response = client.get(SEARCH, query_string={"q": "x", "mode": "glob"})
    assert response.status_code == 400 and "mode" in response.get_json()["message"]


def test_secrets_never_match(client, data):
    assert client.patch(ENV, json={"secret_keys": ["db.pass"]}).status_code == 200
    client.put(f"{ENV}/resources/globals/values", json={"db": {"pass": "hunter2-secret"}})
    assert _page_hits(client, q="hunter2") == set()
    page = client.get(SEARCH, query_string={"q": "db.pass"}).get_data(as_text=True)
    assert "db.pass" in page and "hunter2" not in page


def test_a_search_stops_at_its_key_bound_and_says_so(client, data, monkeypatch):
    monkeypatch.setattr(console_search, "MAX_KEYS", 3)
    page = client.get(SEARCH, query_string={"q": "a"}).get_data(as_text=True)
    assert "the search stopped after 3 keys" in page


def test_at_most_max_hits_are_listed_and_the_page_says_so(client, data, monkeypatch):
    monkeypatch.setattr(console_search, "MAX_HITS", 2)
    assert len(_page_hits(client, q="mtu")) == 2
    page = client.get(SEARCH, query_string={"q": "mtu"}).get_data(as_text=True)
    assert "only the first 2 matches are listed" in page
