"""The REST routes of templates, roles and plans: status codes, versions, errors."""

from __future__ import annotations

import pytest

from .conftest import COMPUTE, COMPUTE_V2, CONTROLLER

MISSING = "00000000-0000-4000-8000-000000000000"


def _upload(client, name: str, content: str, family: str = "roles"):
    response = client.post(f"/api/v1/{family}", json={"name": name, "content": content})
    assert response.status_code == 201, response.json
    return response.json


@pytest.fixture
def plan(client):
    """A plan holding compute version 1 and controller version 1."""
    created = client.post("/api/v1/plans", json={"name": "overcloud"}).json
    for name, content in (("compute", COMPUTE), ("controller", CONTROLLER)):
        role = _upload(client, name, content)
        client.post(f"/api/v1/plans/{created['uuid']}/roles", json={"uuid": role["uuid"]})
    return client.get(f"/api/v1/plans/{created['uuid']}").json


# -- roles and templates ------------------------------------------------------------------------
def test_role_create_update_and_reload(client):
    first = _upload(client, "compute", COMPUTE)
    assert (first["name"], first["version"], first["content"]) == ("compute", 1, COMPUTE)
    duplicate = client.post("/api/v1/roles", json={"name": "compute", "content": CONTROLLER})
    assert duplicate.status_code == 409 and "compute" in duplicate.json["message"]
    second = client.put(f"/api/v1/roles/{first['uuid']}", json={"content": COMPUTE_V2})
    assert second.status_code == 201
    assert second.json["version"] == 2 and second.json["uuid"] != first["uuid"]
    again = client.put(f"/api/v1/roles/{first['uuid']}", json={"content": COMPUTE_V2})
    assert again.status_code == 200 and again.json == second.json
    assert again.headers["X-Gitstore-Commit"] == second.headers["X-Gitstore-Commit"]
    assert client.get(f"/api/v1/roles/{first['uuid']}").json["content"] == COMPUTE


def test_role_lists_versions_and_older_revisions(client):
    first = _upload(client, "compute", COMPUTE)
    created_at = client.get("/api/v1/roles").headers["X-Gitstore-Version"]
    client.put(f"/api/v1/roles/{first['uuid']}", json={"content": COMPUTE_V2})
    _upload(client, "controller", CONTROLLER)
    listed = client.get("/api/v1/roles").json
    assert [(r["name"], r["version"]) for r in listed] == [
        ("compute", 1),
        ("compute", 2),
        ("controller", 1),
    ]
    assert "content" not in listed[0]
    latest = client.get("/api/v1/roles?only_latest=1").json
    assert [(r["name"], r["version"]) for r in latest] == [("compute", 2), ("controller", 1)]
    old = client.get(f"/api/v1/roles?version={created_at}")
    assert [(r["name"], r["version"]) for r in old.json] == [("compute", 1)]
    assert client.get("/api/v1/roles?version=no-such-rev").status_code == 404


def test_templates_are_a_store_of_their_own(client):
    template = _upload(client, "compute", COMPUTE, family="templates")
    assert client.get("/api/v1/roles").json == []
    assert client.get(f"/api/v1/roles/{template['uuid']}").status_code == 404
    assert client.get(f"/api/v1/templates/{template['uuid']}").json == template
    assert [t["uuid"] for t in client.get("/api/v1/templates").json] == [template["uuid"]]
    update = client.put(f"/api/v1/templates/{template['uuid']}", json={"content": COMPUTE_V2})
    assert update.status_code == 201 and update.json["version"] == 2


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"name": "compute"}, "'content' is required"),
        ({"name": "compute", "content": "not: [closed"}, "does not parse"),
        ({"name": "compute", "content": "when: 2024-02-30"}, "line 1"),  # no such day
        ({"name": "compute", "content": "n: " + "1" * 5000}, "line 1"),  # past int's limit
        ({"name": "compute", "content": "a: 1\n"}, "heat_template_version"),
        ({"name": "../x", "content": COMPUTE}, "name"),
        ({"name": "compute", "content": COMPUTE, "colour": "red"}, "'colour'"),
        (["not", "an", "object"], "JSON object"),
    ],
)
def test_bad_role_uploads_are_400(client, body, fragment):
    response = client.post("/api/v1/roles", json=body)
    assert response.status_code == 400
    assert fragment in response.json["message"]
    assert client.get("/api/v1/roles").json == []


