"""Numbers of more digits than `int` converts (Python's 4,300) are refused or not found, not a
500: a proxy in front of gunicorn may allow request lines that long, and bodies carry them."""

from __future__ import annotations

import pytest

from .helpers import API, ENV, assert_error

HUGE = "1" * 5000


@pytest.mark.parametrize(
    "url, status, named",
    [
        (f"{API}/resource_definitions?component_id={HUGE}", 400, "component_id"),
        (f"/api/v1/nodes?cluster_id={HUGE}", 400, "cluster_id"),
        (f"/api/v1/transactions?cluster_id={HUGE}", 400, "cluster_id"),
        (f"{ENV}/resources/astute/values?version={HUGE}", 404, "version"),
        (f"/api/v1/events?env={HUGE}", 400, "env"),
    ],
)
def test_a_huge_number_in_a_query_is_a_4xx(client, url, status, named):
    assert_error(client.get(url), status, named)


def test_a_huge_component_id_in_a_body_is_not_found(client, catalog_commits):
    before = catalog_commits()
    response = client.post(
        f"{API}/resource_definitions", json={"name": "huge", "component_id": HUGE}
    )
    assert_error(response, 404, "component")
    assert catalog_commits() == before
