"""`/environments/<id>/<levels>resources/<resource>/values|overrides`: documents and queries."""

from __future__ import annotations

import pytest

from .helpers import API, ENV, assert_error

ASTUTE = f"{ENV}/nodes/1/resources/astute"


@pytest.fixture
def layered(client):
    """Global values and overrides plus node 1 values and overrides for `astute`."""
    client.put(
        f"{ENV}/resources/astute/values",
        json={"a": 1, "b": {"x": 1, "y": 1}, "c": [1], "g": "global"},
    )
    client.put(f"{ENV}/resources/astute/overrides", json={"a": 2, "b": {"y": 2}})
    client.put(f"{ASTUTE}/values", json={"a": 3, "b": {"z": 3}, "n": "node"})
    client.put(f"{ASTUTE}/overrides", json={"c": [9]})
    return client


def test_put_then_get_one_document(client, env_commits):
    before = env_commits()
    response = client.put(f"{ASTUTE}/values", json={"k": "v", "nested": {"l": [1, 2]}})
    assert response.status_code == 204 and response.get_data() == b""
    assert response.headers["X-Gitstore-Commit"]
    assert env_commits() == before + 1
    read = client.get(f"{ASTUTE}/values")
    assert read.status_code == 200
    assert read.get_json() == {"k": "v", "nested": {"l": [1, 2]}}
    assert read.headers["X-Gitstore-Commit"] == response.headers["X-Gitstore-Commit"]


def test_put_replaces_the_whole_document(client):
    client.put(f"{ASTUTE}/values", json={"a": 1, "b": 2})
    client.put(f"{ASTUTE}/values", json={"c": 3})
    assert client.get(f"{ASTUTE}/values").get_json() == {"c": 3}


def test_values_and_overrides_are_separate_documents(fuel_store, client):
    client.put(f"{ASTUTE}/overrides", json={"o": 1})
    client.put(f"{ASTUTE}/values", json={"v": 1})
    client.put(f"{ASTUTE}/values", json={"v": 2})
    assert client.get(f"{ASTUTE}/overrides").get_json() == {"o": 1}
    snapshot = fuel_store.environment_repo(1).snapshot()
    assert snapshot.read("nodes/1/overrides/astute.yaml") == b"o: 1\n"
    assert snapshot.read("nodes/1/values/astute.yaml") == b"v: 2\n"


def test_level_without_document_is_empty_mapping(client):
    client.put(f"{ENV}/nodes/1/resources/globals/values", json={"x": 1})  # node 1 is known
    for url in (
        f"{ASTUTE}/values",
        f"{ENV}/resources/astute/overrides",
        f"{ASTUTE}/values?effective",
    ):
        response = client.get(url)
        assert response.status_code == 200 and response.get_json() == {}
    assert_error(client.get(f"{ENV}/nodes/77/resources/globals/values?effective"), 404, "77")


def test_resource_names_with_slash_and_ids(fuel_store, client):
    client.put(f"{ENV}/nodes/1/resources/override/plugins/values", json={"p": 1})
    assert fuel_store.environment_repo(1).snapshot().exists("nodes/1/values/override/plugins.yaml")
    assert client.get(f"{ENV}/nodes/1/resources/3/values").get_json() == {"p": 1}
    client.put(f"{ENV}/resources/1/overrides", json={"i": 1})
    assert client.get(f"{ENV}/resources/astute/overrides").get_json() == {"i": 1}


def test_resource_not_attached_to_the_environment_is_404(client):
    client.post(
        f"{API}/components",
        json={"name": "nova", "resource_definitions": [{"name": "nova_config"}]},
    )
    assert_error(
        client.get(f"{ENV}/resources/nova_config/values"), 404, "nova_config", "environment 1"
    )
    assert_error(client.put(f"{ENV}/resources/5/values", json={}), 404, "5", "environment 1")
    assert_error(client.get(f"{ENV}/resources/unknown/values"), 404, "unknown")


def test_document_must_be_an_object(client, env_commits):
    before = env_commits()
    for body in ("[1]", '"text"', "3", "null"):
        response = client.put(f"{ASTUTE}/values", data=body, content_type="application/json")
        assert_error(response, 400, "object")
    assert_error(
        client.put(f"{ASTUTE}/values", data="{nope", content_type="application/json"), 400, "JSON"
    )
    assert_error(client.put(f"{ASTUTE}/values", data=""), 400, "empty")
    assert env_commits() == before


