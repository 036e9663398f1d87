"""`.../values/keys/<op>` and `.../overrides/keys/<op>`: atomic batches of set and delete."""

from __future__ import annotations

import pytest

from .helpers import ENV, assert_error

DOC = f"{ENV}/nodes/1/resources/astute/values"
OVR = f"{ENV}/nodes/1/resources/astute/overrides"


@pytest.fixture
def doc(client):
    client.put(DOC, json={"a": {"b": 1, "l": [10, 20]}, "s": "scalar", "keep": True})
    return client


def _read(client, url=DOC):
    return client.get(url).get_json()


def test_set_creates_the_document_and_intermediate_mappings(client, env_commits):
    before = env_commits()
    response = client.put(f"{DOC}/keys/set", json=[["a", "b", "c", 1]])
    assert response.status_code == 204 and response.get_data() == b""
    assert response.headers["X-Gitstore-Commit"]
    assert _read(client) == {"a": {"b": {"c": 1}}}
    assert env_commits() == before + 1


def test_set_on_overrides_and_global(client):
    assert client.patch(f"{OVR}/keys/set", json=[["x", "y"]]).status_code == 204
    assert _read(client, OVR) == {"x": "y"}
    url = f"{ENV}/resources/override/plugins/overrides"
    assert client.put(f"{url}/keys/set", json=[["p", {"q": [1]}]]).status_code == 204
    assert _read(client, url) == {"p": {"q": [1]}}


def test_a_batch_is_one_commit(doc, env_commits):
    before = env_commits()
    response = doc.put(
        f"{DOC}/keys/set", json=[["a", "b", 2], ["n", "new", None], ["a", "l", "1", 21]]
    )
    assert response.status_code == 204
    assert env_commits() == before + 1
    assert _read(doc) == {
        "a": {"b": 2, "l": [10, 21]},
        "s": "scalar",
        "keep": True,
        "n": {"new": None},
    }


def test_set_keeps_values_and_overrides_apart(doc):
    doc.put(f"{OVR}/keys/set", json=[["o", 1]])
    assert "o" not in _read(doc)
    doc.put(f"{DOC}/keys/set", json=[["v", 1]])
    assert _read(doc, OVR) == {"o": 1}


def test_integer_segments_index_lists(doc):
    doc.put(f"{DOC}/keys/set", json=[["a", "l", 0, "first"]])
    assert _read(doc)["a"]["l"] == ["first", 20]
    doc.put(f"{DOC}/keys/delete", json=[["a", "l", "0"]])
    assert _read(doc)["a"]["l"] == [20]


@pytest.mark.parametrize(
    "path, named",
    [
        (["a", "l", "2", 1], "a.l.2"),
        (["a", "l", "5", "x", 1], "a.l.5"),
        (["a", "l", "-1", 1], "a.l.-1"),
        (["a", "l", "x", 1], "a.l.x"),
        (["s", "inner", 1], "s"),
        (["a", "b", "c", 1], "a.b"),
    ],
)
def test_set_through_a_scalar_or_missing_index_is_409(doc, env_commits, path, named):
    before = env_commits()
    assert_error(doc.put(f"{DOC}/keys/set", json=[path]), 409, named)
    assert env_commits() == before


def test_a_failing_path_writes_nothing(doc, env_commits):
    before = env_commits()
    response = doc.put(f"{DOC}/keys/set", json=[["ok", 1], ["s", "x", 2]])
    assert_error(response, 409, "s")
    assert "ok" not in _read(doc)
    assert_error(doc.put(f"{DOC}/keys/delete", json=[["keep"], ["missing"]]), 409, "missing")
    assert _read(doc)["keep"] is True
    assert env_commits() == before


def test_delete_removes_keys(doc, env_commits):
    before = env_commits()
    response = doc.patch(f"{DOC}/keys/delete", json=[["a", "b"], ["s"]])
    assert response.status_code == 204
    assert _read(doc) == {"a": {"l": [10, 20]}, "keep": True}
    assert env_commits() == before + 1


@pytest.mark.parametrize(
    "path, named",
    [
        (["nope"], "nope"),
        (["a", "nope"], "a.nope"),
        (["a", "l", "7"], "a.l.7"),
        (["s", "x"], "s.x"),
    ],
)
def test_delete_of_a_missing_key_is_409_naming_it(doc, path, named):
    assert_error(doc.put(f"{DOC}/keys/delete", json=[path]), 409, named)


def test_delete_on_a_level_without_document_is_409(client, env_commits):
    before = env_commits()
    assert_error(client.put(f"{DOC}/keys/delete", json=[["a"]]), 409, "a")
    assert env_commits() == before


@pytest.mark.parametrize(
    "body",
    [
        {"a": 1},
        [1],
        ["a"],
        [["a"], "b"],
        "text",
        [[]],
        [[["a"], 1]],
        [[None, 1]],
    ],
)
def test_malformed_bodies_are_400(doc, env_commits, body):
    before = env_commits()
    assert_error(doc.put(f"{DOC}/keys/set", json=body), 400)
    assert env_commits() == before


def test_path_too_short_for_its_op_is_400(doc):
    assert_error(doc.put(f"{DOC}/keys/set", json=[["only"]]), 400, "short")
    assert_error(doc.put(f"{DOC}/keys/delete", json=[[]]), 400, "short")


def test_malformed_json_is_400(doc):
    assert_error(
        doc.put(f"{DOC}/keys/set", data="[[", content_type="application/json"), 400, "JSON"
    )


def test_unknown_op_is_404(doc):
    for op in ("get", "append", "SET"):
        assert_error(doc.put(f"{DOC}/keys/{op}", json=[["a", 1]]), 404, op)


def test_get_on_a_key_operation_is_405_and_does_not_write(doc, env_commits):
    before = env_commits()
    response = doc.get(f"{DOC}/keys/set")
    assert_error(response, 405, "GET")
    assert set(response.headers["Allow"].replace(" ", "").split(",")) == {"PUT", "PATCH"}
    assert env_commits() == before


def test_empty_batch_is_accepted_and_changes_nothing(doc, env_commits):
    before = env_commits()
    assert doc.put(f"{DOC}/keys/set", json=[]).status_code == 204
    assert env_commits() == before


def test_an_integer_segment_through_a_mapping_makes_a_string_key(fuel_store, client):
    assert client.put(f"{DOC}/keys/set", json=[["a", 1, "x"], ["b", 2]]).status_code == 204
    assert _read(client) == {"a": {"1": "x"}, "b": 2}
    stored = fuel_store.environment_repo(1).snapshot().read_yaml("nodes/1/values/astute.yaml")
    assert stored == {"a": {"1": "x"}, "b": 2}
    assert client.get(f"{DOC}?key=a.1").get_json() == "x"


#: More digits than Python converts to an int (sys.get_int_max_str_digits: 4,300).
_HUGE_INDEX = "1" * 5000


@pytest.mark.parametrize("op", ["set", "delete"])
def test_an_index_past_pythons_digit_limit_is_409_not_500(doc, env_commits, op):
    before = env_commits()
    path = ["a", "l", _HUGE_INDEX] + ([1] if op == "set" else [])
    assert_error(doc.put(f"{DOC}/keys/{op}", json=[path]), 409, "a.l.111")
    assert env_commits() == before


def test_a_key_of_huge_digits_is_read_as_a_missing_key(doc):
    assert_error(doc.get(f"{DOC}?key=a.l.{_HUGE_INDEX}"), 409, "a.l.111")
    assert_error(doc.get(f"{DOC}?key=a.{_HUGE_INDEX}"), 409, "a.111")
