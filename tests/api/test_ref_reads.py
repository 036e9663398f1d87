"""A read at `?version=N` or a commit id reads the refs no more often than a read of the head.

The refs are the one thing a read must look at on disk every time (a push is seen at once);
everything else follows from the ids they hold. The fast path reads the environment's and the
catalog's heads once per request (api/fastpath.py), and the app reads a pinned version at those
very heads: to check the version exists and to name the head in `X-Gitstore-Index`. Each test
reads through the real app and counts the calls of `refs.read_ref`, the one function that reads
a ref file (loose or packed).
"""

from __future__ import annotations

import pytest

from gitstore.api import create_app
from gitstore.backend import refs

VALUES = "/api/v1/config/environments/1/nodes/1/resources/astute/values"


@pytest.fixture
def app(fuel_store, inventory):
    for number in range(4):  # versions 3-6 of environment 1 (2 added its nodes)
        fuel_store.config.put(1, [], "astute", "values", {"n": number})
    app = create_app({"TESTING": True}, store=fuel_store)
    app.reached, app.during = [], []  # requests that reached Flask; what to do inside them

    @app.before_request
    def reach():
        app.reached.append(1)
        while app.during:
            app.during.pop()()

    return app


@pytest.fixture
def ref_reads(monkeypatch):
    """The refs read so far (the git folder's name and the ref), in order."""
    read: list[tuple[str, str]] = []
    real = refs.read_ref

    def counting(git_dir, ref):
        read.append((str(git_dir).rsplit("/", 1)[-1], ref))
        return real(git_dir, ref)

    monkeypatch.setattr(refs, "read_ref", counting)
    return read


def first_read(app, ref_reads: list, query: str, headers=None) -> tuple[int, dict, int]:
    """(status, headers, refs read) of a first read of node 1's values: answered by the app."""
    ref_reads.clear()
    response = app.test_client().get(VALUES, query_string=query, headers=headers)
    assert app.reached, "the fast path answered a first read"
    app.reached.clear()
    return response.status_code, response.headers, len(ref_reads)


def test_a_version_read_reads_the_refs_no_more_than_a_head_read(app, fuel_store, ref_reads):
    head = fuel_store.environment_repo(1).head()
    status, headers, at_head = first_read(app, ref_reads, "effective&key=n")
    assert status == 200 and headers["X-Gitstore-Index"] == head
    for query in ("version=3", "effective&key=n&version=4", "effective&version=6"):
        status, headers, at_version = first_read(app, ref_reads, query)
        assert status == 200, query
        assert at_version <= at_head, f"{query}: {at_version} ref reads, a head read {at_head}"
        assert headers["X-Gitstore-Version"] == query.rsplit("=", 1)[1]
        assert headers["X-Gitstore-Index"] == head  # the head it was read at


def test_a_read_at_a_commit_id_reads_the_refs_no_more_than_a_head_read(app, fuel_store, ref_reads):
    repo = fuel_store.environment_repo(1)
    commit = repo.snapshot("3").commit_id
    _, _, at_head = first_read(app, ref_reads, "effective&key=n")
    status, headers, at_commit = first_read(app, ref_reads, f"version={commit}")
    assert status == 200 and at_commit <= at_head
    assert headers["X-Gitstore-Version"] == "3" and headers["X-Gitstore-Commit"] == commit


def test_a_conditional_version_read_reads_the_refs_no_more_than_a_head_read(
    app, fuel_store, ref_reads
):
    # The fast path leaves a conditional request to the app, which reads the heads itself.
    other = {"If-None-Match": '"0123456789abcdef0123456789abcdef"'}
    _, _, at_head = first_read(app, ref_reads, "effective&key=n", other)
    status, headers, at_version = first_read(app, ref_reads, "effective&key=n&version=4", other)
    assert status == 200 and at_version <= at_head, (at_version, at_head)
    assert headers["X-Gitstore-Index"] == fuel_store.environment_repo(1).head()
    same = {"If-None-Match": headers["ETag"]}
    status, _, at_version = first_read(app, ref_reads, "effective&key=n&version=4", same)
    assert status == 304 and at_version <= at_head


def test_a_version_answer_is_kept_and_repeated_without_reading_more(app, ref_reads):
    first = app.test_client().get(VALUES, query_string="version=3")
    app.reached.clear()
    ref_reads.clear()
    again = app.test_client().get(VALUES, query_string="version=3")
    assert not app.reached, "a repeated version read reached Flask"
    assert len(ref_reads) <= 2  # the environment's head and the catalog's, at most
    assert again.data == first.data and again.headers["ETag"] == first.headers["ETag"]


def test_a_version_read_names_the_head_it_was_read_at_though_a_commit_lands(app, fuel_store):
    repo = fuel_store.environment_repo(1)
    before = repo.head()
    app.during.append(lambda: fuel_store.config.put(1, [], "astute", "values", {"n": "later"}))
    during = app.test_client().get(VALUES, query_string="version=7")
    assert during.status_code == 404  # version 7 is the commit made after the heads were read
    first = app.test_client().get(VALUES, query_string="version=6")
    assert first.headers["X-Gitstore-Index"] == repo.head() != before
    app.during.append(lambda: fuel_store.config.put(1, [], "astute", "values", {"n": "last"}))
    app.reached.clear()
    during = app.test_client().get(VALUES, query_string="effective&version=6")
    assert during.headers["X-Gitstore-Index"] == first.headers["X-Gitstore-Index"]
    after = app.test_client().get(VALUES, query_string="effective&version=6")
    assert len(app.reached) == 2, "an answer kept under the heads before the commit was replayed"
    assert after.headers["X-Gitstore-Index"] == repo.head()
    assert after.headers["X-Gitstore-Commit"] == during.headers["X-Gitstore-Commit"]


@pytest.mark.parametrize("version, status", [("7", 404), ("0", 404), ("2x", 404)])
def test_versions_past_the_head_or_unknown_are_still_refused(app, version, status):
    response = app.test_client().get(VALUES, query_string=f"version={version}")
    assert response.status_code == status, response.data
    assert version in response.get_json()["message"]
