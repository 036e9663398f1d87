"""The push gate applies the graph rules: real `git push` into the store's bare repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gitstore.backend.changes import ChangeSet
from gitstore.catalog.view import CatalogView
from gitstore.deployment.graphs import graph_path
from gitstore.gitops.rules import validate as validate_tree

from .conftest import task

RELEASE_GRAPHS = "releases/Newton on Ubuntu 16.04/graphs"


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def clone(repo: Path, into: Path) -> Path:
    done = git("clone", "-q", str(repo), str(into), cwd=into.parent)
    assert done.returncode == 0, done.stderr
    return into


def push(work: Path, files: dict[str, object]) -> subprocess.CompletedProcess:
    for path, doc in files.items():
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    assert git("add", "-A", cwd=work).returncode == 0
    assert git("commit", "-qm", "graphs", cwd=work).returncode == 0
    return git("push", "origin", "main", cwd=work)


@pytest.fixture
def pushable(graph_store, tmp_path):
    graph_store.graphs.create(
        "release", 1, "default", {"tasks": [task("a"), task("b", requires=["a"])]}
    )
    return graph_store, tmp_path


def test_a_cluster_graph_with_a_cycle_over_release_tasks_is_refused(pushable):
    store, tmp_path = pushable
    work = clone(store.environment_path(1), tmp_path / "env")
    head = store.environment_repo(1).head()
    done = push(work, {"graphs/default.yaml": {"tasks": [task("a", requires=["b"])]}})
    assert done.returncode != 0
    assert "graphs/default.yaml: dependency cycle: " in done.stderr
    assert store.environment_repo(1).head() == head
    good = push(work, {"graphs/default.yaml": {"tasks": [task("c", requires=["b"])]}})
    assert good.returncode == 0, good.stderr
    assert [t["id"] for t in store.graphs.tasks(1).data] == ["a", "b", "c"]


def test_catalog_graph_problems_name_the_file_and_task(pushable):
    store, tmp_path = pushable
    work = clone(store.root / "catalog.git", tmp_path / "catalog")
    done = push(
        work,
        {
            f"{RELEASE_GRAPHS}/custom.yaml": [task("x", requires=["ghost"])],
            f"{RELEASE_GRAPHS}/dup.yaml": {"tasks": [task("d"), task("d")]},
            f"{RELEASE_GRAPHS}/bad.name.yaml": {"tasks": []},
        },
    )
    assert done.returncode != 0
    assert f"{RELEASE_GRAPHS}/custom.yaml: task 'x' depends on 'ghost' (requires)" in done.stderr
    assert f"{RELEASE_GRAPHS}/dup.yaml: Tasks duplication found: d" in done.stderr
    assert f"{RELEASE_GRAPHS}/bad.name.yaml: graphs are files graphs/<type>.yaml" in done.stderr


def test_environment_naming_clashing_plugins_is_reported(graph_store):
    for name in ("p1", "p2"):
        graph_store.plugins.create({"name": name, "version": "1"})
        graph_store.graphs.create("plugin", name, "default", {"tasks": [task("same")]})
    env = graph_store.environment_repo(1)

    def enable(snapshot):
        doc = dict(snapshot.read_yaml("environment.yaml"), plugins=["p1", "p2"])
        changes = ChangeSet("enable both")
        changes.put("environment.yaml", yaml.safe_dump(doc).encode())
        changes.put(graph_path("", "default"), b"- {id: own, type: shell, requires: [same]}\n")
        return changes

    env.update(enable, graph_store.default_author)  # behind the gate's back
    problems = validate_tree(
        env.snapshot(), "environment", catalog=CatalogView(graph_store.catalog().snapshot())
    )
    assert [(p["file"], p["message"]) for p in problems] == [
        (
            "environment.yaml",
            "plugins 'p1' and 'p2' both define task 'same' in graph type 'default'",
        )
    ]


def test_a_pushed_self_dependency_is_refused_as_a_cycle(pushable):
    store, tmp_path = pushable
    env = clone(store.environment_path(1), tmp_path / "env")
    done = push(env, {"graphs/selfloop.yaml": {"tasks": [task("x", required_for=["x"])]}})
    assert done.returncode != 0
    assert "graphs/selfloop.yaml: dependency cycle: x -> x" in done.stderr
    catalog = clone(store.root / "catalog.git", tmp_path / "catalog")
    done = push(catalog, {f"{RELEASE_GRAPHS}/selfloop.yaml": [task("x", requires=["x"])]})
    assert done.returncode != 0
    assert f"{RELEASE_GRAPHS}/selfloop.yaml: dependency cycle: x -> x" in done.stderr
