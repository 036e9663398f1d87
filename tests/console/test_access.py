"""The console reads as the REST reads do: a guarded store needs the reader role."""

from __future__ import annotations

import pytest
from access.helpers import add_users, bearer

from gitstore import Store
from gitstore.api import create_app


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """(client, tokens): environments 1 and 2, a store-wide reader and a reader of env 1."""
    store = Store.init(tmp_path_factory.mktemp("console") / "store")
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    for env_id in (1, 2):
        store.environments.create({"id": env_id, "components": ["fuel"]})
    tokens = add_users(store.root, {"reader": ["reader"], "reader1": ["reader:env:1"]})
    return create_app({"TESTING": True}, store=store).test_client(), tokens


@pytest.mark.parametrize("url", ["/ui/", "/ui/environments/1"])
def test_anonymous_is_refused(guarded, url):
    client, _ = guarded
    with client.get(url) as response:
        assert response.status_code == 401


def test_the_style_sheet_is_public(guarded):
    """The sign-in page needs it before anyone signs in; it holds no data."""
    client, _ = guarded
    with client.get("/ui/static/console.css") as response:
        assert response.status_code == 200


def test_a_reader_reads_every_page(guarded):
    client, tokens = guarded
    for url in ("/ui/", "/ui/environments/1", "/ui/environments/2"):
        assert client.get(url, headers=bearer(tokens["reader"])).status_code == 200, url


def test_a_reader_of_one_environment_reads_only_it(guarded):
    client, tokens = guarded
    headers = bearer(tokens["reader1"])
    assert client.get("/ui/environments/1", headers=headers).status_code == 200
    assert client.get("/ui/environments/2", headers=headers).status_code == 403
    assert client.get("/ui/", headers=headers).status_code == 403  # like the REST list
