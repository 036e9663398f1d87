"""What the push gate refuses beyond a document's own rules, found by a red-team review:
catalog changes that strand environment data, entries that are not regular files, path names
that are not UTF-8, documents over the REST limits, `.yml` files the layout never reads.

Real `git push` into the store's bare repositories (the installed pre-receive hook runs).
"""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from .helpers import commit_files, git


def clone(store, tmp_path, repository: str = "environments/1.git"):
    work = tmp_path / "work"
    git("clone", "-q", str(store.root / repository), str(work))
    return work


def push(work, **env: str):
    done = subprocess.run(
        ["git", "push", "origin", "main"],
        cwd=work,
        capture_output=True,
        check=False,
        env={**os.environ, **env},
    )
    return done.returncode, done.stderr.decode("utf-8", "backslashreplace")


def head(store, repository: str = "environments/1.git") -> str:
    return git("rev-parse", "main", cwd=store.root / repository).stdout.strip()


# -- 1. the catalog keeps what environments hold data for -----------------------------------
def _renamed(work, old: str, new: str | None) -> None:
    component = yaml.safe_load((work / "components/fuel.yaml").read_text())
    definitions = component["resource_definitions"]
    if new is None:
        component["resource_definitions"] = [d for d in definitions if d["name"] != old]
    else:
        next(d for d in definitions if d["name"] == old)["name"] = new
    commit_files(work, {"components/fuel.yaml": yaml.safe_dump(component)}, f"{old} -> {new}")


@pytest.mark.parametrize(
    ("new", "refusal"),
    [
        ("globalz", "resource 'globals' cannot be renamed: environments hold data for it: 1"),
        (None, "resource 'globals' cannot be deleted: environments hold data for it: 1"),
    ],
)
def test_a_catalog_push_cannot_strand_environment_data(gitops_store, tmp_path, new, refusal):
    before = head(gitops_store, "catalog.git")
    work = clone(gitops_store, tmp_path, "catalog.git")
    _renamed(work, "globals", new)
    code, stderr = push(work)
    assert code != 0
    assert "remote: gitstore:   components/fuel.yaml:" in stderr, stderr
    assert f"{refusal} (globals)" in stderr, stderr
    assert head(gitops_store, "catalog.git") == before


def test_a_catalog_push_may_rename_a_definition_no_environment_uses(gitops_store, tmp_path):
    work = clone(gitops_store, tmp_path, "catalog.git")
    _renamed(work, "override/plugins", "override/plugin")
    code, stderr = push(work)
    assert code == 0, stderr


def test_the_refusal_lists_the_first_problems_only(gitops_store, tmp_path):
    work = clone(gitops_store, tmp_path)
    commit_files(work, {f"global/values/nope{i:03}.yaml": "a: 1\n" for i in range(300)})
    code, stderr = push(work)
    assert code != 0
    assert "has 300 problems:" in stderr
    assert "global/values/nope000.yaml" in stderr
    assert "global/values/nope299.yaml" not in stderr
    assert "... and 250 more" in stderr
    assert len(stderr.splitlines()) < 60
