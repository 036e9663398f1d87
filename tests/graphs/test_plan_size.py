"""The size of a plan's node records, estimated before the plan is built
(gitstore/merge/plan_size.py), against the plan itself."""

from __future__ import annotations

from gitstore.merge import execution, plan_size

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
