"""Issue 22 item 2: `If-Match` on document PUTs and key operations (optimistic concurrency)."""

from __future__ import annotations

from .helpers import ENV, assert_error

DOC = f"{ENV}/nodes/1/resources/astute/values"


def _read(client, url=DOC):
    response = client.get(url)
    assert response.status_code == 200
    return response


def test_a_put_with_the_etag_of_a_changed_document_is_412(client, env_commits):
    client.put(DOC, json={"a": 1})
    first = _read(client)
    assert (
        client.put(DOC, json={"a": 2}, headers={"If-Match": first.headers["ETag"]}).status_code
        == 204
    )
    before = env_commits()
    late = client.put(DOC, json={"a": 3}, headers={"If-Match": first.headers["ETag"]})
    assert_error(late, 412, "changed")
    assert env_commits() == before
    assert _read(client).get_json() == {"a": 2}


def test_a_commit_id_or_version_works_and_unrelated_commits_do_not_matter(client):
    client.put(DOC, json={"a": 1})
    read = _read(client)
    commit, version = read.headers["X-Gitstore-Commit"], read.headers["X-Gitstore-Version"]
    client.put(f"{ENV}/resources/astute/values", json={"g": 1})  # another document
    ok = client.put(DOC, json={"a": 2}, headers={"If-Match": f'"{commit}"'})
    assert ok.status_code == 204
    assert_error(
        client.put(DOC, json={"a": 3}, headers={"If-Match": version}),
        412,
        "nodes/1/values/astute.yaml",
    )
    assert_error(client.put(DOC, json={"a": 3}, headers={"If-Match": commit}), 412)


def test_key_operations_take_if_match(client):
    client.put(DOC, json={"a": 1})
    etag = _read(client).headers["ETag"]
    keys = f"{DOC}/keys/set"
    assert client.patch(keys, json=[["b", 2]], headers={"If-Match": etag}).status_code == 204
    assert_error(client.patch(keys, json=[["c", 3]], headers={"If-Match": etag}), 412)
    assert _read(client).get_json() == {"a": 1, "b": 2}


def test_an_unknown_version_is_412_and_a_list_is_400(client):
    client.put(DOC, json={"a": 1})
    assert_error(client.put(DOC, json={"a": 2}, headers={"If-Match": "deadbeef" * 5}), 412)
    assert_error(client.put(DOC, json={"a": 2}, headers={"If-Match": '"a", "b"'}), 400, "If-Match")
    assert client.put(DOC, json={"a": 2}, headers={"If-Match": "*"}).status_code == 204


# -- If-Match on a read (RFC 9110 13.1.1): `*` holds for any current document, a tag that is
# -- not the document's is a 412 in the one error shape, never the document itself.
def test_if_match_star_on_a_get_is_the_document(client):
    client.put(DOC, json={"a": 1})
    for url in (DOC, DOC + "?effective"):
        response = client.get(url, headers={"If-Match": "*"})
        assert response.status_code == 200 and response.get_json()["a"] == 1


def test_if_match_with_the_etag_on_a_get_is_the_document(client):
    client.put(DOC, json={"a": 1})
    etag = client.get(DOC).headers["ETag"]
    response = client.get(DOC, headers={"If-Match": f'"other", {etag}'})
    assert response.status_code == 200 and response.get_json() == {"a": 1}


def test_if_match_with_another_etag_on_a_get_is_412_in_the_error_shape(client):
    client.put(DOC, json={"a": 1})
    response = client.get(DOC, headers={"If-Match": '"nope"'})
    assert_error(response, 412, "If-Match", "nope")
    assert "a" not in response.get_json()