def test_patch_of_a_document_is_405(client):
    body = assert_error(client.patch(f"{ASTUTE}/values", json={}), 405, "PUT")
    assert "keys" in body["message"]


def test_unknown_environment_is_404(client):
    assert_error(client.get(f"{API}/environments/5/resources/astute/values"), 404, "environment 5")


def test_wrong_level_name_is_404_naming_the_expected_level(client):
    assert_error(client.get(f"{ENV}/role/1/resources/astute/values"), 404, "role", "nodes")
    assert_error(client.put(f"{ENV}/role/1/resources/astute/values", json={}), 404, "nodes")


def test_too_many_levels_is_404(client):
    assert_error(client.get(f"{ENV}/nodes/1/rack/2/resources/astute/values"), 404, "nodes")


def test_level_without_value_is_404(client):
    assert_error(client.get(f"{ENV}/nodes/resources/astute/values/x"), 404)


@pytest.mark.parametrize(
    "value, word",
    [
        ("..", ".."),
        (".hidden", ".hidden"),
        ("a%00b", "control"),
        ("a%09b", "control"),
        ("a%5Cb", "must not contain '\\'"),
        ("x" * 201, "longer"),
    ],
)
def test_bad_level_values_are_400(client, value, word, env_commits):
    before = env_commits()
    for method in ("get", "put"):
        url = f"{ENV}/nodes/{value}/resources/astute/values"
        response = getattr(client, method)(url, json={"a": 1})
        assert_error(response, 400, "nodes", word)
    assert env_commits() == before


@pytest.mark.parametrize("level", ["..", ".x", "a%01"])
def test_bad_level_names_in_the_path_are_400(client, level):
    assert_error(client.get(f"{ENV}/{level}/1/resources/astute/values"), 400, "hierarchy level")


def test_bad_resource_segments_are_400(client):
    assert_error(client.get(f"{ENV}/resources/../values"), 400, "resource")
    assert_error(client.get(f"{ENV}/resources/override//plugins/values"), 400, "resource")
    assert_error(client.get(f"{ENV}/resources/a%00/values"), 400, "resource")


def test_node_addressed_by_fqdn(fuel_store, client, inventory):
    client.put(f"{ENV}/nodes/node-2.domain.tld/resources/astute/values", json={"f": 1})
    assert fuel_store.environment_repo(1).snapshot().exists("nodes/2/values/astute.yaml")
    assert client.get(f"{ENV}/nodes/2/resources/astute/values").get_json() == {"f": 1}
    by_fqdn = client.get(f"{ENV}/nodes/node-2.domain.tld/resources/astute/values?effective")
    assert by_fqdn.get_json() == {"f": 1}
    assert client.get(f"{ENV}/hierarchy_levels/nodes").get_json()["values"] == ["2"]
    unknown = client.get(f"{ENV}/nodes/node-9.domain.tld/resources/astute/values")
    assert_error(unknown, 404, "node-9.domain.tld")  # issue 22: never the global values


def test_effective_merges_global_then_levels(layered):
    response = layered.get(f"{ASTUTE}/values?effective")
    assert response.status_code == 200
    assert response.get_json() == {
        "a": 3,
        "b": {"x": 1, "y": 2, "z": 3},
        "c": [9],
        "g": "global",
        "n": "node",
    }


def test_effective_at_global_and_for_a_sibling(layered):
    expected_global = {"a": 2, "b": {"x": 1, "y": 2}, "c": [1], "g": "global"}
    assert layered.get(f"{ENV}/resources/astute/values?effective").get_json() == expected_global
    sibling = layered.get(f"{ENV}/nodes/2/resources/astute/values?effective")
    assert_error(sibling, 404, "'2'")  # a node without data nor inventory record is unknown


def test_effective_works_on_the_overrides_url_too(layered):
    assert layered.get(f"{ASTUTE}/overrides?effective").get_json()["a"] == 3


def test_shallow_environment_replaces_nested_mappings(layered):
    layered.put(ENV, json={"merge": "shallow"})
    assert layered.get(f"{ASTUTE}/values?effective").get_json()["b"] == {"z": 3}


