"""`/api/v1/config/components`: create, read, partial update, delete (issue 2)."""

from __future__ import annotations

from .helpers import API, ENV, assert_error


def _create(client, body):
    return client.post(f"{API}/components", json=body)


def test_post_creates_with_ids_and_returns_201(client, catalog_commits):
    before = catalog_commits()
    response = _create(
        client,
        {
            "name": "nova",
            "resource_definitions": [
                {"name": "nova_config", "content": {"debug": False}},
                {"name": "nova/cells"},
            ],
        },
    )
    assert response.status_code == 201
    body = response.get_json()
    assert body["id"] == 2 and body["name"] == "nova"
    definitions = body["resource_definitions"]
    assert [d["name"] for d in definitions] == ["nova_config", "nova/cells"]
    assert [d["id"] for d in definitions] == [5, 6]
    assert all(d["component_id"] == 2 for d in definitions)
    assert definitions[0]["content"] == {"debug": False}
    assert response.headers["X-Gitstore-Commit"]
    assert catalog_commits() == before + 1


def test_list_and_get(client):
    listing = client.get(f"{API}/components")
    assert listing.status_code == 200
    assert [c["name"] for c in listing.get_json()] == ["fuel"]
    assert listing.headers["X-Gitstore-Commit"]
    one = client.get(f"{API}/components/1")
    assert one.status_code == 200
    assert [d["name"] for d in one.get_json()["resource_definitions"]] == [
        "astute",
        "globals",
        "override/plugins",
        "override/node",
    ]


def test_get_unknown_component_is_404(client):
    assert_error(client.get(f"{API}/components/99"), 404, "99")


def test_duplicate_name_is_409(client, catalog_commits):
    before = catalog_commits()
    assert_error(_create(client, {"name": "fuel"}), 409, "fuel")
    assert catalog_commits() == before


def test_duplicate_definition_name_is_409(client):
    assert_error(
        _create(client, {"name": "other", "resource_definitions": [{"name": "astute"}]}),
        409,
        "astute",
    )


def test_missing_or_bad_fields_are_400(client):
    assert_error(_create(client, {}), 400, "name")
    assert_error(_create(client, {"name": "a/b"}), 400, "name")
    assert_error(
        _create(client, {"name": "x", "resource_definitions": {}}), 400, "resource_definitions"
    )
    assert_error(_create(client, {"name": "x", "colour": "red"}), 400, "colour")
    assert_error(_create(client, {"name": "x", "resource_definitions": [{}]}), 400, "name")
    assert_error(_create(client, {"name": "x", "id": 7}), 400, "id")


def test_reserved_or_numeric_resource_names_are_400(client):
    for name in ("a/values", "overrides", "x/keys/y", "123", "a//b", ".hidden", "a/../b"):
        response = _create(client, {"name": "x", "resource_definitions": [{"name": name}]})
        assert_error(response, 400, "resource name")


def test_all_digit_component_names_are_400(client, catalog_commits):
    """`2` could never be named: `component_id: "2"` and `components: ["2"]` mean id 2."""
    before = catalog_commits()
    assert_error(_create(client, {"name": "2"}), 400, "name", "'2'", "all digits")
    assert_error(client.put(f"{API}/components/1", json={"name": "07"}), 400, "name", "digits")
    assert catalog_commits() == before
    assert _create(client, {"name": "2a"}).status_code == 201


def test_a_bad_name_character_is_the_one_named(client):
    assert_error(_create(client, {"name": "a\\b"}), 400, "name", "must not contain '\\'")
    assert_error(_create(client, {"name": "a/b"}), 400, "name", "must not contain '/'")


def test_put_and_patch_are_partial_updates(client, catalog_commits):
    _create(client, {"name": "nova", "resource_definitions": [{"name": "a"}, {"name": "b"}]})
    before = catalog_commits()
    renamed = client.put(f"{API}/components/2", json={"name": "nova2"})
    assert renamed.status_code == 200
    assert renamed.get_json()["name"] == "nova2"
    assert len(renamed.get_json()["resource_definitions"]) == 2
    assert renamed.headers["X-Gitstore-Commit"]
    assert catalog_commits() == before + 1
    patched = client.patch(f"{API}/components/2", json={"name": "nova3"})
    assert patched.status_code == 200
    assert [d["name"] for d in patched.get_json()["resource_definitions"]] == ["a", "b"]
    assert client.get(f"{API}/components/2").get_json()["name"] == "nova3"
    assert catalog_commits() == before + 2


