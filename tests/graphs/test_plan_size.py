"""The size of a plan's node records, estimated before the plan is built
(gitstore/merge/plan_size.py), against the plan itself."""

from __future__ import annotations

from gitstore import limits
from gitstore.merge import execution, graphs, plan_size

from .conftest import task


def real_values(tasks, tags_by_node) -> dict[str, int]:
    """Each node key's values as stored: entry, its keys, one item per link, and history."""
    plan = execution.serialize(tasks, tags_by_node)["tasks_graph"]
    return {
        key: sum(1 + len(e) + len(e["requires"]) + plan_size.HISTORY_VALUES for e in entries)
        for key, entries in plan.items()
    }


def test_the_estimate_follows_links_that_grow_with_the_nodes(newton_tasks):
    tags = {1: ["controller", "primary-controller"], 2: ["controller"], 3: ["controller"]}
    tags |= {n: ["compute"] for n in range(4, 40)} | {n: ["ceph-osd"] for n in range(40, 46)}
    estimate = plan_size.node_values(newton_tasks, tags)
    real = real_values(newton_tasks, tags)
    assert set(estimate) == set(real)
    for key, values in real.items():
        assert values <= estimate[key] <= values * 1.3, (key, values, estimate[key])


def test_a_cross_dependency_on_every_node_grows_each_nodes_record():
    tasks = [
        {"id": "start", "type": "stage"},
        task("a", requires=["start"]),
        task("b", requires=["a"], cross_depends=[{"name": "a"}]),
    ]
    small = plan_size.node_values(tasks, {n: ["compute"] for n in range(1, 4)})
    large = plan_size.node_values(tasks, {n: ["compute"] for n in range(1, 101)})
    assert large["1"] - small["1"] == 97  # b on node 1 waits for a on 97 more nodes
    real = real_values(tasks, {n: ["compute"] for n in range(1, 101)})["1"]
    assert real <= large["1"] <= real + 2  # ENTRY_VALUES counts fail_on_error, absent here


def test_the_default_transaction_keys_holds_newtons_graph_on_a_thousand_nodes(newton_tasks):
    """A real cloud's size (issue 35): Newton's default graph on 1,000 nodes is accepted."""
    controller = ["controller", "database", "keystone", "neutron", "rabbitmq"]  # Newton's tags
    tags = {1: controller + [f"primary-{t}" for t in controller], 2: controller, 3: controller}
    tags |= {n: ["ceph-osd"] if n % 10 == 0 else ["compute"] for n in range(4, 1001)}
    tasks = [graphs.with_defaults(t) for t in graphs.canonical_document(newton_tasks)["tasks"]]
    estimate = plan_size.node_values(tasks, tags)
    assert max(estimate.values()) <= limits.DEFAULT.document_keys
    assert 2_000_000 < sum(estimate.values()) <= limits.DEFAULT.transaction_keys
