"""`gitstore.merge.graphs` and `gitstore.merge.execution`: pure functions, real Fuel data."""

from __future__ import annotations

import pytest

from gitstore.errors import InvalidInput, ValidationFailed
from gitstore.merge import execution
from gitstore.merge import graphs as g

from .conftest import ids, task


def canonical(tasks):
    return g.canonical_document(tasks)["tasks"]


def test_input_aliases_become_canonical_and_strings_become_lists():
    given = {
        "task_name": "a",
        "type": "puppet",
        "role": "controller",
        "groups": "compute",
        "tags": "*",
        "cross-depends": [{"name": "b", "role": "self"}],
        "cross-depended-by": [{"name": "c"}],
        "custom": {"kept": 1},
    }
    assert g.canonical_task(given) == {
        "id": "a",
        "type": "puppet",
        "roles": ["controller"],
        "groups": ["compute"],
        "tags": "*",
        "cross_depends": [{"name": "b", "role": "self"}],
        "cross_depended_by": [{"name": "c"}],
        "custom": {"kept": 1},
    }
    assert g.canonical_task({"id": "a", "role": "x", "roles": ["y"]})["roles"] == ["y"]
    for word in ("*", "master", "self"):
        assert g.canonical_task({"id": "a", "roles": word})["roles"] == word


def test_output_aliases_name_both_spellings():
    served = g.output_task(
        g.with_defaults(
            g.canonical_task(
                {"id": "a", "type": "shell", "role": ["x"], "cross-depends": [{"name": "b"}]}
            )
        )
    )
    assert served["id"] == served["task_name"] == "a"
    assert served["roles"] == served["role"] == ["x"]
    assert served["cross_depends"] == served["cross-depends"] == [{"name": "b"}]
    assert served["version"] == "1.0.0"


def test_real_newton_graph_is_valid_and_orders_every_dependency_first(newton_tasks):
    tasks = canonical(newton_tasks)
    assert len(tasks) == 204
    assert g.document_problems({"tasks": tasks}) == []
    assert g.graph_problems(tasks) == []
    order = {task_id: i for i, task_id in enumerate(g.topological_order(tasks))}
    assert len(order) == 204
    for before, later in g.dependency_edges(tasks):
        assert order[before] < order[later], (before, later)
    # legacy groups (1.0.0) are dependencies; a task-based task's groups select nodes
    edges = set(g.dependency_edges(tasks))
    assert ("deploy_start", "primary-controller") in edges
    assert ("hiera", "base-os") in edges  # a group's `tasks` member runs before the group
    assert not any(b == "primary-neutron" for _, b in edges)  # ssl-dns-setup's groups


def test_schema_problems_name_the_task_and_field():
    problems = g.document_problems(
        {
            "tasks": [
                {"id": "a", "type": "teleport"},
                {"type": "shell"},
                {"id": "b", "type": "shell", "version": "2.0"},
                {"id": "c", "type": "shell", "cross_depends": [{"role": "x"}]},
            ]
        }
    )
    messages = [p.message for p in problems]
    assert any("task 'a': field 'type'" in m and "teleport" in m for m in messages)
    assert any("task #2" in m and "'id' is a required property" in m for m in messages)
    assert any("task 'b': field 'version'" in m for m in messages)
    assert any("task 'c': field 'cross_depends'" in m for m in messages)
    assert g.document_problems({"tasks": [], "colour": "red"})[0].message.startswith(
        "unknown graph field 'colour'"
    )


def test_duplicates_are_listed_sorted():
    problems = g.document_problems({"tasks": [task("b"), task("a"), task("b"), task("a")]})
    assert [p.message for p in problems] == ["Tasks duplication found: a, b"]


def test_missing_dependencies_and_regex_names():
    tasks = canonical(
        [
            task("a", requires=["ghost", "/^b.*/", "/^nomatch$/"]),
            task("b", required_for=["a"], cross_depends=[{"name": "phantom"}]),
            {"id": "legacy", "type": "puppet", "groups": ["nogroup"]},
            task("based", groups=["primary-neutron"]),
        ]
    )
    messages = [p.message for p in g.missing_dependencies(tasks)]
    assert messages == [
        "task 'a' depends on 'ghost' (requires), which is not in the graph",
        "task 'b' depends on 'phantom' (cross_depends), which is not in the graph",
        "task 'legacy' depends on 'nogroup' (groups), which is not in the graph",
    ]
    assert ("b", "a") in g.dependency_edges(tasks)


