"""`git push` lands while REST writers hammer the same repository (real gunicorn, real git).

Before pushes were queued with REST writers and re-aimed when their base went stale, git
refused nearly every push under REST write load ("cannot lock ref ... is at X but expected
Y"): with 6 REST writers, 2 of 340 pushes landed. A longer run is `bench/push.py`.
"""

from __future__ import annotations

import threading
import time

import pytest
import requests
import yaml

from gitstore import Store

from .helpers import commit_files, fill, git, start_gunicorn
from .test_push import ASTUTE

REST_WRITERS = 3
PUSHES = 4


@pytest.fixture
def server(tmp_path):
    store = fill(Store.init(tmp_path / "root"))
    running = start_gunicorn(store.root, tmp_path)
    yield running
    running.stop()


def _hammer(url: str, name: str, stop: threading.Event, acked: list[str], failed: list[str]):
    n = 0
    while not stop.is_set():
        key = f"{name}-{n}"
        got = requests.put(f"{url}{ASTUTE}/keys/set", json=[[key, n]], timeout=60)
        (acked if got.status_code == 204 else failed).append(f"{key}: {got.status_code}")
        n += 1


def test_every_push_lands_under_rest_write_load(server, tmp_path):
    stop = threading.Event()
    acked: list[str] = []
    failed: list[str] = []
    writers = [
        threading.Thread(target=_hammer, args=(server.url, f"w{i}", stop, acked, failed))
        for i in range(REST_WRITERS)
    ]
    for writer in writers:
        writer.start()
    try:
        results = []
        for k in range(PUSHES):
            work = tmp_path / f"push-{k}"
            git("clone", "-q", f"{server.url}/git/environments/1.git", str(work))
            time.sleep(0.3)  # main moves under the clone: the push's base goes stale
            commit_files(work, {f"nodes/{k + 10}/values/globals.yaml": f"pushed: {k}\n"})
            results.append(git("push", "origin", "main", cwd=work, check=False))
        overlap = tmp_path / "overlap"
        git("clone", "-q", f"{server.url}/git/environments/1.git", str(overlap))
        time.sleep(0.3)
        commit_files(overlap, {"global/values/astute.yaml": "port: 1\nregion: x\n"})
        clash = git("push", "origin", "main", cwd=overlap, check=False)
    finally:
        stop.set()
        for writer in writers:
            writer.join(timeout=120)

    assert [r.returncode for r in results] == [0] * PUSHES, [r.stderr for r in results]
    assert clash.returncode != 0
    assert "changed global/values/astute.yaml too" in clash.stderr
    assert failed == []
    assert len(acked) > PUSHES  # the writers really wrote meanwhile
    final = tmp_path / "final"
    git("clone", "-q", f"{server.url}/git/environments/1.git", str(final))
    for k in range(PUSHES):
        text = (final / f"nodes/{k + 10}/values/globals.yaml").read_text()
        assert yaml.safe_load(text) == {"pushed": k}
    values = requests.get(server.url + ASTUTE, timeout=10).json()
    assert {line.split(":")[0] for line in acked} <= set(values)
    assert values["port"] == 8000  # the refused push changed nothing
    log = git("log", "--first-parent", "--format=%P", cwd=final).stdout.splitlines()
    merges = [parents for parents in log if len(parents.split()) == 2]
    assert merges, "no push landed by merge: the load never made a base stale"


def test_a_push_with_a_stale_base_lands_as_a_merge_keeping_the_rest_write(server, tmp_path):
    work = tmp_path / "work"
    git("clone", "-q", f"{server.url}/git/environments/1.git", str(work))
    written = requests.put(f"{server.url}{ASTUTE}/keys/set", json=[["kept", 1]], timeout=30)
    assert written.status_code == 204
    rest_commit = written.headers["X-Gitstore-Commit"]
    pushed = commit_files(work, {"nodes/20/values/globals.yaml": "pushed: true\n"})
    done = git("push", "origin", "main", cwd=work, check=False)  # git's own check passes
    assert done.returncode == 0, done.stderr
    final = tmp_path / "final"
    git("clone", "-q", f"{server.url}/git/environments/1.git", str(final))
    parents = git("log", "-1", "--format=%P", cwd=final).stdout.split()
    assert parents == [rest_commit, pushed]  # first parent: the served chain
    assert requests.get(server.url + ASTUTE, timeout=10).json()["kept"] == 1
    assert (final / "nodes/20/values/globals.yaml").read_text() == "pushed: true\n"
    refs = git("ls-remote", "origin", cwd=final).stdout
    assert "refs/gitstore/" not in refs  # the staging ref is gone
