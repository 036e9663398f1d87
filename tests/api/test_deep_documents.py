"""A stored document nested deeper than a request body may be (limits.MAX_DEPTH) is named in a
4xx wherever it is read: the gate refuses such a push now, but one stored before it reached the
recursive walks of masking and the console, which ran out of stack (a 500 on every read)."""

from __future__ import annotations

import pytest

from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

from .helpers import ENV, assert_error

FILE = "nodes/3/values/astute.yaml"


def _nested(levels: int) -> bytes:
    lines = [f"{'  ' * depth}k:" for depth in range(levels - 1)]
    return ("\n".join(lines) + f"\n{'  ' * (levels - 1)}k: 1\n").encode()


@pytest.fixture
def deep(fuel_store, client):
    assert client.put(f"{ENV}/nodes/3/resources/astute/values", json={"a": 1}).status_code == 204

    def past_the_gate(snapshot):
        changes = ChangeSet("test: a document 700 levels deep, written past the gate")
        changes.put(FILE, _nested(700))
        return changes

    fuel_store.environment_repo(1).update(past_the_gate, Author("t", "t@example.com"))
    return client


@pytest.mark.parametrize(
    "url",
    [
        f"{ENV}/nodes/3/resources/astute/values",
        f"{ENV}/nodes/3/resources/astute/values?effective",
        f"{ENV}/nodes/3/resources/astute/values?effective&show_lookup",
        "/api/v1/hiera/1/3",
    ],
)
def test_every_read_names_the_file_that_is_too_deep(deep, url):
    assert_error(deep.get(url), 400, FILE, "nests deeper than 64 levels")


def test_the_console_names_it_too(deep):
    response = deep.get("/ui/environments/1/nodes/3")
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert "nests deeper than 64 levels" in response.get_data(as_text=True)
