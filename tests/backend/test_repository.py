"""A repository: revisions, versions, and compare-and-swap writes that survive lost races."""

from __future__ import annotations

import pytest
from short_ids import short_id

from gitstore.backend import commits as commits_module
from gitstore.backend import refs
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import MAIN, Author, Repository
from gitstore.errors import Conflict, InvalidInput, NotFound, UnknownRevision

from .helpers import git, git_commit, linear_history

ALICE = Author("Alice", "alice@example.com")


def _put(path: str, data: bytes, message: str = "test: put"):
    def operation(snapshot):
        changes = ChangeSet(message)
        changes.put(path, data)
        return changes

    return operation


@pytest.fixture
def repo(tmp_path) -> Repository:
    first = ChangeSet("test: v1")
    first.put("a.yaml", b"v: 1\n")
    repo = Repository.create(tmp_path / "r.git", "r", first, ALICE)
    for version in (2, 3):
        repo.update(_put("a.yaml", f"v: {version}\n".encode(), f"test: v{version}"), ALICE)
    return repo


def _value(repo: Repository, version) -> int:
    return repo.snapshot(version).read_yaml("a.yaml")["v"]


def test_create_makes_one_root_commit_on_main(tmp_path):
    repo = Repository.create(tmp_path / "x.git", "x", ChangeSet("test: empty"), ALICE)
    assert git(repo.path, "rev-parse", "main") == repo.head()
    assert git(repo.path, "symbolic-ref", "HEAD") == MAIN
    assert repo.snapshot().list() == []
    assert repo.depth(repo.head()) == 1


def test_head_snapshot_and_versions(repo):
    assert _value(repo, None) == 3
    assert repo.snapshot().version == 3
    assert [_value(repo, n) for n in (1, 2, 3)] == [1, 2, 3]
    assert [_value(repo, str(n)) for n in (1, 2, 3)] == [1, 2, 3]
    assert repo.snapshot(2).version == 2


def test_revisions_by_sha_short_sha_and_relative_names(repo):
    log = [info.commit for info in repo.first_parent_log()]
    assert _value(repo, log[2]) == 1
    assert _value(repo, short_id(log[1], 10)) == 2
    assert _value(repo, "main~1") == 2
    assert _value(repo, "main^^") == 1
    assert _value(repo, "HEAD") == 3
    assert repo.snapshot(log[1]).version == 2


def test_tags_resolve_to_their_commit(repo):
    log = [info.commit for info in repo.first_parent_log()]
    git(repo.path, "tag", "light", log[2])
    git(repo.path, "tag", "-a", "annotated", "-m", "a release", log[1])
    assert _value(repo, "light") == 1
    assert _value(repo, "annotated") == 2
    assert _value(repo, "refs/tags/annotated") == 2


@pytest.mark.parametrize(
    "revision",
    [
        "0",
        "4",
        "99",
        "nope",
        "main~9",
        "-n",
        "--all",
        "deadbeef",
        "a" * 40,
        "main:a.yaml",
        "main^{tree}",
        "main\nx",
    ],
)
def test_unknown_revisions(repo, revision):
    with pytest.raises(UnknownRevision) as caught:
        repo.snapshot(revision)
    assert caught.value.revision == revision.strip()
    assert "in r" in str(caught.value)


def test_depth_follows_first_parents_through_a_merge(repo):
    head = repo.head()
    side = git_commit(repo.path, {"side.yaml": "s: 1\n"}, repo.snapshot(1).commit_id, "side")
    tree = git(repo.path, "rev-parse", f"{head}^{{tree}}")
    merge = git(repo.path, "commit-tree", tree, "-p", head, "-p", side, "-m", "merge")
    git(repo.path, "update-ref", MAIN, merge, head)
    assert repo.depth(merge) == 4
    assert repo.depth(side) == 2
    assert repo.snapshot(3).commit_id == head
    assert [i.commit for i in repo.first_parent_log(limit=2)] == [merge, head]


def test_version_numbers_follow_main_as_it_moves(repo):
    assert repo.snapshot(3).commit_id == repo.head()
    repo.update(_put("a.yaml", b"v: 4\n"), ALICE)
    assert _value(repo, 3) == 3 and _value(repo, 4) == 4


@pytest.mark.parametrize("indexed", [False, True])
def test_a_version_is_resolved_at_the_head_the_caller_read(repo, monkeypatch, indexed):
    if indexed:
        repo.update_index()
    log = [info.commit for info in repo.first_parent_log()]
    read: list[str] = []
    monkeypatch.setattr(refs, "read_ref", lambda git_dir, ref: read.append(ref))
    at_two = log[1]
    assert repo.snapshot(2, head=at_two).commit_id == at_two
    assert repo.snapshot("1", head=at_two).read_yaml("a.yaml")["v"] == 1
    assert repo.snapshot(log[2], head=at_two).version == 1
    with pytest.raises(UnknownRevision):
        repo.snapshot(3, head=at_two)  # main holds it, but not the head the caller read
    assert read == [], "a version was resolved by reading main again"