def test_cycles_are_named_with_their_path():
    tasks = canonical(
        [
            task("a", requires=["c"]),
            task("b", requires=["a"]),
            task("c", requires=["b"]),
            task("d", requires=["a"]),
        ]
    )
    cycle = g.find_cycle(tasks)
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    [problem] = g.graph_problems(tasks)
    assert problem.message.startswith("dependency cycle: ")
    with pytest.raises(ValidationFailed, match="dependency cycle"):
        g.topological_order(tasks)
    assert g.find_cycle(canonical([task("a", required_for=["b"]), task("b")])) is None


def test_merge_order_metadata_and_plugin_overlap():
    release = {
        "name": "r",
        "on_success": {"node_attributes": {"status": "ready", "x": 1}},
        "tasks": [task("a", parameters={"cmd": "release"}), task("b")],
    }
    plugin = {"tasks": [task("b", parameters={"cmd": "plugin"}), task("p")]}
    cluster = {
        "on_success": {"node_attributes": {"x": 2}},
        "tasks": [task("a", parameters={"cmd": "cluster"}), task("c")],
    }
    merged = g.merge_graphs(release, [("plug", plugin)], cluster)
    assert ids(merged["tasks"]) == ["a", "b", "p", "c"]  # a replaced task keeps its place
    assert [t["parameters"]["cmd"] for t in merged["tasks"][:2]] == ["cluster", "plugin"]
    assert merged["name"] == "r"
    assert merged["on_success"] == {"node_attributes": {"status": "ready", "x": 2}}
    with pytest.raises(InvalidInput, match="plugins 'plug' and 'other' both define task 'p'"):
        g.merge_graphs(release, [("plug", plugin), ("other", {"tasks": [task("p")]})], None)


def test_legacy_start_end_include():
    tasks = [
        g.with_defaults(t)
        for t in canonical(
            [
                {"id": "s1", "type": "stage"},
                {"id": "s2", "type": "stage", "requires": ["s1"]},
                {"id": "t1", "type": "puppet", "requires": ["s1"], "required_for": ["s2"]},
                {"id": "t2", "type": "puppet", "requires": ["t1"], "required_for": ["s2"]},
                {"id": "other", "type": "puppet"},
            ]
        )
    ]
    assert ids(g.legacy_subgraph(tasks, start="t1")) == ["s2", "t1", "t2"]
    assert ids(g.legacy_subgraph(tasks, end="t2")) == ["s1", "t1", "t2"]
    assert ids(g.legacy_subgraph(tasks, start="t1", end="t2", include=["other"])) == [
        "t1",
        "t2",
        "other",
    ]
    assert g.legacy_subgraph(tasks) == tasks
    with pytest.raises(InvalidInput, match="Cannot find task ghost by its name"):
        g.legacy_subgraph(tasks, start="ghost")
    based = [*tasks, g.with_defaults(task("new"))]
    with pytest.raises(InvalidInput, match="task 'new' is task-based"):
        g.legacy_subgraph(based, end="t2")


def test_dot_edges_and_filters():
    tasks = canonical(
        [
            {"id": "start", "type": "stage"},
            task("a", requires=["start"]),
            task("b", requires=["a"]),
            task("c", requires=["b"]),
            task("side", requires=["start"]),
        ]
    )
    dot = g.to_dot(tasks, "custom")
    assert dot.startswith('digraph "custom" {')
    assert '"start" [color="red", shape="rect", style="filled"];' in dot
    assert '"a" -> "b";' in dot and '"b" -> "a";' not in dot
    only = g.to_dot(tasks, only=["a", "c"])
    assert '"a" [' in only and '"c" [' in only and '"b" [' not in only and "->" not in only
    parents = g.to_dot(tasks, parents_for="b")
    assert '"side"' not in parents and '"c"' not in parents and '"start" -> "a";' in parents
    removed = g.to_dot(tasks, remove=["stage"])
    assert '"start"' not in removed and '"a" -> "b";' in removed
    with pytest.raises(InvalidInput, match="tasks ghost, phantom are not present"):
        g.to_dot(tasks, only=["a", "ghost"], parents_for="phantom")
    with pytest.raises(InvalidInput, match="task types teleport do not exist"):
        g.to_dot(tasks, remove=["teleport"])


