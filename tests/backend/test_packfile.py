"""A write's objects as one pack and index (`packfile.py`), checked against git's own tools."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gitstore.backend import packfile

from .helpers import git

OBJECTS = [
    (3, b"hello\n"),
    (3, b""),  # an empty blob: size 0 in the entry header
    (3, bytes(range(256)) * 200),  # 51,200 bytes: a size of several header bytes
    (2, b"100644 a\0" + bytes(20)),
    (1, b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nm\n"),
]


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "r.git"
    git(path.parent, "init", "-q", "--bare", str(path))
    return path


def _hash(repo: Path, kind: str, data: bytes) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={repo}", "hash-object", "-t", kind, "--literally", "--stdin"],
        input=data, capture_output=True, check=True,
    )  # fmt: skip
    return done.stdout.decode().strip()


def test_object_ids_are_git_s(repo):
    for kind, data in OBJECTS:
        name = packfile.KINDS[kind].decode()
        assert packfile.object_id(kind, data).hex() == _hash(repo, name, data)


def test_the_index_is_the_one_git_index_pack_makes(repo, tmp_path):
    pack = packfile.write_pack(repo / "objects" / "pack", OBJECTS, durable=True)
    assert git(repo, "verify-pack", "-v", str(pack.with_suffix(".idx"))).endswith(": ok")
    copy = tmp_path / "copy.pack"
    shutil.copy(pack, copy)
    git(repo, "index-pack", "-o", str(tmp_path / "copy.idx"), str(copy))
    assert (tmp_path / "copy.idx").read_bytes() == pack.with_suffix(".idx").read_bytes()
    assert pack.name == f"pack-{pack.read_bytes()[-20:].hex()}.pack"
    for kind, data in OBJECTS:  # every object reads back whole
        oid = packfile.object_id(kind, data).hex()
        shown = subprocess.run(
            ["git", f"--git-dir={repo}", "cat-file", packfile.KINDS[kind].decode(), oid],
            capture_output=True, check=True,
        )  # fmt: skip
        assert shown.stdout == data


@pytest.mark.parametrize("version", [1, 2])
def test_an_index_of_either_version_lists_what_git_show_index_lists(repo, tmp_path, version):
    pack = packfile.write_pack(repo / "objects" / "pack", OBJECTS, durable=False)
    idx = tmp_path / f"v{version}.idx"
    git(repo, "index-pack", f"--index-version={version}", "-o", str(idx), str(pack))
    with idx.open("rb") as file:
        shown = subprocess.run(["git", "show-index"], stdin=file, capture_output=True, text=True)
    listed = [line.split()[1] for line in shown.stdout.splitlines()]
    assert packfile.indexed_ids(idx) == listed and len(listed) == len(OBJECTS)
    assert packfile.indexed_count(idx) == len(OBJECTS)
    assert packfile.indexed_count(tmp_path / "gone.idx") == 0


def test_only_the_pack_and_its_index_are_left_read_only(repo):
    folder = repo / "objects" / "pack"
    pack = packfile.write_pack(folder, OBJECTS[:1] * 3, durable=False)  # repeats packed once
    assert sorted(p.name for p in folder.iterdir()) == [pack.stem + ".idx", pack.name]
    assert all(p.stat().st_mode & 0o777 == 0o444 for p in folder.iterdir())
    assert git(repo, "count-objects", "-v").splitlines()[2:4] == ["in-pack: 1", "packs: 1"]


@pytest.mark.parametrize("failing", [packfile.TMP_PACK, packfile.TMP_IDX])
def test_a_failed_write_leaves_no_file(repo, monkeypatch, failing):
    folder = repo / "objects" / "pack"
    real_rename = os.rename

    def rename(source, target):
        if Path(source).name.startswith(failing):
            raise OSError(28, "No space left on device")
        real_rename(source, target)

    monkeypatch.setattr(packfile.os, "rename", rename)
    with pytest.raises(OSError):
        packfile.write_pack(folder, OBJECTS, durable=False)
    assert list(folder.iterdir()) == []
