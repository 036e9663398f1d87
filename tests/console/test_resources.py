"""The environment page lists the resources the attached components define, node or not."""

from __future__ import annotations

FUEL_RESOURCES = ["astute", "globals", "override/plugins", "override/node"]  # tests/conftest.py


def test_resources_are_listed_before_any_node_exists(client):
    page = client.get("/ui/environments/1").get_data(as_text=True)
    for name in FUEL_RESOURCES:
        assert f"<code>{name}</code>" in page, name


def test_resources_follow_the_components_attached_at_the_version(client, fuel_store):
    fuel_store.components.create({"name": "extra", "resource_definitions": [{"name": "more"}]})
    assert (
        client.patch(
            "/api/v1/config/environments/1", json={"components": ["fuel", "extra"]}
        ).status_code
        == 200
    )
    assert "<code>more</code>" in client.get("/ui/environments/1").get_data(as_text=True)
    then = client.get("/ui/environments/1?version=1").get_data(as_text=True)
    assert "<code>more</code>" not in then and "<code>astute</code>" in then