def test_plan_places_tasks_and_links_them_per_node():
    tasks = [
        g.with_defaults(t)
        for t in canonical(
            [
                {"id": "pre", "type": "stage"},
                task("setup", requires=["pre"], roles=["controller", "compute"]),
                task("db", requires=["setup"], roles=["controller"]),
                task("api", roles=["controller"], requires=["db"], cross_depends=[{"name": "db"}]),
                task(
                    "agent",
                    roles=["compute"],
                    requires=["setup"],
                    cross_depends=[{"name": "api", "role": ["controller"]}],
                ),
                task("master-only", roles="master", required_for=["pre"]),
            ]
        )
    ]
    tags = {1: ["controller"], 2: ["compute"], 3: ["controller"]}
    plan = execution.serialize(tasks, tags, selected=["api", "agent"])
    graph = plan["tasks_graph"]
    assert list(graph) == ["null", "master", "1", "2", "3"]
    assert [e["id"] for e in graph["1"]] == ["setup", "db", "api"]
    assert [e["id"] for e in graph["2"]] == ["setup", "agent"]
    assert graph["1"][0] == {
        "id": "setup",
        "type": "skipped",
        "fail_on_error": False,
        "requires": [{"name": "pre", "node_id": None}],
    }
    api = graph["1"][2]
    assert api["type"] == "shell"
    assert {"name": "db", "node_id": "1"} in api["requires"]
    assert {"name": "db", "node_id": "3"} in api["requires"]  # cross_depends: every node
    agent = graph["2"][1]["requires"]
    assert {"name": "api", "node_id": "1"} in agent and {"name": "api", "node_id": "3"} in agent
    assert graph["null"][0]["requires"] == [{"name": "master-only", "node_id": "master"}]
    assert plan["tasks_directory"]["api"] == {"type": "shell", "version": "2.1.0"}
    order = [(node, entry["id"]) for node, entry in execution.execution_order(graph)]
    assert order.index(("master", "master-only")) < order.index(("null", "pre"))
    assert order.index(("3", "api")) < order.index(("2", "agent"))
    assert order.index(("1", "db")) < order.index(("1", "api"))
    with pytest.raises(InvalidInput, match="tasks ghost are not in the graph"):
        execution.serialize(tasks, tags, selected=["ghost"])


def test_plan_of_the_real_graph(newton_tasks):
    tasks = [g.with_defaults(t) for t in canonical(newton_tasks)]
    tags = {
        1: [
            "controller",
            "primary-controller",
            "rabbitmq",
            "primary-rabbitmq",
            "database",
            "primary-database",
            "keystone",
            "primary-keystone",
            "neutron",
            "primary-neutron",
        ],
        2: ["compute"],
    }
    plan = execution.serialize(tasks, tags)
    order = execution.execution_order(plan["tasks_graph"])
    assert len(order) == sum(len(v) for v in plan["tasks_graph"].values())
    position = {(entry["id"], node): i for i, (node, entry) in enumerate(order)}
    for node, entries in plan["tasks_graph"].items():
        for entry in entries:
            for need in entry["requires"]:
                key = (need["name"], "null" if need["node_id"] is None else need["node_id"])
                assert position[key] < position[(entry["id"], node)], (need, entry["id"])


def test_a_task_naming_itself_is_a_cycle_but_a_pattern_or_cross_node_link_is_not():
    for field in ("requires", "required_for"):
        tasks = canonical([task("a", **{field: ["a"]})])
        assert g.find_cycle(tasks) == ["a", "a"]
        assert [p.message for p in g.graph_problems(tasks)] == ["dependency cycle: a -> a"]
        with pytest.raises(ValidationFailed, match="dependency cycle: a -> a"):
            g.topological_order(tasks)
    # a /regex/ matching its own task, and a cross-node link to the same task on other
    # nodes (a controller waiting for the primary's run of it), are not self-dependencies
    fine = canonical(
        [
            task("a", requires=["/^(a|b)$/"]),
            task("b", cross_depends=[{"name": "b", "role": ["primary-controller"]}]),
        ]
    )
    assert g.graph_problems(fine) == []