def test_first_parent_log_and_commit_info(repo):
    log = list(repo.first_parent_log())
    assert [i.message for i in log] == ["test: v3", "test: v2", "test: v1"]
    assert log[0].parents == (log[1].commit,)
    assert repo.commit_info(log[2].commit) == log[2]
    assert [i.message for i in repo.first_parent_log(log[1].commit, limit=1)] == ["test: v2"]


def test_a_write_commits_with_author_message_and_parent(repo):
    before = repo.head()
    result = repo.update(_put("b.yaml", b"b: 1\n", "test: add b"), Author("Bob", "bob@x.org"))
    assert result.changed and result.version == 4 and result.commit == repo.head()
    info = repo.commit_info(result.commit)
    assert (info.author, info.email, info.message) == ("Bob", "bob@x.org", "test: add b")
    assert info.parents == (before,)
    assert git(repo.path, "log", "-1", "--format=%an %s", "main") == "Bob test: add b"


def test_a_write_that_changes_nothing_makes_no_commit(repo):
    before = repo.head()
    result = repo.update(_put("a.yaml", b"v: 3\n"), ALICE)
    assert not result.changed
    assert result.commit == before and result.version == 3
    assert repo.head() == before
    assert len(linear_history(repo.path)) == 3


def test_a_dry_run_builds_the_commit_and_never_serves_it(repo):
    before = repo.head()
    result = repo.dry_run(_put("b.yaml", b"b: 1\n", "test: add b"), ALICE)
    assert result.changed and result.commit != before and result.version == 4
    assert repo.head() == before and len(linear_history(repo.path)) == 3
    assert repo.parent(result.commit) == before
    assert repo.snapshot(result.commit).read_yaml("b.yaml") == {"b": 1}  # readable by its id
    assert repo.commit_info(result.commit).author == "Alice"
    unchanged = repo.dry_run(_put("a.yaml", b"v: 3\n"), ALICE)
    assert not unchanged.changed and unchanged.commit == before


def test_a_dry_run_obeys_the_write_guard(tmp_path):
    def refuse() -> None:
        raise Conflict("mirror mode")

    first = ChangeSet("test: v1")
    first.put("a.yaml", b"v: 1\n")
    Repository.create(tmp_path / "r.git", "r", first, ALICE)
    guarded = Repository(tmp_path / "r.git", "r", write_guard=refuse)
    with pytest.raises(Conflict, match="mirror mode"):
        guarded.dry_run(_put("b.yaml", b"b: 1\n"), ALICE)


def test_an_operation_that_fails_writes_nothing(repo):
    before = repo.head()

    def refuse(snapshot):
        raise InvalidInput("refused by the operation")

    with pytest.raises(InvalidInput, match="refused"):
        repo.update(refuse, ALICE)
    assert repo.head() == before
    repo.update(_put("b.yaml", b"b: 1\n"), ALICE)  # the write lock was released


def test_a_lost_race_is_reapplied_on_the_new_head(repo):
    calls: list[str] = []
    pushed: list[str] = []

    def operation(snapshot):
        calls.append(snapshot.commit_id)
        if len(calls) == 1:  # someone pushes between our read and our compare-and-swap
            pushed.append(
                git_commit(
                    repo.path, {"pushed.yaml": "p: 1\n"}, snapshot.commit_id, "pushed with git"
                )
            )
            git(repo.path, "update-ref", MAIN, pushed[0], snapshot.commit_id)
        current = snapshot.read_yaml("a.yaml")["v"]
        changes = ChangeSet("test: increment")
        changes.put("a.yaml", f"v: {current + 1}\n".encode())
        return changes

    result = repo.update(operation, ALICE)
    assert calls[1] == pushed[0]  # the second attempt saw the pushed commit
    assert repo.commit_info(result.commit).parents == (pushed[0],)
    snap = repo.snapshot()
    assert snap.read_yaml("pushed.yaml") == {"p": 1}
    assert snap.read_yaml("a.yaml") == {"v": 4}
    assert result.version == 5
    assert len(linear_history(repo.path)) == 5


def test_a_race_lost_every_time_ends_in_conflict(repo, monkeypatch):
    monkeypatch.setattr(commits_module, "MAX_ATTEMPTS", 3)
    calls = []

    def always_overtaken(snapshot):
        calls.append(1)
        new = git_commit(repo.path, {f"p{len(calls)}.yaml": "p: 1\n"}, snapshot.commit_id, "push")
        git(repo.path, "update-ref", MAIN, new, snapshot.commit_id)
        return _put("a.yaml", b"v: 0\n")(snapshot)

    with pytest.raises(Conflict, match="could not move main"):
        repo.update(always_overtaken, ALICE)
    # Each attempt runs the operation twice: before the lock, and again under it because
    # main had moved since.
    assert len(calls) == 6
    assert repo.snapshot().read_yaml("a.yaml") == {"v": 3}


def test_a_missing_repository_is_not_found(tmp_path):
    with pytest.raises(NotFound, match="ghost"):
        Repository(tmp_path / "ghost.git", "ghost").snapshot()
