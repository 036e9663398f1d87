"""HTTP caching: ETags follow the inputs of an answer; 304 through a real gunicorn server."""

from __future__ import annotations

import os
import subprocess

import pytest
import requests
from live_server import GUNICORN, free_port, stop_process, wait_until_answers
from short_ids import short_id

from .helpers import ENV, put

NODE1 = f"{ENV}/nodes/1/resources/astute/values"


def test_etag_survives_an_unrelated_commit_and_changes_with_a_relevant_one(fuel_store, client):
    put(fuel_store, "", {"a": 1})
    put(fuel_store, "nodes/1", {"b": 1})
    first = client.get(f"{NODE1}?effective")
    etag = first.headers["ETag"]
    put(fuel_store, "nodes/2", {"b": 2})  # another node
    put(fuel_store, "", {"x": 1}, resource="globals")  # another resource
    second = client.get(f"{NODE1}?effective")
    assert second.headers["ETag"] == etag
    assert int(second.headers["X-Gitstore-Version"]) == int(first.headers["X-Gitstore-Version"]) + 2
    put(fuel_store, "", {"a": 2})  # global feeds node 1
    assert client.get(f"{NODE1}?effective").headers["ETag"] != etag


def test_if_none_match_and_cache_control(fuel_store, client):
    put(fuel_store, "nodes/1", {"known": True}, resource="globals")  # node 1 exists
    commit = put(fuel_store, "", {"a": 1}).commit
    response = client.get(f"{NODE1}?effective")
    assert response.headers["Cache-Control"] == "public, max-age=5"
    cached = client.get(f"{NODE1}?effective", headers={"If-None-Match": response.headers["ETag"]})
    assert cached.status_code == 304 and cached.data == b""
    assert cached.headers["X-Gitstore-Commit"] == commit
    pinned = client.get(f"{NODE1}?effective&version={commit}")
    assert pinned.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert pinned.headers["X-Gitstore-Version"] == "3"
    prefix = short_id(commit)
    short = client.get(f"{NODE1}?effective&version={prefix}")
    assert short.headers["Cache-Control"] == "public, max-age=5"


def test_credentials_make_answers_private_and_reveals_are_never_stored(fuel_store, client):
    put(fuel_store, "nodes/1", {"known": True}, resource="globals")  # node 1 exists
    commit = put(fuel_store, "", {"a": 1}).commit
    token = {"Authorization": "Bearer some-token"}  # an open store ignores it, caches must not
    assert client.get(NODE1, headers=token).headers["Cache-Control"] == "private, max-age=5"
    pinned = client.get(f"{NODE1}?version={commit}", headers={"X-Auth-Token": "t"})
    assert pinned.headers["Cache-Control"] == "private, max-age=31536000, immutable"
    revealed = client.get(f"{NODE1}?effective&reveal=1")
    assert revealed.status_code == 200
    assert revealed.headers["Cache-Control"] == "private, no-store"


def test_history_etag_ignores_commits_outside_the_filter(fuel_store, client):
    put(fuel_store, "nodes/1", {"a": 1})
    url = f"{ENV}/history?path=nodes/1&resource=astute"
    etag = client.get(url).headers["ETag"]
    put(fuel_store, "nodes/2", {"a": 1})
    assert client.get(url, headers={"If-None-Match": etag}).status_code == 304
    put(fuel_store, "nodes/1", {"a": 2})
    assert client.get(url, headers={"If-None-Match": etag}).status_code == 200


@pytest.fixture
def server(fuel_store, tmp_path):
    """gunicorn serving `fuel_store` on a free port; yields its base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSTORE_")}
    env["GITSTORE_ROOT"] = str(fuel_store.root)
    log = (tmp_path / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        [str(GUNICORN), "-w", "2", "-b", f"127.0.0.1:{port}", "gitstore.api:create_app()"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(process, url, tmp_path / "gunicorn.log")
        yield url
    finally:
        stop_process(process)
        log.close()


def test_304_through_a_real_server(fuel_store, server):
    put(fuel_store, "nodes/1", {"a": 1})
    first = requests.get(f"{server}{NODE1}?effective", timeout=10)
    assert first.status_code == 200 and first.json() == {"a": 1}
    etag = first.headers["ETag"]
    put(fuel_store, "nodes/2", {"a": 2})  # unrelated, made while the server runs
    again = requests.get(f"{server}{NODE1}?effective", headers={"If-None-Match": etag}, timeout=10)
    assert again.status_code == 304
    assert again.headers["X-Gitstore-Version"] == "3" and again.headers["ETag"] == etag
    put(fuel_store, "nodes/1", {"a": 3})
    changed = requests.get(
        f"{server}{NODE1}?effective", headers={"If-None-Match": etag}, timeout=10
    )
    assert changed.status_code == 200 and changed.json() == {"a": 3}
