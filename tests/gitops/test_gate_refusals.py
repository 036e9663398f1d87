"""What the push gate refuses beyond a document's own rules, found by a red-team review:
catalog changes that strand environment data, entries that are not regular files, path names
that are not UTF-8, documents over the REST limits, `.yml` files the layout never reads.

Real `git push` into the store's bare repositories (the installed pre-receive hook runs).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from gitstore.errors import InvalidInput

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


def _attach_nova(store) -> None:
    """Component `nova`, attached by environment 2, which holds no data under it."""
    store.components.create({"name": "nova", "resource_definitions": [{"name": "nova_conf"}]})
    store.environments.create({"id": 2, "components": ["fuel", "nova"]})


def _drop_nova(work, new: str | None) -> None:
    """Rename component `nova` to `new` (its file and its name), or delete it (None)."""
    files: dict[str, str | None] = {"components/nova.yaml": None}
    if new is not None:
        component = yaml.safe_load((work / "components/nova.yaml").read_text())
        files[f"components/{new}.yaml"] = yaml.safe_dump({**component, "name": new})
    commit_files(work, files, f"nova -> {new}")


@pytest.mark.parametrize(
    ("new", "refusal"),
    [
        ("nova2", "components/nova2.yaml:2: key 'name': component 'nova' cannot be renamed"),
        (None, "components/nova.yaml: component 'nova' cannot be deleted"),
    ],
)
def test_a_catalog_push_cannot_drop_an_attached_component(gitops_store, tmp_path, new, refusal):
    _attach_nova(gitops_store)
    before = head(gitops_store, "catalog.git")
    work = clone(gitops_store, tmp_path, "catalog.git")
    _drop_nova(work, new)
    code, stderr = push(work)
    assert code != 0
    assert f"{refusal}: environments attach it: 2; detach it first" in stderr, stderr
    assert head(gitops_store, "catalog.git") == before
    env = clone(gitops_store, tmp_path / "env", "environments/2.git")
    commit_files(env, {"global/values/nova_conf.yaml": "a: 1\n"})
    assert push(env)[0] == 0  # environment.yaml still names only components that exist


def test_a_catalog_push_may_drop_a_component_no_environment_attaches(gitops_store, tmp_path):
    _attach_nova(gitops_store)
    gitops_store.environments.update(2, {"components": ["fuel"]})
    work = clone(gitops_store, tmp_path, "catalog.git")
    _drop_nova(work, "nova2")
    assert push(work)[0] == 0
    commit_files(work, {"components/nova2.yaml": None})
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


# -- 2. only regular files ------------------------------------------------------------------
GITLINK = "1111111111111111111111111111111111111111"


def test_gitlinks_and_symlinks_are_refused_naming_each(gitops_store, tmp_path):
    before = head(gitops_store)
    work = clone(gitops_store, tmp_path)
    for path in ("nodes/1/values/globals.yaml", "inventory/nodes/5.yaml"):
        git("update-index", "--add", "--cacheinfo", f"160000,{GITLINK},{path}", cwd=work)
    (work / "nodes/2/values/astute.yaml").unlink()
    os.symlink("port: 7", work / "nodes/2/values/astute.yaml")
    os.symlink("environment.yaml", work / "README.md")
    git("add", "nodes/2/values/astute.yaml", "README.md", cwd=work)
    git("commit", "-qm", "gitlinks and symlinks", cwd=work)
    code, stderr = push(work)
    assert code != 0
    for path in ("nodes/1/values/globals.yaml", "inventory/nodes/5.yaml"):
        assert f"{path}: a gitlink (submodule entry, mode 160000), not a regular file" in stderr
    for path in ("nodes/2/values/astute.yaml", "README.md"):
        assert f"{path}: a symbolic link (mode 120000), not a regular file" in stderr, stderr
    assert head(gitops_store) == before


def _commit_symlink(repository, path: str, target: str) -> None:
    """Store a symlink at `path` of main by plumbing (no gate runs): a tree stored before."""
    done = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repository,
        input=target.encode(),
        capture_output=True,
        check=True,
    )
    blob = done.stdout.decode().strip()
    index = repository / "gitstore-test-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_DIR": str(repository)}

    def plumb(*args: str) -> str:
        return subprocess.run(
            ["git", *args], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    plumb("read-tree", "main")
    plumb("update-index", "--add", "--cacheinfo", f"120000,{blob},{path}")
    tree = plumb("write-tree")
    commit = plumb("commit-tree", tree, "-p", "main", "-m", "a symlink stored before")
    plumb("update-ref", "refs/heads/main", commit)
    index.unlink()


def test_a_read_never_serves_a_symlink_target_as_data(gitops_store):
    _commit_symlink(gitops_store.environment_path(1), "nodes/2/values/astute.yaml", "port: 7")
    snapshot = gitops_store.environment_repo(1).snapshot()
    for read in (snapshot.read, snapshot.read_yaml, snapshot.read_mapping):
        with pytest.raises(InvalidInput, match="symbolic link .*not a regular file"):
            read("nodes/2/values/astute.yaml")


# -- 3. path names that are not UTF-8 -------------------------------------------------------
def test_a_path_that_is_not_utf8_is_named_and_logged(gitops_store, tmp_path):
    work = clone(gitops_store, tmp_path)
    folder = os.fsencode(work) + b"/nodes/n\xff/values"
    os.makedirs(folder)
    with open(folder + b"/globals.yaml", "wb") as handle:
        handle.write(b"x: 1\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "a byte that is not UTF-8", cwd=work)
    log = tmp_path / "server.log"
    code, stderr = push(work, GITSTORE_LOG_TARGET=str(log), GITSTORE_LOG_FORMAT="json")
    assert code != 0
    assert "Logging error" not in stderr and "Traceback" not in stderr, stderr
    assert "is not valid UTF-8" in stderr, stderr
    assert "invisible" not in stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(line.get("event") == "refusal" for line in lines), lines


# -- 4. the document limits of REST writes ---------------------------------------------------
def test_a_resource_document_over_document_keys_is_refused(gitops_store, tmp_path):
    (gitops_store.root / "limits.yaml").write_text("document_keys: 100\n")
    work = clone(gitops_store, tmp_path)
    text = "".join(f"k{i}: {i}\n" for i in range(101))
    commit_files(work, {"nodes/3/values/globals.yaml": text})
    code, stderr = push(work)
    assert code != 0
    assert "nodes/3/values/globals.yaml: " in stderr
    assert "the limit document_keys" in stderr, stderr


def test_a_resource_document_over_document_bytes_is_refused(gitops_store, tmp_path):
    (gitops_store.root / "limits.yaml").write_text("document_bytes: 1000\n")
    work = clone(gitops_store, tmp_path)
    commit_files(work, {"nodes/3/values/globals.yaml": f"x: {'a' * 1000}\n"})
    code, stderr = push(work)
    assert code != 0
    assert "nodes/3/values/globals.yaml: " in stderr
    assert "the limit document_bytes" in stderr, stderr


# -- 5. `.yml` where the layout reads `.yaml` ------------------------------------------------
def test_a_yml_file_is_refused_naming_the_name_the_layout_reads(gitops_store, tmp_path):
    work = clone(gitops_store, tmp_path)
    commit_files(
        work,
        {
            "settings/editable.yml": "db_password: hunter2\n",
            "settings/generated.yml": "plain: content\n",
            ".gitlab-ci.yml": "review: {script: [true]}\n",  # forge metadata: not checked
        },
    )
    code, stderr = push(work)
    assert code != 0
    for name in ("editable", "generated"):
        assert (
            f"settings/{name}.yml: gitstore reads only .yaml files; "
            f"name it settings/{name}.yaml" in stderr
        ), stderr
    assert ".gitlab-ci.yml" not in stderr
