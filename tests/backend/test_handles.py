"""A thread's pygit2 handle is opened again once packs were rewritten, so the packs a repack
deleted stop being searched and mapped."""

from __future__ import annotations

import gc
from pathlib import Path

import pygit2
import pytest

from gitstore.backend import handles
from gitstore.backend.handles import Handles, mark_repacked
from gitstore.backend.newobjects import NewObjects

from .helpers import git


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "r.git"
    pygit2.init_repository(str(path), bare=True, initial_head="main")
    return path


def _blob_in_a_pack(repo: Path, text: bytes) -> pygit2.Oid:
    objects = NewObjects(repo, durable=False)
    blob = objects.git.create_blob(text)
    objects.write()
    return blob


def _deleted_index_maps() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if ".idx (deleted)" in line)


def test_a_handle_is_kept_until_packs_are_rewritten(repo, monkeypatch):
    monkeypatch.setattr(handles, "CHECK_SECONDS", 0.0)
    found = Handles(repo)
    first = found.get()
    assert found.get() is first
    mark_repacked(repo)
    second = found.get()
    assert second is not first and found.get() is second


def test_a_handle_is_looked_at_only_every_check_seconds(repo, monkeypatch):
    monkeypatch.setattr(handles, "CHECK_SECONDS", 3600.0)
    found = Handles(repo)
    first = found.get()
    mark_repacked(repo)
    assert found.get() is first


def test_packs_a_repack_deleted_are_let_go(repo, monkeypatch):
    monkeypatch.setattr(handles, "CHECK_SECONDS", 0.0)
    found = Handles(repo)
    blobs = [_blob_in_a_pack(repo, b"blob %d\n" % n) for n in range(5)]
    for blob in blobs:
        assert found.get()[blob].data  # each pack loaded (libgit2 re-scans on a miss)
    git(repo, "update-ref", "refs/tags/keep", str(blobs[0]))
    git(repo, "update-ref", "refs/tags/also", str(blobs[1]))  # the new pack differs from all
    git(repo, "repack", "-a", "-d", "-q")  # the five small packs deleted
    before = _deleted_index_maps()
    assert before >= 5
    mark_repacked(repo)
    assert found.get()[blobs[0]].data == b"blob 0\n"  # a new handle, on the new pack
    gc.collect()
    assert _deleted_index_maps() <= before - 5
