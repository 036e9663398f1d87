"""`gitstore review BASE HEAD`: what a change does, for people and for CI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.main import cli
from gitstore.gitops.service import render_markdown, review_repository

from .helpers import GLOBAL_ASTUTE, commit_files, git


@pytest.fixture
def work(gitops_store, tmp_path):
    """A clone of environment 1 with a branch `change`, as a CI job checks it out."""
    path = tmp_path / "work"
    git("clone", "-q", str(gitops_store.environment_path(1)), str(path))
    git("checkout", "-qb", "change", cwd=path)
    return path


def run_review(*args: str):
    return CliRunner().invoke(cli, ["review", *args])


def test_a_global_change_reports_every_node_affected(gitops_store, work):
    commit_files(work, {"global/values/astute.yaml": GLOBAL_ASTUTE.replace("8000", "8080")})
    result = run_review("main", "change", "--repo", str(work), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"valid", "errors", "scopes", "nodes_affected", "override_files"}
    assert report["valid"] is True and report["errors"] == []
    # nodes 1-3 have data of their own, node 4 is only in the inventory: all see the new port
    assert report["nodes_affected"] == [1, 2, 3, 4]
    change = {"port": {"old": 8000, "new": 8080}}
    for scope in ("/", "/nodes/1/", "/nodes/2/", "/nodes/3/"):
        assert report["scopes"][scope]["astute"] == {"added": {}, "removed": {}, "changed": change}
    assert report["override_files"] == []


def test_a_node_that_shadows_the_changed_key_is_not_affected(gitops_store, work):
    commit_files(work, {"global/overrides/astute.yaml": "region: three\n"})
    review = review_repository(work, "main", "change", gitops_store.root / "catalog.git")
    assert review.report["nodes_affected"] == [1, 3, 4]  # node 2 sets its own region
    assert "/nodes/2/" not in review.report["scopes"]
    assert review.report["override_files"] == ["global/overrides/astute.yaml"]
    text = render_markdown(review)
    assert '| `region` | `"one"` | `"three"` |' in text
    assert "**Nodes affected** (3): 1, 3, 4" in text
    assert "- `global/overrides/astute.yaml`" in text


def test_an_invalid_head_fails_the_review(gitops_store, work):
    commit_files(
        work,
        {"nodes/1/values/astute.yaml": "port: [1\n", "nodes/2/values/astute.yaml": "region: 2\n"},
    )
    result = run_review(
        "main", "change", "--repo", str(work), "--catalog", str(gitops_store.root / "catalog.git")
    )
    assert result.exit_code == 1
    assert "gitstore review: INVALID (2 problems)" in result.stdout
    assert "nodes/1/values/astute.yaml:2: YAML does not parse" in result.stdout
    assert "nodes/2/values/astute.yaml:1: key 'region': 2 is not of type 'string'" in result.stdout


def test_review_inside_the_store(gitops_store, work):
    commit_files(work, {"nodes/3/values/globals.yaml": None})
    git("push", "-q", "origin", "change", cwd=work)  # branches other than main pass the gate
    result = run_review(
        "main", "change", "--root", str(gitops_store.root), "--env", "1", "--format", "json"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["nodes_affected"] == [3]
    assert report["scopes"] == {
        "/nodes/3/": {"globals": {"added": {}, "removed": {"x": 1}, "changed": {}}}
    }


def test_review_usage_errors(gitops_store, work):
    result = run_review("main", "change", "--repo", str(work), "--env", "1")
    assert result.exit_code == 2
    assert "give --repo or --env, not both" in result.stderr
    result = run_review("main", "nope", "--repo", str(work))
    assert result.exit_code == 1
    assert "unknown version 'nope'" in result.stderr
