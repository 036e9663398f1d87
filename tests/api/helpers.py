"""Helpers for the REST API tests: the base URL, error assertions and commit counting."""

from __future__ import annotations

from error_shape import ERROR_KEYS, assert_error  # noqa: F401 - shared with the tests here

API = "/api/v1/config"
ENV = f"{API}/environments/1"
NODES = {"1": "node-1.domain.tld", "2": "node-2.domain.tld", "3": "node-3.domain.tld"}


def commit_count(repo) -> int:
    """How many commits the first-parent chain of `main` holds."""
    return repo.depth(repo.head())
