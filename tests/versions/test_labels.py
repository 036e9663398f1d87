"""Labels (named versions) and every spelling of `version=`."""

from __future__ import annotations

import pytest
from short_ids import short_id

from .helpers import ENV, assert_error, put

VALUES = f"{ENV}/resources/astute/values"


@pytest.fixture
def three(fuel_store):
    """Versions 2, 3, 4 hold a = 1, 2, 3."""
    return [put(fuel_store, "", {"a": n}).commit for n in (1, 2, 3)]


def test_create_list_and_read_by_label(three, client):
    created = client.post(f"{ENV}/labels", json={"name": "before-upgrade", "version": "3"})
    assert created.status_code == 201
    label = created.get_json()
    assert label["name"] == "before-upgrade" and label["commit"] == three[1]
    assert label["version"] == 3 and label["message"] == "label before-upgrade"
    head_label = client.post(f"{ENV}/labels", json={"name": "now", "message": "the head"})
    assert head_label.get_json()["commit"] == three[2]
    listed = client.get(f"{ENV}/labels").get_json()
    assert [item["name"] for item in listed] == ["before-upgrade", "now"]
    response = client.get(f"{VALUES}?version=before-upgrade")
    assert response.get_json() == {"a": 2}
    assert response.headers["X-Gitstore-Version"] == "3"


def test_an_existing_label_is_a_conflict_and_never_moves(three, client):
    assert client.post(f"{ENV}/labels", json={"name": "v1", "version": "2"}).status_code == 201
    assert_error(client.post(f"{ENV}/labels", json={"name": "v1"}), 409, "v1")
    assert client.get(f"{VALUES}?version=v1").get_json() == {"a": 1}


def test_bad_label_names_are_rejected(three, client):
    for name in [
        "",
        "12",
        "deadbeef",
        "main",
        "HEAD",
        "a b",
        "-x",
        "x..y",
        "x.lock",
        "a/b",
        "é",
        "x" * 101,
        None,
        3,
    ]:
        assert_error(client.post(f"{ENV}/labels", json={"name": name}), 400, "label name")
    assert client.get(f"{ENV}/labels").get_json() == []


def test_label_body_errors(three, client):
    assert_error(client.post(f"{ENV}/labels", json={"name": "ok", "version": "nope"}), 404, "nope")
    assert_error(client.post(f"{ENV}/labels", json={"name": "ok", "when": 1}), 400, "when")
    assert_error(client.post(f"{ENV}/labels", json=["ok"]), 400, "name")


def test_every_spelling_of_version_resolves(three, client):
    client.post(f"{ENV}/labels", json={"name": "first-a", "version": three[0]})
    spellings = {
        "2": 1,
        three[0]: 1,
        short_id(three[1], 7): 2,
        "first-a": 1,
        "main~1": 2,
        "main": 3,
        "HEAD~2": 1,
    }
    for version, a in spellings.items():
        response = client.get(f"{VALUES}?version={version}")
        assert response.status_code == 200, (version, response.get_json())
        assert response.get_json() == {"a": a}, version
        assert response.headers["X-Gitstore-Version"] == str(a + 1)
    assert_error(client.get(f"{VALUES}?version=9"), 404, "9")
    assert_error(client.get(f"{VALUES}?version=no-such-label"), 404, "no-such-label")
