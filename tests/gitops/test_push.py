"""Hosted mode: real `git clone` / `git push` over smart HTTP against real gunicorn (2 workers).

One server and store serve the whole module; each test clones afresh from the served main.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
import requests
import yaml

from .helpers import commit_files, git

ASTUTE = "/api/v1/config/environments/1/resources/astute/values"


def served_commit(server, repository: str = "environments/1.git") -> str:
    rows = requests.get(server.url + "/api/v1/status", timeout=10).json()["repositories"]
    return next(r["served_commit"] for r in rows if r["repository"] == repository)


def clone(server, tmp_path, repository: str = "environments/1.git"):
    work = tmp_path / "work"
    git("clone", "-q", f"{server.url}/git/{repository}", str(work))
    return work


def push(work, *args: str):
    return git("push", *args, "origin", "main", cwd=work, check=False)


def test_good_push_is_served_on_the_next_get_by_every_worker(served, tmp_path):
    store, server = served
    work = clone(server, tmp_path)
    new = commit_files(
        work, {"global/values/astute.yaml": "port: 9000\ndebug: false\nregion: one\n"}
    )
    done = push(work)
    assert done.returncode == 0, done.stderr
    for _ in range(8):  # new connections: both workers answer some of them
        response = requests.get(server.url + ASTUTE, timeout=10)
        assert response.json()["port"] == 9000
        assert response.headers["X-Gitstore-Commit"] == new
    assert served_commit(server) == new
    objects = store.environment_repo(1).path / "objects"
    assert not (objects / new[:2] / new[2:]).exists()  # kept as the pack it came in, not loose


BAD_PUSHES = {
    "yaml-does-not-parse": (
        {"nodes/1/values/astute.yaml": "port: 1\nregion: [one\n"},
        ["nodes/1/values/astute.yaml:3:", "YAML does not parse"],
    ),
    "repeated-key": (
        {"nodes/1/values/astute.yaml": "port: 1\nport: 2\n"},
        ["nodes/1/values/astute.yaml:2:", "key 'port' is repeated"],
    ),
    "not-a-mapping": (
        {"global/values/globals.yaml": "- a\n- b\n"},
        ["global/values/globals.yaml:1:", "document must be a mapping, not a list"],
    ),
    "undeclared-level": (
        {"role/compute/values/astute.yaml": "port: 1\n"},
        ["role/compute/values/astute.yaml:", "top-level folder 'role'"],
    ),
    "invalid-level-value": (
        {"nodes/.hidden/values/astute.yaml": "port: 1\n"},
        ["nodes/.hidden/values/astute.yaml:", "invalid level value"],
    ),
    "invisible-level-value": (
        {"nodes/1\u200b/values/astute.yaml": "port: 1\n"},
        ["invalid level value", "U+200B ZERO WIDTH SPACE"],
    ),
    "schema": (
        {"global/values/astute.yaml": "port: 8000\nregion: 5\n"},
        ["global/values/astute.yaml:2: key 'region':", "5 is not of type 'string'"],
    ),
    "environment-yaml": (
        {
            "environment.yaml": "id: 1\ncomponents: [fuel]\n"
            "hierarchy: [nodes, nodes]\nmerge: sideways\n"
        },
        [
            "environment.yaml:4: key 'merge':",
            "'sideways' is not one of",
            "environment.yaml:3: key 'hierarchy': level 'nodes' is repeated",
        ],
    ),
    "unknown-resource": (
        {"global/values/nope.yaml": "a: 1\n"},
        ["global/values/nope.yaml:", "resource 'nope' is not defined"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PUSHES))
def test_bad_push_is_rejected_and_main_does_not_move(served, tmp_path, case):
    _, server = served
    files, expected = BAD_PUSHES[case]
    before = served_commit(server)
    work = clone(server, tmp_path)
    commit_files(work, files, f"bad: {case}")
    done = push(work)
    assert done.returncode != 0
    assert "pre-receive hook declined" in done.stderr
    for fragment in expected:
        assert fragment in done.stderr, done.stderr
    assert served_commit(server) == before
    assert requests.get(server.url + ASTUTE, timeout=10).headers["X-Gitstore-Commit"] == before


def test_force_push_and_deleting_main_are_refused(served, tmp_path):
    _, server = served
    before = served_commit(server)
    work = clone(server, tmp_path)
    git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    commit_files(work, {"global/values/globals.yaml": "rewritten: true\n"}, "rewrite history")
    done = push(work, "--force")
    assert done.returncode != 0
    assert "non-fast-forward push to main refused" in done.stderr, done.stderr
    deleted = git("push", "origin", ":main", cwd=work, check=False)
    assert deleted.returncode != 0
    assert "deleting main is refused" in deleted.stderr, deleted.stderr
    assert served_commit(server) == before


def test_other_branches_are_accepted_and_never_served(served, tmp_path):
    _, server = served
    before = served_commit(server)
    work = clone(server, tmp_path)
    commit_files(work, {"global/values/globals.yaml": "- draft\n"}, "work in progress")
    done = git("push", "origin", "HEAD:refs/heads/draft", cwd=work, check=False)
    assert done.returncode == 0, done.stderr
    assert served_commit(server) == before


def test_catalog_push_is_gated_too(served, tmp_path):
    _, server = served
    work = clone(server, tmp_path, "catalog.git")
    component = yaml.safe_load((work / "components/fuel.yaml").read_text())
    component["resource_definitions"][0]["schema"] = 12
    commit_files(work, {"components/fuel.yaml": yaml.safe_dump(component)}, "break a schema")
    done = push(work)
    assert done.returncode != 0
    assert (
        "components/fuel.yaml:3: key 'resource_definitions.0.schema': must be a mapping"
        in done.stderr
    ), done.stderr
    git("reset", "-q", "--hard", "origin/main", cwd=work)
    component = yaml.safe_load((work / "components/fuel.yaml").read_text())
    component["resource_definitions"].append({"id": 99, "name": "pushed"})
    commit_files(work, {"components/fuel.yaml": yaml.safe_dump(component)}, "add a resource")
    assert push(work).returncode == 0
    names = [
        d["name"]
        for d in requests.get(server.url + "/api/v1/config/resource_definitions", timeout=10).json()
    ]
    assert "pushed" in names


def test_a_large_push_streams_through_chunked_requests(served, tmp_path):
    _, server = served
    work = clone(server, tmp_path)
    (work / "blob.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # > http.postBuffer (1 MiB)
    new = commit_files(work, {}, "a large non-YAML file")
    done = push(work)
    assert done.returncode == 0, done.stderr
    assert served_commit(server) == new
    again = tmp_path / "again"
    git("clone", "-q", f"{server.url}/git/environments/1.git", str(again))
    assert (again / "blob.bin").read_bytes() == (work / "blob.bin").read_bytes()


@pytest.mark.parametrize(
    "path",
    [
        "/git/environments/1.git/../../gitops/mirrors.json",
        "/git/environments/1.git/config",
        "/git/environments/99.git/info/refs",
        "/git/archive/environments/1.git/info/refs",
        "/git/catalog.git",
        "/git/environments/01.git/info/refs",
    ],
)
def test_only_store_repositories_are_reachable(served, path):
    _, server = served
    response = requests.get(server.url + path, timeout=10)
    assert response.status_code == 404, response.text
    assert "[core]" not in response.text


def test_a_gzip_encoded_fetch_negotiation_works(served, tmp_path):
    _, server = served
    work = clone(server, tmp_path)
    for index in range(40):  # local commits the server lacks: many `have` lines, >1 KiB
        commit_files(work, {"README.md": f"draft {index}\n"}, f"draft {index}")
    other = tmp_path / "other"
    git("clone", "-q", f"{server.url}/git/environments/1.git", str(other))
    new = commit_files(other, {"global/values/globals.yaml": "fetched: true\n"})
    assert push(other).returncode == 0
    env = {**os.environ, "GIT_TRACE_CURL": "1", "GIT_TRACE_CURL_NO_DATA": "1"}
    done = subprocess.run(
        ["git", "fetch", "origin"], cwd=work, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Content-Encoding: gzip" in done.stderr
    assert git("rev-parse", "origin/main", cwd=work).stdout.strip() == new


@pytest.mark.parametrize("levels", [65, 990])
def test_a_document_deeper_than_a_rest_body_may_be_is_refused_naming_it(served, tmp_path, levels):
    # The gate let it in (a leaf at depth 700 made every read a 500; at 990 the gate itself
    # failed with a RecursionError); REST bodies stop at 64.
    _, server = served
    work = clone(server, tmp_path)
    text = "".join(f"{'  ' * depth}k:\n" for depth in range(levels - 1))
    text += f"{'  ' * (levels - 1)}k: 1\n"
    commit_files(work, {"nodes/3/values/globals.yaml": text}, "a deep document")
    before = served_commit(server)
    done = push(work)
    assert done.returncode != 0
    assert "nodes/3/values/globals.yaml" in done.stderr
    assert "nests deeper than 64 levels" in done.stderr and "RecursionError" not in done.stderr
    assert served_commit(server) == before


def test_an_alias_bomb_push_is_refused_fast_naming_the_file(served, tmp_path):
    from hostile import alias_bomb

    _, server = served
    before = served_commit(server)
    work = clone(server, tmp_path)
    bomb = alias_bomb(9)
    assert len(bomb) < 500
    commit_files(work, {"nodes/1/values/globals.yaml": bomb}, "a billion laughs")
    started = time.monotonic()
    done = push(work)
    assert time.monotonic() - started < 20  # generous: the refusal itself takes milliseconds
    assert done.returncode != 0
    assert "nodes/1/values/globals.yaml:5:" in done.stderr, done.stderr
    assert "aliases expand it by more than 10000 nodes" in done.stderr
    assert served_commit(server) == before
