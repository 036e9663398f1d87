"""The push gate guards every ref, not only main: real `git push` over `git http-backend`.

Labels may be created but never moved nor deleted by a push; review branches stay accepted; no
pushed ref may take a name `version=` would read as something else; `refs/gitstore/` and other
namespaces are refused.
"""

from __future__ import annotations

import pytest
import requests

from .helpers import commit_files, git
from .test_push import ASTUTE, clone, served_commit

LABELS = "/api/v1/config/environments/1/labels"


def push_ref(work, spec: str, *args: str):
    return git("push", *args, "origin", spec, cwd=work, check=False)


def remote_refs(work) -> dict[str, str]:
    lines = git("ls-remote", "origin", cwd=work).stdout.splitlines()
    return {ref: sha for sha, ref in (line.split("\t") for line in lines)}


@pytest.fixture
def work(served, tmp_path):
    _, server = served
    return clone(server, tmp_path)


def test_a_label_is_created_by_push_and_never_moved_nor_deleted(served, work):
    _, server = served
    first = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    git("tag", "-a", "pushed-label", "-m", "release", cwd=work)
    done = push_ref(work, "refs/tags/pushed-label")
    assert done.returncode == 0, done.stderr
    got = requests.get(server.url + ASTUTE, params={"version": "pushed-label"}, timeout=10)
    assert got.status_code == 200 and got.headers["X-Gitstore-Commit"] == first

    commit_files(work, {"nodes/3/values/globals.yaml": "x: 2\n"})
    git("tag", "-f", "-a", "pushed-label", "-m", "moved", cwd=work)
    moved = push_ref(work, "refs/tags/pushed-label", "--force")
    assert moved.returncode != 0
    assert "label 'pushed-label' is never moved by a push" in moved.stderr
    deleted = push_ref(work, ":refs/tags/pushed-label")
    assert deleted.returncode != 0
    assert "label 'pushed-label' is never deleted by a push" in deleted.stderr
    tag = remote_refs(work)["refs/tags/pushed-label^{}"]
    assert tag == first


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("refs/tags/main", "reserved"),
        ("refs/tags/HEAD", "reserved"),
        ("refs/tags/12", "must not be a number"),
        ("refs/tags/deadbeef", "looks like a commit id"),
        ("refs/heads/HEAD", "would read it as"),
        ("refs/heads/ORIG_HEAD", "would read it as"),
        ("refs/heads/42", "would read it as"),
        ("refs/heads/abc1234", "would read it as"),
        ("refs/gitstore/mirror/incoming", "gitstore's own ref"),
        ("refs/gitstore/review/1/head", "gitstore's own ref"),
        ("refs/gitstore/p", "gitstore's own ref"),  # the staging ref of pushes.py
        ("refs/notes/commits", "only branches (refs/heads/) and labels"),
    ],
)
def test_a_ref_name_version_would_misread_is_refused(served, work, ref, says):
    _, server = served
    served_before = served_commit(server)
    done = push_ref(work, f"HEAD:{ref}")
    assert done.returncode != 0
    assert says in done.stderr
    assert ref not in remote_refs(work)
    got = requests.get(server.url + ASTUTE, params={"version": "main"}, timeout=10)
    assert got.headers["X-Gitstore-Commit"] == served_before


def test_review_branches_are_accepted_but_not_under_a_label_name(served, work):
    _, server = served
    commit_files(work, {"nodes/3/values/globals.yaml": "x: 3\n"}, "review me")
    done = push_ref(work, "HEAD:refs/heads/review/mtu")
    assert done.returncode == 0, done.stderr
    assert push_ref(work, ":refs/heads/review/mtu").returncode == 0  # deleting one is fine
    created = requests.post(server.url + LABELS, json={"name": "taken-name"}, timeout=10)
    assert created.status_code == 201, created.text
    clash = push_ref(work, "HEAD:refs/heads/taken-name")
    assert clash.returncode != 0
    assert "a label of that name exists" in clash.stderr
