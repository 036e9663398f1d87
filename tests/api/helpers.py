"""Helpers for the REST API tests: the base URL, error assertions and commit counting."""

from __future__ import annotations

API = "/api/v1/config"
ENV = f"{API}/environments/1"
NODES = {"1": "node-1.domain.tld", "2": "node-2.domain.tld", "3": "node-3.domain.tld"}
ERROR_KEYS = {"status", "message", "errors"}


def assert_error(response, status: int, *words: str) -> dict:
    """`response` is an error in the one JSON shape, with `status` and naming every word."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) <= ERROR_KEYS, body
    assert body["status"] == status
    assert isinstance(body["message"], str) and body["message"]
    for word in words:
        assert word in body["message"], (word, body["message"])
    return body


def commit_count(repo) -> int:
    """How many commits the first-parent chain of `main` holds."""
    return repo.depth(repo.head())