def test_rename_to_existing_name_is_409(client):
    _create(client, {"name": "nova"})
    assert_error(client.put(f"{API}/components/2", json={"name": "fuel"}), 409, "fuel")


def test_update_cannot_change_id(client):
    assert_error(client.put(f"{API}/components/1", json={"id": 5}), 400, "id")
    same = client.put(f"{API}/components/1", json={"id": 1})
    assert same.status_code == 200 and same.get_json()["name"] == "fuel"


def test_put_resource_definitions_adds_keeps_and_removes(client):
    _create(client, {"name": "nova", "resource_definitions": [{"name": "a"}, {"name": "b"}]})
    response = client.put(
        f"{API}/components/2",
        json={"resource_definitions": [{"id": 5, "content": {"k": 1}}, {"name": "c"}]},
    )
    assert response.status_code == 200
    definitions = response.get_json()["resource_definitions"]
    assert [(d["id"], d["name"], d["content"]) for d in definitions] == [
        (5, "a", {"k": 1}),
        (7, "c", {}),
    ]
    assert_error(client.get(f"{API}/resource_definitions/6"), 404, "6")


def test_put_resource_definitions_adopts_an_orphan(client):
    orphan = client.post(f"{API}/resource_definitions", json={"name": "loose"}).get_json()
    response = client.patch(
        f"{API}/components/1", json={"resource_definitions": [1, 2, 3, 4, orphan["id"]]}
    )
    assert response.status_code == 200
    assert client.get(f"{API}/resource_definitions/{orphan['id']}").get_json()["component_id"] == 1
    assert client.get(f"{API}/resource_definitions?component_id=").get_json() == []


def test_put_resource_definitions_of_another_component_is_409(client):
    _create(client, {"name": "nova", "resource_definitions": [{"name": "a"}]})
    assert_error(
        client.put(f"{API}/components/2", json={"resource_definitions": [1]}), 409, "component 1"
    )
    assert_error(client.put(f"{API}/components/2", json={"resource_definitions": [99]}), 404, "99")
    assert_error(
        client.put(f"{API}/components/2", json={"resource_definitions": [5, 5]}), 400, "twice"
    )


def test_put_removing_definitions_with_data_is_409(client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    response = client.put(f"{API}/components/1", json={"resource_definitions": [2, 3, 4]})
    assert_error(response, 409, "astute", "1")
    assert len(client.get(f"{API}/components/1").get_json()["resource_definitions"]) == 4


def test_delete_removes_its_definitions(client, catalog_commits):
    _create(client, {"name": "nova", "resource_definitions": [{"name": "a"}]})
    before = catalog_commits()
    response = client.delete(f"{API}/components/2")
    assert response.status_code == 204
    assert response.get_data() == b""
    assert response.headers["X-Gitstore-Commit"]
    assert catalog_commits() == before + 1
    assert_error(client.get(f"{API}/components/2"), 404, "2")
    assert_error(client.get(f"{API}/resource_definitions/5"), 404, "5")


def test_delete_while_an_environment_holds_data_is_409_naming_it(client, catalog_commits):
    client.post(f"{API}/environments", json={"id": 7, "components": ["fuel"]})
    client.put(f"{API}/environments/7/resources/globals/values", json={"a": 1})
    before = catalog_commits()
    body = assert_error(client.delete(f"{API}/components/1"), 409, "fuel", "7", "globals")
    assert "environments" in body["message"]
    assert catalog_commits() == before
    assert client.get(f"{API}/environments/7/resources/globals/values").get_json() == {"a": 1}


def test_delete_of_attached_component_without_data_is_allowed(client):
    assert client.delete(f"{API}/components/1").status_code == 204
    assert client.get(f"{API}/environments/1").get_json()["components"] == []


def test_rename_while_attached_to_an_environment_is_409(fuel_store, client):
    client.put(f"{ENV}", json={"components": []})
    assert client.put(f"{API}/components/1", json={"name": "x"}).status_code == 200
    client.put(f"{ENV}", json={"components": ["x"]})
    assert_error(client.put(f"{API}/components/1", json={"name": "y"}), 409, "x", "1")
