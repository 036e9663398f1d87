"""The one JSON error shape every 4xx and 5xx answer has (docs/api.md, "The rules every route
follows")."""

from __future__ import annotations

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
