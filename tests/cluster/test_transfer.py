"""The objects a commit adds to its parent, carried to another copy of the repository (the
primary's fast path of replication): the copy then holds the commit whole, `git fsck` clean;
a malformed stream is a 400-class error naming where it broke. Single node, real repositories."""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import pytest

from gitstore import Store
from gitstore.api import create_app
from gitstore.backend import remote
from gitstore.backend.repository import Repository
from gitstore.cluster.member import objects_of
from gitstore.cluster.transfer import decode_objects, encode_objects
from gitstore.errors import InvalidInput

from .conftest import seed_store


@pytest.fixture
def two_copies(tmp_path):
    seed = seed_store(tmp_path / "a")
    shutil.copytree(seed, tmp_path / "b")
    return tmp_path / "a", tmp_path / "b"


def test_a_commit_sent_as_its_new_objects_is_whole_on_the_other_copy(two_copies):
    a, b = two_copies
    store = Store(a)
    repo = store.environment_repo(1)
    old = repo.head()
    client = create_app({"TESTING": True}, store=store).test_client()
    path = "/api/v1/config/environments/1/nodes/7/resources/astute/values/keys/set"
    assert client.put(path, json=[["deep", {"a": [1, 2]}]]).status_code == 204
    new = repo.head()
    sent = decode_objects(encode_objects(remote.new_objects(repo, old, new)))
    copy = Repository(b / "environments/1.git", "copy")
    assert not remote.has_commit(copy, new)
    before = _object_files(copy)
    remote.add_objects(copy, sent)
    assert remote.has_commit(copy, new)
    assert remote.follow(copy, old, new)
    # one pack and its index, as the primary wrote them, not a loose file per object
    added = sorted(_object_files(copy) - before)
    assert [kind for kind, _ in added] == ["pack", "pack"], added
    assert {name.rsplit(".", 1)[1] for _, name in added} == {"idx", "pack"}, added
    fsck = subprocess.run(
        ["git", "--git-dir", str(copy.path), "fsck", "--strict"], capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


@pytest.mark.parametrize("body", [b"3 10\nshort", b"9 1\nx", b"nonsense", b"3 -1\n"])
def test_a_malformed_object_stream_is_refused(body):
    with pytest.raises(InvalidInput, match="malformed at byte 0"):
        decode_objects(body)


def test_a_round_of_chained_commits_is_sent_as_objects_oldest_commit_written_first(two_copies):
    """A round's chain (several commits, each on the one before) goes by the objects fast
    path too: the copy holds the tip whole, and the objects are written so that each commit
    lands after its tree and its parent (a peer killed half-way holds no commit with a gap)."""
    a, b = two_copies
    store = Store(a)
    repo = store.environment_repo(1)
    old = repo.head()
    client = create_app({"TESTING": True}, store=store).test_client()
    path = "/api/v1/config/environments/1/nodes/7/resources/astute/values/keys/set"
    for n in range(3):
        assert client.put(path, json=[[f"chained{n}", {"n": n}]]).status_code == 204
    tip = repo.head()
    parent, body = objects_of(repo, old, tip)
    assert parent == old
    written = list(reversed(decode_objects(body)))  # remote.add_objects writes the last first
    present, commits = set(), []
    for kind, data in written:
        object_id = _object_id(kind, data)
        if kind == 1:  # a commit: its tree and its parent are there already
            fields = dict(line.split(b" ", 1) for line in data.split(b"\n\n")[0].split(b"\n"))
            assert fields[b"tree"].decode() in present
            assert fields[b"parent"].decode() in ({old} | set(commits[-1:]))
            commits.append(object_id)
        present.add(object_id)
    assert commits[-1] == tip and len(commits) == 3
    copy = Repository(b / "environments/1.git", "copy")
    remote.add_objects(copy, decode_objects(body))
    assert remote.follow(copy, old, tip)
    fsck = subprocess.run(
        ["git", "--git-dir", str(copy.path), "fsck", "--strict"], capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def _object_files(repo: Repository) -> set[tuple[str, int]]:
    """Each file of the object store: ("loose", its path) or ("pack", its name)."""
    found = set()
    for path in (repo.path / "objects").rglob("*"):
        if path.is_file() and path.parent.name == "pack":
            found.add(("pack", path.name))
        elif path.is_file() and len(path.parent.name) == 2:
            found.add(("loose", str(path)))
    return found


def _object_id(kind: int, data: bytes) -> str:
    name = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}[kind]
    return hashlib.sha1(name + b" %d\0" % len(data) + data).hexdigest()
