"""A values read names its resource in the catalog at the head it keys its answer by, read once
per request: a catalog change is seen by the very next read (the kept catalog views are per
commit), whichever view of the old commit was kept."""

from __future__ import annotations

from gitstore.api import create_app

API = "/api/v1/config"
GLOBALS = f"{API}/environments/1/resources/globals/values"
NODE_GLOBALS = f"{API}/environments/1/nodes/1/resources/globals/values"
EXTRA = f"{API}/environments/1/resources/extra/values"
PLUGINS = f"{API}/environments/1/resources/override/plugins/values"


def test_a_catalog_change_is_seen_by_the_next_read(fuel_store):
    client = create_app({"TESTING": True}, store=fuel_store).test_client()
    assert client.put(GLOBALS, json={"a": 1}).status_code == 204
    assert client.put(NODE_GLOBALS, json={"b": 2}).status_code == 204
    for _ in range(2):  # kept: the answer, the catalog view of this commit
        assert client.get(f"{GLOBALS}?effective").get_json() == {"a": 1}
        assert client.get(EXTRA).status_code == 404
        assert client.get(f"{PLUGINS}?effective").get_json() == {}
    definitions = client.get(f"{API}/components/1").get_json()["resource_definitions"]
    kept = [d["id"] for d in definitions if d["name"] != "override/plugins"]
    response = client.put(
        f"{API}/components/1", json={"resource_definitions": [*kept, {"name": "extra"}]}
    )
    assert response.status_code == 200, response.get_json()
    for path in (PLUGINS, f"{PLUGINS}?effective", f"{PLUGINS}?effective&reveal"):
        answer = client.get(path)
        assert answer.status_code == 404 and "override/plugins" in answer.get_json()["message"]
    assert client.get(f"{EXTRA}?effective").get_json() == {}
    assert client.get(f"{NODE_GLOBALS}?effective&reveal").get_json() == {"a": 1, "b": 2}