def test_unknown_ids_are_404(client):
    for path in (
        f"/api/v1/roles/{MISSING}",
        "/api/v1/roles/nonsense",
        f"/api/v1/templates/{MISSING}",
        f"/api/v1/plans/{MISSING}",
        f"/api/v1/plans/{MISSING}/templates",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.json["status"] == 404
    assert client.put(f"/api/v1/roles/{MISSING}", json={"content": COMPUTE}).status_code == 404


# -- plans ----------------------------------------------------------------------------------------
def test_plan_create_view_and_duplicate(client):
    response = client.post("/api/v1/plans", json={"name": "overcloud", "description": "Prod"})
    assert response.status_code == 201
    plan = response.json
    assert {k: plan[k] for k in ("name", "description", "roles", "parameters")} == {
        "name": "overcloud",
        "description": "Prod",
        "roles": [],
        "parameters": [],
    }
    assert set(plan) == {
        "uuid",
        "name",
        "description",
        "created_at",
        "updated_at",
        "roles",
        "parameters",
    }
    assert client.post("/api/v1/plans", json={"name": "overcloud"}).status_code == 409
    assert client.get("/api/v1/plans").json == [plan]
    assert client.get(f"/api/v1/plans/{plan['uuid']}").json == plan


def test_add_role_answers_201_and_twice_409(client):
    plan = client.post("/api/v1/plans", json={"name": "overcloud"}).json
    role = _upload(client, "compute", COMPUTE)
    added = client.post(f"/api/v1/plans/{plan['uuid']}/roles", json={"uuid": role["uuid"]})
    assert added.status_code == 201
    assert added.json["roles"] == [{"uuid": role["uuid"], "name": "compute", "version": 1}]
    names = [p["name"] for p in added.json["parameters"]]
    assert names == [
        "compute-1::Image",
        "compute-1::Flavor",
        "compute-1::NovaPassword",
        "compute-1::count",
        "compute-1::removal_policies",
    ]
    twice = client.post(f"/api/v1/plans/{plan['uuid']}/roles", json={"uuid": role["uuid"]})
    assert twice.status_code == 409
    unknown = client.post(f"/api/v1/plans/{plan['uuid']}/roles", json={"uuid": MISSING})
    assert unknown.status_code == 404
    assert client.post(f"/api/v1/plans/{plan['uuid']}/roles", json={}).status_code == 400
    assert (
        client.post(f"/api/v1/plans/{MISSING}/roles", json={"uuid": role["uuid"]}).status_code
        == 404
    )


def test_remove_role_answers_200_with_the_plan(client, plan):
    compute = plan["roles"][0]["uuid"]
    response = client.delete(f"/api/v1/plans/{plan['uuid']}/roles/{compute}")
    assert response.status_code == 200
    assert [r["name"] for r in response.json["roles"]] == ["controller"]
    assert all(p["name"].startswith("controller-1::") for p in response.json["parameters"])
    again = client.delete(f"/api/v1/plans/{plan['uuid']}/roles/{compute}")
    assert again.status_code == 200 and again.json == response.json
    missing = client.delete(f"/api/v1/plans/{plan['uuid']}/roles/{MISSING}")
    assert missing.status_code == 404


def test_patch_sets_values_all_or_nothing(client, plan):
    url = f"/api/v1/plans/{plan['uuid']}"
    response = client.patch(
        url,
        json=[
            {"name": "compute-1::count", "value": 3},
            {"name": "compute-1::Flavor", "value": "baremetal"},
        ],
    )
    assert response.status_code == 200
    values = {p["name"]: p["value"] for p in response.json["parameters"]}
    assert values["compute-1::count"] == 3 and values["compute-1::Flavor"] == "baremetal"
    before = client.get(url).json
    bad = client.patch(
        url,
        json=[
            {"name": "compute-1::count", "value": 9},
            {"name": "nope", "value": 1},
            {"name": "controller-1::Nope", "value": 2},
        ],
    )
    assert bad.status_code == 400
    assert "nope" in bad.json["message"] and "controller-1::Nope" in bad.json["message"]
    assert [e["key"] for e in bad.json["errors"]] == ["nope", "controller-1::Nope"]
    assert client.get(url).json == before
    for body in ({"name": "x", "value": 1}, [{"name": "x"}], [["x", 1]]):
        assert client.patch(url, json=body).status_code == 400


def test_plans_read_at_an_earlier_version(client, plan):
    url = f"/api/v1/plans/{plan['uuid']}"
    pinned = client.get(url).headers["X-Gitstore-Commit"]
    client.patch(url, json=[{"name": "compute-1::count", "value": 5}])

    def count(answer):
        return next(p["value"] for p in answer["parameters"] if p["name"] == "compute-1::count")

    assert count(client.get(url).json) == 5
    old = client.get(f"{url}?version={pinned}")
    assert count(old.json) == 1 and old.headers["X-Gitstore-Commit"] == pinned
    assert client.get(f"{url}/templates?version={pinned}").status_code == 200


def test_delete_plan_answers_204_and_cascades(client, plan, fuel_store):
    response = client.delete(f"/api/v1/plans/{plan['uuid']}")
    assert response.status_code == 204
    assert client.get(f"/api/v1/plans/{plan['uuid']}").status_code == 404
    assert client.delete(f"/api/v1/plans/{plan['uuid']}").status_code == 404
    assert not fuel_store.catalog().snapshot().exists("plans/overcloud")
    # The roles stay, and may now be deleted.
    assert len(client.get("/api/v1/roles").json) == 2
