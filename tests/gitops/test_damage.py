"""A repository damaged on disk: its reads are 503 naming it, every other one stays served.

Real repositories are corrupted on disk under real gunicorn (two workers): a truncated ref, a
ref to a missing object, a loose blob overwritten with garbage. Each case damages its own
environment of one shared store, so the healthy environment 1 is checked against all of them.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import requests
from loose_objects import loose_object

from gitstore import Store
from gitstore.errors import Damaged

from .helpers import fill, start_gunicorn

API = "/api/v1/config/environments"
CASES = {2: "truncated-ref", 3: "missing-object", 4: "corrupt-blob"}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("damaged")
    store = fill(Store.init(workdir / "root"))
    for env_id in CASES:
        store.environments.create(
            {"id": env_id, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
        )
        store.config.put(env_id, [], "astute", "values", {"port": env_id})
    blob = _blob(store.environment_path(4), "global/values/astute.yaml")
    loose_object(store.environment_path(4), blob)  # the corrupt-blob case overwrites its file
    server = start_gunicorn(store.root, workdir)
    yield store, server
    server.stop()


def _corrupt(store: Store, env_id: int) -> str:
    """Damage environment `env_id` as its case says; the words its 503 must hold."""
    repo = store.environment_path(env_id)
    main = repo / "refs" / "heads" / "main"
    case = CASES[env_id]
    if case == "truncated-ref":
        main.write_bytes(b"")
        return "refs/heads/main is empty"
    if case == "missing-object":
        main.write_text("0123456789" * 4 + "\n")
        return "refs/heads/main points at 0123456789012345678901234567890123456789"
    blob = _blob(repo, "global/values/astute.yaml")
    path = repo / "objects" / blob[:2] / blob[2:]
    os.chmod(path, 0o644)
    path.write_bytes(b"this is not a zlib stream")
    return f"global/values/astute.yaml (object {blob}) is unreadable"


def _blob(repo, path: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-parse", f"main:{path}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def _status(server, verify: bool = False) -> dict:
    url = server.url + "/api/v1/status" + ("?verify=1" if verify else "")
    response = requests.get(url, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("env_id", sorted(CASES), ids=lambda e: CASES[e])
def test_a_damaged_repository_is_503_and_the_others_stay_served(damaged, env_id):
    store, server = damaged
    words = _corrupt(store, env_id)
    name = f"environments/{env_id}.git"
    for _ in range(4):  # new connections: both workers answer some of them
        response = requests.get(f"{server.url}{API}/{env_id}/resources/astute/values", timeout=30)
        assert response.status_code == 503, response.text
        body = response.json()
        assert set(body) == {"status", "message"} and body["status"] == 503
        assert name in body["message"] and words in body["message"], body["message"]
        healthy = requests.get(f"{server.url}{API}/1/resources/astute/values", timeout=30)
        assert healthy.status_code == 200 and healthy.json()["port"] == 8000
        listing = requests.get(server.url + API, timeout=30)
        assert listing.status_code == 200, listing.text
        assert 1 in [env["id"] for env in listing.json()]
    status = _status(server, verify=CASES[env_id] == "corrupt-blob")
    row = next(r for r in status["repositories"] if r["repository"] == name)
    assert words in row["damage"], row
    assert name in status["damaged"]
    assert "environments/1.git" not in status["damaged"]


def test_a_damaged_ref_is_reported_without_verify(damaged):
    store, server = damaged
    _corrupt(store, 2)
    row = next(
        r for r in _status(server)["repositories"] if r["repository"] == "environments/2.git"
    )
    assert row["damage"] == "refs/heads/main is empty" and row["served_commit"] is None


def test_a_repository_git_cannot_open_is_damaged_not_missing(fuel_store):
    (fuel_store.environment_path(1) / "config").write_text("[core\nthis is not a config\n")
    store = Store(fuel_store.root)  # fresh handles: a served one keeps what it opened
    with pytest.raises(Damaged, match=r"environments/1\.git\) is damaged: git cannot open it"):
        store.environments.get(1)
    assert store.environments.list().data == []
