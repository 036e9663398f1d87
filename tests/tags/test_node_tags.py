"""Pure node tag computation, metadata merging, primary election and instance grouping."""

from __future__ import annotations

from gitstore.merge.tags import (
    Metadata,
    all_instances,
    base_tags,
    elect_primaries,
    merge_metadata,
    node_tags,
)

#: The seed's controller role producing mysql, neutron, keystone and rabbitmq tags.
ROLES = {
    "controller": {
        "tags": ["controller", "mysql", "neutron", "keystone", "rabbitmq"],
        "conflicts": ["compute"],
    },
    "compute": {"tags": ["compute"]},
}
TAGS = {
    "controller": {"has_primary": True},
    "mysql": {"has_primary": True},
    "neutron": {"has_primary": False},
    "keystone": {"has_primary": True},
    "rabbitmq": {"has_primary": True},
    "compute": {"has_primary": False},
}
META = Metadata(ROLES, TAGS)


def node(node_id, **fields):
    return {"id": node_id, "roles": ["controller"], "status": "ready", **fields}


def test_controller_role_produces_its_tags():
    assert base_tags(node(1), ROLES) == ["controller", "mysql", "neutron", "keystone", "rabbitmq"]


def test_removing_all_but_rabbitmq_leaves_the_role_name_tag():
    removed = ["controller", "mysql", "neutron", "keystone"]
    assert base_tags(node(1, tags_removed=removed), ROLES) == ["controller", "rabbitmq"]


def test_added_tags_pending_roles_and_primary_tags():
    n = node(
        1,
        roles=[],
        pending_roles=["compute"],
        tags_added=["mysql", "mysql:1"],
        primary_tags=["mysql", "compute", "keystone"],
    )
    # compute has no primary; keystone is not carried: neither shows up as primary-*
    assert node_tags(n, META) == ["compute", "mysql", "mysql:1", "primary-mysql"]


def test_election_picks_lowest_ready_then_lowest_and_keeps_existing():
    nodes = [node(5), node(3, status="discover"), node(4)]
    elected = elect_primaries(nodes, META)
    assert elected == {3: [], 4: ["controller", "keystone", "mysql", "rabbitmq"], 5: []}
    nodes = [node(5, primary_tags=["mysql"]), node(4), node(3, status="discover")]
    assert elect_primaries(nodes, META)[5] == ["mysql"]
    assert elect_primaries([node(7, status="error"), node(9, status="error")], META)[7] == [
        "controller",
        "keystone",
        "mysql",
        "rabbitmq",
    ]


def test_reelection_when_the_primary_is_pending_deletion_or_loses_the_tag():
    first = node(1, primary_tags=["mysql", "rabbitmq"], pending_deletion=True)
    second = node(2, tags_removed=["rabbitmq"])
    elected = elect_primaries([first, second], META)
    assert elected[2] == ["controller", "keystone", "mysql"]
    assert elected[1] == ["rabbitmq"]  # no other candidate: the leaving node keeps it
    elected = elect_primaries(
        [node(1, primary_tags=["mysql"], tags_removed=["mysql"]), node(2)], META
    )
    assert "mysql" in elected[2] and "mysql" not in elected[1]


def test_two_claimed_primaries_keep_the_lowest_id():
    nodes = [node(2, primary_tags=["mysql"]), node(1, primary_tags=["mysql"])]
    elected = elect_primaries(nodes, META)
    assert "mysql" in elected[1] and "mysql" not in elected[2]


def test_merge_release_cluster_plugins_and_plugin_roles_without_tags():
    release = Metadata(ROLES, TAGS)
    cluster = Metadata(
        {"swift": {"tags": ["swift"]}},
        {"swift": {"has_primary": True}, "mysql": {"has_primary": False}},
    )
    plugin = Metadata(
        {
            "contrail-db": {"name": "Contrail DB", "has_primary": True},
            "contrail-config": {"name": "Contrail config"},
        },
        {"mysql": {"has_primary": True, "from": "plugin"}},
        implicit_role_tags=True,
    )
    merged = merge_metadata([release, cluster, plugin])
    assert merged.roles["contrail-db"]["tags"] == ["contrail-db"]
    assert merged.tags["contrail-db"] == {"has_primary": True}
    assert merged.tags["contrail-config"] == {"has_primary": False}
    assert merged.tags["mysql"] == {"has_primary": True, "from": "plugin"}
    assert merged.tags["swift"] == {"has_primary": True}
    assert set(merged.roles) == {"controller", "compute", "swift", "contrail-db", "contrail-config"}
    assert "tags" not in plugin.roles["contrail-db"]  # inputs are never mutated


def test_instances_group_nodes_by_instance_number():
    tags = {
        1: ["controller", "mysql:1", "cluster:2"],
        2: ["mysql:2", "cluster:1"],
        3: ["mysql:1"],
        4: ["compute"],
    }
    assert all_instances(tags) == {
        "cluster": {"1": [2], "2": [1]},
        "mysql": {"1": [1, 3], "2": [2]},
    }