def test_show_lookup_names_the_level_of_each_top_level_key(layered):
    response = layered.get(f"{ASTUTE}/values?effective&show_lookup")
    assert response.status_code == 200
    assert response.get_json() == {
        "a": [3, "/nodes/1/"],
        "b": [{"x": 1, "y": 2, "z": 3}, "/nodes/1/"],
        "c": [[9], "/nodes/1/"],
        "g": ["global", "/"],
        "n": ["node", "/nodes/1/"],
    }


def test_show_lookup_without_effective_is_409(layered):
    assert_error(layered.get(f"{ASTUTE}/values?show_lookup"), 409, "effective")
    assert_error(layered.get(f"{ASTUTE}/values?show_lookup=1&effective=0"), 409, "effective")
    assert layered.get(f"{ASTUTE}/values?show_lookup=no").status_code == 200


def test_show_lookup_with_key_gives_value_and_path_of_the_top_level_key(layered):
    whole = layered.get(f"{ASTUTE}/values?effective&show_lookup&key=b").get_json()
    assert whole == [{"x": 1, "y": 2, "z": 3}, "/nodes/1/"]
    assert layered.get(f"{ASTUTE}/values?effective&show_lookup&key=g").get_json() == ["global", "/"]
    nested = layered.get(f"{ASTUTE}/values?effective&show_lookup&key=b.x").get_json()
    assert nested == [1, "/nodes/1/"]


def test_key_reads_a_dot_path_with_list_indexes(layered):
    assert layered.get(f"{ASTUTE}/values?key=b.z").get_json() == 3
    assert layered.get(f"{ASTUTE}/values?effective&key=b.y").get_json() == 2
    assert layered.get(f"{ASTUTE}/values?effective&key=c.0").get_json() == 9
    assert layered.get(f"{ENV}/resources/astute/values?key=c").get_json() == [1]


def test_missing_key_or_index_is_409_naming_the_path(layered):
    assert_error(layered.get(f"{ASTUTE}/values?effective&key=c.1"), 409, "c.1")
    assert_error(layered.get(f"{ASTUTE}/values?effective&key=b.q.r"), 409, "b.q")
    assert_error(layered.get(f"{ASTUTE}/values?key=g"), 409, "g")
    assert_error(layered.get(f"{ASTUTE}/values?effective&key=a.x"), 409, "a.x")
    assert_error(layered.get(f"{ASTUTE}/values?effective&key=a..b"), 400, "key")


@pytest.mark.parametrize("raw", ["1", "true", "yes", "TRUE", "Yes"])
def test_flag_values_that_mean_on(layered, raw):
    response = layered.get(f"{ASTUTE}/values?effective={raw}")
    assert response.get_json()["g"] == "global"


@pytest.mark.parametrize("raw", ["0", "false", "no", "False"])
def test_flag_values_that_mean_off(layered, raw):
    response = layered.get(f"{ASTUTE}/values?effective={raw}")
    assert response.get_json() == {"a": 3, "b": {"z": 3}, "n": "node"}


@pytest.mark.parametrize("flag", ["effective", "show_lookup"])
@pytest.mark.parametrize("raw", ["maybe", "2", "on", "off", "tru"])
def test_other_flag_values_are_400_naming_the_flag(layered, flag, raw):
    other = "show_lookup" if flag == "effective" else "effective"
    assert_error(layered.get(f"{ASTUTE}/values?{other}=1&{flag}={raw}"), 400, flag, raw)


def test_a_flag_given_twice_must_agree(layered):
    assert_error(layered.get(f"{ASTUTE}/values?effective&effective=no"), 400, "effective")
    assert layered.get(f"{ASTUTE}/values?effective&effective=yes").status_code == 200


def test_a_deeper_value_beats_a_shallower_override(layered):
    assert layered.get(f"{ASTUTE}/values?effective&key=a").get_json() == 3


def test_a_flag_with_an_empty_value_is_400_naming_it(client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    for name in ("reveal", "effective"):
        response = client.get(f"{ENV}/resources/astute/values?{name}=")
        assert_error(response, 400, name)
    assert client.get(f"{ENV}/resources/astute/values?effective").status_code == 200
