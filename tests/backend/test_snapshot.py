"""Reading one commit: files, parsed YAML (cached by blob id), folders and commit details."""

from __future__ import annotations

import pytest

from gitstore.backend.changes import ChangeSet, Graft
from gitstore.backend.repository import Author, Repository
from gitstore.backend.snapshot import parsed_blob
from gitstore.errors import InvalidInput

ALICE = Author("Alice", "alice@example.com")


@pytest.fixture
def repo(tmp_path) -> Repository:
    first = ChangeSet("test: first commit\n\nwith a body")
    first.put("environment.yaml", b"id: 1\nhierarchy: [nodes]\n")
    first.put("global/values/astute.yaml", b"a: 1\nnested: {b: 2}\n")
    first.put("global/values/override/plugins.yaml", b"p: true\n")
    first.put("nodes/1/values/astute.yaml", b"a: 2\n")
    first.put("list.yaml", b"- 1\n- 2\n")
    first.put("broken.yaml", b"a: [1, 2\nb: 3\n")
    first.put("empty.yaml", b"")
    return Repository.create(tmp_path / "env.git", "environment 1", first, ALICE)


@pytest.fixture
def snap(repo):
    return repo.snapshot()


def test_read_returns_bytes_or_none(snap):
    assert snap.read("nodes/1/values/astute.yaml") == b"a: 2\n"
    assert snap.read("/nodes/1/values/astute.yaml") == b"a: 2\n"
    assert snap.read("nodes/9/values/astute.yaml") is None
    assert snap.read("nodes") is None  # a folder is not a file
    assert snap.read("environment.yaml/x") is None  # through a file


def test_read_yaml_parses_and_shares_by_blob_id(repo, snap):
    doc = snap.read_yaml("global/values/astute.yaml")
    assert doc == {"a": 1, "nested": {"b": 2}}
    again = repo.snapshot().read_yaml("global/values/astute.yaml")
    assert again is doc
    assert repo.caches.parsed_blobs.get(snap.object_id("global/values/astute.yaml")) is doc
    assert snap.read_yaml("absent.yaml") is None


def test_parse_errors_name_repository_path_and_line(snap):
    with pytest.raises(InvalidInput, match=r"environment 1:broken.yaml: line 2") as caught:
        snap.read_yaml("broken.yaml")
    assert caught.value.path == "environment 1:broken.yaml"


def test_read_mapping(snap):
    assert snap.read_mapping("global/values/override/plugins.yaml") == {"p": True}
    assert snap.read_mapping("empty.yaml") == {}
    assert snap.read_mapping("absent.yaml") is None
    with pytest.raises(InvalidInput, match="list.yaml: document is not a mapping"):
        snap.read_mapping("list.yaml")


def test_exists_is_tree_and_object_id(snap):
    assert snap.exists("global/values") and snap.is_tree("global/values")
    assert snap.exists("environment.yaml") and not snap.is_tree("environment.yaml")
    assert not snap.exists("nodes/2")
    assert snap.object_id("nodes/2") is None
    assert len(snap.object_id("environment.yaml")) == 40
    assert snap.object_id("") == snap.object_id("/")


def test_graft_describes_an_object(snap):
    assert snap.graft("nodes/1") == Graft(snap.object_id("nodes/1"), is_tree=True)
    assert snap.graft("list.yaml") == Graft(snap.object_id("list.yaml"), is_tree=False)
    assert snap.graft("nodes/7") is None


def test_list_and_walk(snap):
    names = {(e.name, e.is_tree) for e in snap.list("global/values")}
    assert names == {("astute.yaml", False), ("override", True)}
    assert snap.list("absent") == [] and snap.list("list.yaml") == []
    assert list(snap.walk("global")) == [
        "global/values/astute.yaml",
        "global/values/override/plugins.yaml",
    ]
    assert "nodes/1/values/astute.yaml" in list(snap.walk())


def test_info_and_identity(repo, snap):
    info = snap.info()
    assert info.commit == snap.commit_id == repo.head()
    assert (info.author, info.email) == ("Alice", "alice@example.com")
    assert info.message == "test: first commit\n\nwith a body"
    assert info.parents == ()
    assert info.date.endswith("Z")
    assert snap.version == 1 and snap.repository == "environment 1"


def test_a_snapshot_keeps_serving_its_commit_after_main_moves(repo, snap):
    def change(current):
        changes = ChangeSet("test: change")
        changes.put("nodes/1/values/astute.yaml", b"a: 3\n")
        return changes

    repo.update(change, ALICE)
    assert snap.read_yaml("nodes/1/values/astute.yaml") == {"a": 2}
    assert repo.snapshot().read_yaml("nodes/1/values/astute.yaml") == {"a": 3}


def test_parsed_blob_shares_the_cache_of_snapshots(snap):
    data = snap.read("global/values/astute.yaml")
    assert parsed_blob(snap.caches, data, "x") is snap.read_yaml("global/values/astute.yaml")
    with pytest.raises(InvalidInput, match="label: line 1"):
        parsed_blob(snap.caches, b"a: b: c\n", "label")
