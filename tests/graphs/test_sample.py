"""The sample store's cluster deploys the real Newton graph: merged, valid, placed, planned."""

from __future__ import annotations

from gitstore.configdb.importer import SAMPLE_DIR


def test_sample_cluster_merges_checks_and_plans_the_real_graph(store):
    store.importer.load_tree(SAMPLE_DIR)
    assert store.gitops.validate_all() == {"catalog.git": [], "environments/1.git": []}
    tasks = store.graphs.tasks(1).data
    assert len(tasks) == 204 and tasks[0]["id"] == "pre_deployment_start"
    assert store.graphs.check(1).data["valid"] is True
    resolved = store.tags.resolved_tasks(1).data
    assert "primary-database" in resolved["nodes"]["1"]  # node 1 is the primary controller
    assert "primary-database" not in resolved["nodes"]["2"]
    assert "top-role-compute" in resolved["nodes"]["3"]
    assert "top-role-compute" not in resolved["nodes"]["1"]
    doc = store.transactions.execute(
        {"cluster": 1, "graphs": [{"type": "default"}], "dry_run": True}, background=False
    ).data
    graph = doc["graphs"][0]
    assert doc["status"] == "ready" and graph["nodes"] == [1, 2, 3]
    assert [e["id"] for e in graph["tasks_graph"]["null"]][:2] == [
        "pre_deployment_start",
        "pre_deployment_end",
    ]
    assert "generate_keys" in [e["id"] for e in graph["tasks_graph"]["master"]]
    assert len(graph["history"]) == sum(len(v) for v in graph["tasks_graph"].values())
