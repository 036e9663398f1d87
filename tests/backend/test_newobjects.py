"""Objects made through `NewObjects` stay in memory, read back, and land as one pack that other
processes (git, and a pygit2 reader that opened the repository before) then read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pygit2
import pytest

from gitstore.backend.newobjects import NewObjects

from .helpers import fsck, git

SIGNATURE = pygit2.Signature("t", "t@example.com", 1700000000, 0)


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "r.git"
    pygit2.init_repository(str(path), bare=True, initial_head="main")
    return path


def _files(repo: Path) -> list[str]:
    objects = repo / "objects"
    return sorted(str(p.relative_to(objects)) for p in objects.rglob("*") if p.is_file())


def _commit(git_handle: pygit2.Repository, parents: list[pygit2.Oid]) -> pygit2.Oid:
    """A commit of `a` and `dir/b.yaml`, made with pygit2's own calls."""
    folder = git_handle.TreeBuilder()
    folder.insert("b.yaml", git_handle.create_blob(b"b: 2\n"), pygit2.GIT_FILEMODE_BLOB)
    root = git_handle.TreeBuilder()
    root.insert("a", git_handle.create_blob(b"a\n"), pygit2.GIT_FILEMODE_BLOB)
    root.insert("dir", folder.write(), pygit2.GIT_FILEMODE_TREE)
    return git_handle.create_commit(None, SIGNATURE, SIGNATURE, "m\n", root.write(), parents)


def test_objects_stay_in_memory_and_read_back_until_written(repo, tmp_path):
    objects = NewObjects(repo, durable=False)
    commit_id = _commit(objects.git, [])
    assert _files(repo) == []  # nothing on disk yet
    commit = objects.git[commit_id]
    assert commit.tree["dir"]["b.yaml"].data == b"b: 2\n"
    assert objects.git.odb.read_header(commit.tree["a"].id)[1] == 2
    assert objects.git.revparse_single(str(commit_id)[:10]).id == commit_id
    plain = pygit2.init_repository(str(tmp_path / "plain.git"), bare=True)
    assert _commit(plain, []) == commit_id  # the same objects as libgit2 writes loose
    assert len(objects) == 5


def test_written_objects_are_one_pack_that_git_reads(repo):
    objects = NewObjects(repo, durable=True)
    first = _commit(objects.git, [])
    pack = objects.write()
    assert pack is not None and len(objects) == 0
    second = _commit(NewObjects(repo, durable=True).git, [first])  # blobs and trees exist
    assert _files(repo) == [f"pack/{pack.stem}.idx", f"pack/{pack.name}"]  # nothing loose
    git(repo, "update-ref", "refs/heads/main", str(first))
    assert git(repo, "show", "main:dir/b.yaml") == "b: 2"
    fsck(repo)
    git(repo, "fsck", "--strict")
    assert second != first


def test_an_object_on_disk_is_not_written_again(repo):
    blob = git(repo, "hash-object", "-w", "--stdin")  # the empty blob, loose
    objects = NewObjects(repo, durable=False)
    assert str(objects.git.create_blob(b"")) == blob
    assert len(objects) == 0 and objects.write() is None
    assert _files(repo) == ["e6/9de29bb2d1d6434b8b29ae775ad8c2e48c5391"]


_READER = textwrap.dedent(
    """
    import sys, pygit2
    repo = pygit2.Repository(sys.argv[1])
    repo.get("0" * 40)  # opened and looked in before the pack exists
    print("ready", flush=True)
    commit = repo[sys.stdin.readline().strip()]
    print(commit.tree["dir"]["b.yaml"].data.decode().strip(), flush=True)
    """
)


def test_a_reader_in_another_process_finds_the_new_pack(repo):
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(repo)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout.readline().strip() == "ready"
        objects = NewObjects(repo, durable=False)
        commit_id = _commit(objects.git, [])
        objects.write()
        out, _ = reader.communicate(f"{commit_id}\n", timeout=30)
    finally:
        reader.kill()
    assert out.strip() == "b: 2"


def test_a_handle_per_round_does_not_grow_memory(repo):
    objects = NewObjects(repo, durable=False)
    _commit(objects.git, [])
    objects.write()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(5_000):  # a round's handle each, on a path object made anew
            assert len(NewObjects(Path(str(repo)), durable=False)) == 0
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000, f"{grown} bytes kept by 5,000 handles"


def test_past_the_packs_maintenance_has_not_rolled_up_objects_are_written_loose(repo, monkeypatch):
    """A store never served has no maintenance: one pack per commit would pile up, and every
    read that misses one searches them all (8 processes' 1,600 writes took 8x as long). While
    maintenance repacks, a burst of writes may pass its limit and still lands packs."""
    from gitstore.backend import handles, newobjects

    monkeypatch.setattr(newobjects, "PACKS_BEFORE_LOOSE_UNMAINTAINED", 1)
    monkeypatch.setattr(newobjects, "PACKS_BEFORE_LOOSE", 2)
    first = NewObjects(repo, durable=False)
    parent = _commit(first.git, [])
    assert first.write() is not None  # the first pack
    objects = NewObjects(repo, durable=False)
    commit = objects.git.create_commit(
        None, SIGNATURE, SIGNATURE, "again\n", objects.git[parent].tree.id, [parent]
    )
    assert objects.write() is None
    assert f"{str(commit)[:2]}/{str(commit)[2:]}" in _files(repo)  # loose, beside one pack
    git(repo, "update-ref", "refs/heads/main", str(commit))
    git(repo, "fsck", "--strict")
    handles.mark_repacked(repo)  # maintenance is at work: packs again, up to its larger limit
    maintained = NewObjects(repo, durable=False)
    maintained.git.create_commit(
        None, SIGNATURE, SIGNATURE, "third\n", maintained.git[parent].tree.id, [commit]
    )
    assert maintained.write() is not None
