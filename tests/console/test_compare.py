"""The console's compare page through the real app: the picker, the redirect, the table."""

from __future__ import annotations

import pytest
from access.helpers import add_users, bearer

from gitstore.api import create_app

UI = "/ui/environments"


@pytest.fixture
def two(fuel_store):
    store = fuel_store
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    for env_id in (1, 2):
        store.nodes.create(env_id, [{"fqdn": "web-1.example"}])
    store.config.put(1, [], "astute", "values", {"mtu": 1500, "db_password": "pw-alpha-secret"})
    store.config.put(2, [], "astute", "values", {"mtu": 9000, "db_password": "pw-beta-secret"})
    return store


def test_the_picker_sends_the_browser_to_the_comparison(two, client):
    page = client.get(f"{UI}/1/compare")
    assert page.status_code == 200 and 'id="b"' in page.get_data(as_text=True)
    moved = client.get(f"{UI}/1/compare?a=2&b=1&node=web-1.example&version_a=")
    assert moved.status_code == 302
    assert moved.headers["Location"] == f"{UI}/2/compare/1?node=web-1.example"
    assert client.get(f"{UI}/1/compare?b=x").status_code == 400


def test_the_page_shows_both_sides_levels_and_commit_links(two, client):
    html = client.get(f"{UI}/1/compare/2").get_data(as_text=True)
    assert 'data-key="mtu"' in html and "<code>1500</code>" in html and "<code>9000</code>" in html
    assert html.count('href="/ui/environments/2/commits/') >= 2
    assert 'data-node="web-1.example"' in html
    assert "pw-alpha" not in html and "pw-beta" not in html
    assert "(secret)" in html


def test_the_page_needs_the_reader_role_on_both(two):
    tokens = add_users(two.root)
    client = create_app({"TESTING": True}, store=two).test_client()
    refused = client.get(f"{UI}/1/compare/2", headers=bearer(tokens["reader1"]))
    assert refused.status_code == 403
    picker = client.get(f"{UI}/1/compare", headers=bearer(tokens["reader1"]))
    assert '<option value="2"' not in picker.get_data(as_text=True)  # not readable: not offered


def test_a_pinned_environment_page_offers_its_version_as_a(two, client):
    html = client.get(f"{UI}/1?version=3").get_data(as_text=True)
    assert f'href="{UI}/1/compare?version=3"' in html
    form = client.get(f"{UI}/1/compare?version=3").get_data(as_text=True)
    assert 'name="version_a" value="3"' in form
