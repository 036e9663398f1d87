"""A query parameter read once and given twice with different values is a 400 naming it (the
first one silently won: `version=1&version=2` read version 1); the list parameters repeat."""

from __future__ import annotations

import pytest

from .helpers import ENV, assert_error

DOC = f"{ENV}/nodes/1/resources/astute/values"


@pytest.fixture
def doc(client):
    client.put(DOC, json={"a": 1})
    client.put(DOC, json={"a": 2})
    return client


@pytest.mark.parametrize(
    "url, named",
    [
        (f"{DOC}?version=1&version=2", "version"),
        (f"{DOC}?effective&key=a&key=b", "key"),
        (f"{DOC}?index=1&index=2&wait=1s", "index"),
        ("/api/v1/events?env=1&env=2", "env"),
    ],
)
def test_a_parameter_given_twice_differently_is_400_naming_it(doc, url, named):
    assert_error(_once(doc, url), 400, named, "more than once")


def _once(client, url: str):
    """The answer's head (a stream, which never ends, is not read)."""
    response = client.get(url, buffered=False)
    response.close()
    return response


def test_the_same_value_twice_is_the_value(doc):
    response = doc.get(f"{DOC}?version=2&version=2")
    assert response.status_code == 200 and response.get_json() == {"a": 1}


def test_list_parameters_repeat(doc):
    response = doc.get(f"{ENV}/diff?from=1&to=2&levels=nodes=1&levels=nodes=1")
    assert response.status_code == 200, response.get_data(as_text=True)


def test_an_empty_since_is_400_naming_it(doc):
    assert_error(_once(doc, "/api/v1/events?env=1&since="), 400, "since")
