"""A single node is unchanged by the cluster code: its readiness roles, and the members'
routes answer 404 in the one error shape."""

from __future__ import annotations


def test_a_single_node_is_its_own_primary(client):
    assert client.get("/readyz?role=primary").status_code == 200
    replica = client.get("/readyz?role=replica")
    assert replica.status_code == 503
    assert replica.get_json()["cluster"] == {"role": "primary"}
    bad = client.get("/readyz?role=leader")
    assert bad.status_code == 400 and "role" in bad.get_json()["message"]
    assert "cluster" not in client.get("/readyz").get_json()


def test_members_routes_are_404_on_a_single_node(client):
    body = {"repository": "catalog.git", "commit": "0" * 40, "source": "a"}
    for response in (
        client.post("/cluster/v1/replicate", json=body),
        client.get("/cluster/v1/status"),
        client.post("/cluster/v1/objects?repository=catalog.git", data=b""),
    ):
        assert response.status_code == 404
        assert "not a cluster member" in response.get_json()["message"]


def test_a_single_node_applies_writes_itself(client):
    path = "/api/v1/config/environments/1/resources/astute/values/keys/set"
    assert client.put(path, json=[["k", 1]]).status_code == 204
