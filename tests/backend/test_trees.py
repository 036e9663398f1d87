"""Building trees from change sets: only changed paths are rebuilt, entries apply in order."""

from __future__ import annotations

import pygit2
import pytest

from gitstore.backend.changes import ChangeSet, Graft
from gitstore.backend.trees import build_tree
from gitstore.errors import InvalidInput

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.fixture
def repo(tmp_path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "t.git"), bare=True)


def _apply(repo, base, changes: ChangeSet) -> pygit2.Tree:
    return repo[build_tree(repo, base, changes.entries)]


def _files(tree: pygit2.Tree, prefix: str = "") -> dict[str, bytes]:
    found = {}
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if isinstance(entry, pygit2.Tree):
            found.update(_files(entry, path + "/"))
        else:
            found[path] = entry.data
    return found


@pytest.fixture
def base(repo) -> pygit2.Tree:
    changes = ChangeSet()
    changes.put("global/values/astute.yaml", b"a: 1\n")
    changes.put("global/overrides/astute.yaml", b"b: 2\n")
    changes.put("nodes/1/values/override/plugins.yaml", b"p: 3\n")
    changes.put("environment.yaml", b"id: 1\n")
    return _apply(repo, None, changes)


def test_put_creates_nested_folders(base):
    assert _files(base) == {
        "environment.yaml": b"id: 1\n",
        "global/overrides/astute.yaml": b"b: 2\n",
        "global/values/astute.yaml": b"a: 1\n",
        "nodes/1/values/override/plugins.yaml": b"p: 3\n",
    }


def test_put_replaces_a_file(repo, base):
    changes = ChangeSet()
    changes.put("global/values/astute.yaml", b"a: 9\n")
    assert _files(_apply(repo, base, changes))["global/values/astute.yaml"] == b"a: 9\n"


def test_untouched_subtrees_keep_their_ids(repo, base):
    changes = ChangeSet()
    changes.put("global/values/astute.yaml", b"a: 9\n")
    tree = _apply(repo, base, changes)
    assert tree["nodes"].id == base["nodes"].id
    assert tree["global/overrides"].id == base["global/overrides"].id
    assert tree["environment.yaml"].id == base["environment.yaml"].id
    assert tree["global/values"].id != base["global/values"].id


def test_deleting_the_last_file_removes_empty_folders(repo, base):
    changes = ChangeSet()
    changes.delete("nodes/1/values/override/plugins.yaml")
    tree = _apply(repo, base, changes)
    assert "nodes" not in tree
    assert tree["global"].id == base["global"].id


def test_deleting_a_folder_removes_everything_below(repo, base):
    changes = ChangeSet()
    changes.delete("global")
    assert sorted(_files(_apply(repo, base, changes))) == [
        "environment.yaml",
        "nodes/1/values/override/plugins.yaml",
    ]


def test_deleting_everything_gives_the_empty_tree(repo, base):
    changes = ChangeSet()
    for name in ("global", "nodes", "environment.yaml"):
        changes.delete(name)
    assert str(build_tree(repo, base, changes.entries)) == EMPTY_TREE


def test_an_empty_change_set_on_nothing_is_the_empty_tree(repo):
    assert str(build_tree(repo, None, {})) == EMPTY_TREE


def test_deleting_what_does_not_exist_changes_nothing(repo, base):
    changes = ChangeSet()
    changes.delete("nodes/2/values/astute.yaml")
    changes.delete("absent")
    assert _apply(repo, base, changes).id == base.id


def test_graft_copies_a_folder_by_id(repo, base):
    changes = ChangeSet()
    changes.graft("nodes/2", Graft(str(base["nodes/1"].id), is_tree=True))
    tree = _apply(repo, base, changes)
    assert tree["nodes/2"].id == base["nodes/1"].id
    assert tree["nodes/1"].id == base["nodes/1"].id


def test_graft_and_delete_move_a_folder(repo, base):
    changes = ChangeSet()
    changes.graft("hosts", Graft(str(base["nodes"].id), is_tree=True))
    changes.delete("nodes")
    tree = _apply(repo, base, changes)
    assert "nodes" not in tree
    assert tree["hosts"].id == base["nodes"].id


def test_graft_of_a_blob(repo, base):
    changes = ChangeSet()
    changes.graft("copy.yaml", Graft(str(base["environment.yaml"].id), is_tree=False))
    assert _files(_apply(repo, base, changes))["copy.yaml"] == b"id: 1\n"


def test_delete_then_put_below_leaves_only_the_new_file(repo, base):
    changes = ChangeSet()
    changes.delete("global")
    changes.put("global/values/globals.yaml", b"g: 1\n")
    files = _files(_apply(repo, base, changes))
    assert [p for p in files if p.startswith("global/")] == ["global/values/globals.yaml"]


def test_put_below_then_delete_leaves_nothing(repo, base):
    changes = ChangeSet()
    changes.put("global/values/globals.yaml", b"g: 1\n")
    changes.delete("global")
    assert "global" not in _apply(repo, base, changes)


def test_graft_then_put_below_keeps_the_grafted_files(repo, base):
    changes = ChangeSet()
    changes.graft("nodes/2", Graft(str(base["nodes/1"].id), is_tree=True))
    changes.put("nodes/2/values/astute.yaml", b"n: 2\n")
    files = _files(_apply(repo, base, changes))
    assert files["nodes/2/values/override/plugins.yaml"] == b"p: 3\n"
    assert files["nodes/2/values/astute.yaml"] == b"n: 2\n"


def test_a_file_can_replace_a_folder_and_a_folder_a_file(repo, base):
    changes = ChangeSet()
    changes.put("nodes", b"now a file\n")
    changes.put("environment.yaml/inner.yaml", b"x: 1\n")
    files = _files(_apply(repo, base, changes))
    assert files["nodes"] == b"now a file\n"
    assert files["environment.yaml/inner.yaml"] == b"x: 1\n"


def test_a_repeated_path_keeps_the_last_change(repo, base):
    changes = ChangeSet()
    changes.put("global/values/astute.yaml", b"a: 2\n")
    changes.delete("global/values/astute.yaml")
    changes.put("global/values/astute.yaml", b"a: 3\n")
    assert list(changes.entries) == ["global/values/astute.yaml"]
    assert _files(_apply(repo, base, changes))["global/values/astute.yaml"] == b"a: 3\n"


def test_paths_are_normalised(repo, base):
    changes = ChangeSet()
    changes.put("/global/values/astute.yaml/", b"a: 4\n")
    assert list(changes.entries) == ["global/values/astute.yaml"]


@pytest.mark.parametrize("path", ["a//b", "a/../b", "./a", ".git/config", ""])
def test_paths_that_cannot_name_a_tree_entry_are_refused(path):
    with pytest.raises(InvalidInput, match="cannot be stored"):
        ChangeSet().put(path, b"x")
