"""Helpers of the versions tests: authors, writes by level path, and error assertions."""

from __future__ import annotations

from error_shape import assert_error  # noqa: F401 - the tests here import it from this module

from gitstore.backend.repository import Author

ENV = "/api/v1/config/environments/1"
ALICE = Author("alice", "alice@example.com")
BOB = Author("bob", "bob@example.com")


def pairs_of(scope: str) -> list[tuple[str, str]]:
    """`nodes/1` as level pairs (`""` is global)."""
    parts = [p for p in scope.strip("/").split("/") if p]
    return list(zip(parts[::2], parts[1::2], strict=True))


def put(
    store,
    scope: str,
    document: dict,
    *,
    kind: str = "values",
    resource: str = "astute",
    author: Author = ALICE,
    env_id: int = 1,
):
    """Write one document through the facade; returns the Served naming the commit."""
    return store.config.put(env_id, pairs_of(scope), resource, kind, document, author)


def effective(store, scope: str, resource: str = "astute", version=None, env_id: int = 1):
    from gitstore.configdb.values import Query

    query = Query(effective=True, version=None if version is None else str(version))
    return store.config.read(env_id, pairs_of(scope), resource, "values", query).data
