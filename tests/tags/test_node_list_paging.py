"""The node lists page and filter: `?role=&tag=&status=&fqdn_contains=&limit=&marker=` on
`/api/v1/clusters/<id>/nodes` and `/api/v1/nodes` (docs/api.md, "Node lists")."""

from __future__ import annotations

import pytest

from gitstore.nodequery import MAX_LIMIT

from .conftest import API, CLUSTER, assert_error

NODES = [
    ("ctl-1.example.net", ["controller"], "ready"),
    ("cmp-2.example.net", ["compute"], "ready"),
    ("cmp-3.example.net", ["compute"], "error"),
    ("osd-4.storage.example.net", ["ceph-osd"], "provisioned"),
    ("cmp-5.example.net", ["compute"], "ready"),
]


@pytest.fixture
def nodes(add_node):
    return [add_node(fqdn, roles, status=status) for fqdn, roles, status in NODES]


def _ids(response) -> list[int]:
    assert response.status_code == 200, response.get_json()
    return [node["id"] for node in response.get_json()]


def test_without_arguments_the_list_is_whole_and_unchanged(api, nodes):
    response = api.get(f"{CLUSTER}/nodes")
    assert _ids(response) == [1, 2, 3, 4, 5]
    assert "X-Total-Count" not in response.headers and "Link" not in response.headers
    assert response.get_json() == nodes  # the same entities POST answered


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("role=compute", [2, 3, 5]),
        ("role=compute&status=ready", [2, 5]),
        ("status=provisioned", [4]),
        ("fqdn_contains=STORAGE", [4]),
        ("fqdn_contains=cmp-&status=error", [3]),
        ("tag=controller", [1]),  # Newton's controller role carries the controller tag
        ("role=nobody", []),
    ],
)
def test_filters_select_and_say_how_many_match(api, nodes, query, expected):
    response = api.get(f"{CLUSTER}/nodes?{query}")
    assert _ids(response) == expected
    assert response.headers["X-Total-Count"] == str(len(expected))


def test_pages_follow_the_next_link_to_the_end(api, nodes):
    url, pages = f"{CLUSTER}/nodes?role=compute&limit=2", []
    while url:
        response = api.get(url)
        pages.append(_ids(response))
        assert response.headers["X-Total-Count"] == "3"
        link = response.headers.get("Link")
        url = link.split(">")[0].lstrip("<") if link else None
        assert link is None or link.endswith('; rel="next"')
    assert pages == [[2, 3], [5]]


def test_a_marker_starts_after_that_id_even_when_it_is_gone(api, nodes):
    assert _ids(api.get(f"{CLUSTER}/nodes?limit=10&marker=2")) == [3, 4, 5]
    assert api.delete(f"{CLUSTER}/nodes/3").status_code in (200, 204)
    assert _ids(api.get(f"{CLUSTER}/nodes?limit=10&marker=3")) == [4, 5]


def test_the_store_wide_list_pages_and_filters_too(api, nodes):
    response = api.get(f"{API}/nodes?role=compute&limit=1&marker=2")
    assert _ids(response) == [3]
    assert response.headers["Link"].startswith(f"<{API}/nodes?")
    assert _ids(api.get(f"{API}/nodes?fqdn=cmp-5.example.net&role=compute")) == [5]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (f"limit={MAX_LIMIT + 1}", ["limit", str(MAX_LIMIT)]),
        ("limit=0", ["limit"]),
        ("limit=ten", ["limit", "ten"]),
        ("limit=²", ["limit"]),
        ("marker=x", ["marker"]),
        ("fqdn_contains=" + "a" * 300, ["fqdn_contains", "255"]),
    ],
)
def test_a_bad_page_or_filter_is_a_400_naming_it(api, nodes, query, words):
    for url in (f"{CLUSTER}/nodes?{query}", f"{API}/nodes?{query}"):
        assert_error(api.get(url), 400, *words)
