"""The store's answers (gitstore/answers.py): the bytes of an answer come from the cache the
Store owns, shared by the app's views and its fast path, and bytes made for a caller who may
reveal secrets never reach one who may not."""

from __future__ import annotations

import pytest

from gitstore import Store
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app
from gitstore.served import Served

VALUES = "/api/v1/config/environments/1/resources/astute/values"
NODE = "/api/v1/config/environments/1/nodes/1/resources/astute/values?effective"
HIERA = "/api/v1/hiera/1/1"
DOCUMENT = {"a": {"b": 1}, "name": "one", "db_password": "hunter2"}


def counting(monkeypatch, store: Store) -> list:
    """The data each JSON encoding of `store`'s answers encoded, as it happens."""
    encoder = store.answers.encoder
    made: list = []
    inside: list = []

    def counted(real):
        def encode_counted(data):
            if not inside:  # `encode` calls `whole` for a small document: one encoding
                made.append(data)
            inside.append(1)
            try:
                return real(data)
            finally:
                inside.pop()

        return encode_counted

    monkeypatch.setattr(encoder, "encode", counted(encoder.encode))
    monkeypatch.setattr(encoder, "whole", counted(encoder.whole))
    return made


@pytest.fixture
def app(fuel_store, inventory):
    app = create_app({"TESTING": True}, store=fuel_store)
    assert app.test_client().put(VALUES, json=DOCUMENT).status_code == 204
    return app


def test_an_answer_is_encoded_once_for_the_app_and_its_fast_path(app, fuel_store, monkeypatch):
    made = counting(monkeypatch, fuel_store)
    client = app.test_client()
    first = client.get(NODE)  # the app's view
    again = client.get(NODE)  # the fast path's replay
    other_host = client.get(NODE, headers={"Host": "127.0.0.1"})  # the app's view again
    assert first.status_code == again.status_code == other_host.status_code == 200
    assert first.data == again.data == other_host.data
    assert len(made) == 1  # one encoding, kept by the store for both


def test_the_fast_path_replays_from_the_stores_answers(app, fuel_store, monkeypatch):
    client = app.test_client()
    first = client.get(NODE)
    made = counting(monkeypatch, fuel_store)
    assert client.get(NODE).data == first.data and made == []  # replayed
    fuel_store.caches.answers.clear()  # the fast path has nothing besides
    assert client.get(NODE).data == first.data
    assert len(made) == 1  # the app answered and encoded again


def test_a_second_store_of_the_same_root_starts_without_answers(app, fuel_store, monkeypatch):
    body = app.test_client().get(NODE).data
    assert len(fuel_store.answers) > 0
    second = Store(fuel_store.root)
    assert len(second.answers) == 0
    client = create_app({"TESTING": True}, store=second).test_client()
    made = counting(monkeypatch, second)
    assert client.get(NODE).data == body
    assert len(made) == 1


def test_the_app_hands_its_json_settings_to_the_store(fuel_store):
    app = create_app({"TESTING": True}, store=fuel_store)
    assert fuel_store.answers.encoder.settings == (app.json.default, app.json.ensure_ascii)


def test_bytes_made_for_a_reveal_are_never_found_for_a_masked_answer(fuel_store):
    """Even for the very same data object: the key says whether the answer reveals."""
    data = {"db_password": "hunter2"}
    revealed = fuel_store.answers.of(Served(data, shared=True, revealed=("db_password",)))
    masked = fuel_store.answers.of(Served(data, shared=True, masked=("db_password",)))
    assert masked.served.masked == ("db_password",) and masked is not revealed
    again = fuel_store.answers.of(Served(data, shared=True, revealed=("db_password",)))
    assert again.body is revealed.body and masked.body is not revealed.body


@pytest.fixture
def callers(app, fuel_store):
    access = AccessFile(fuel_store.root)
    access.add_user("reader", parse_grants(["reader:env:1"]), None)
    access.add_user("puppet", parse_grants(["reader:env:1", "secrets:env:1"]), None)
    return {name: {"X-Auth-Token": access.create_token(name)[1]} for name in ("reader", "puppet")}


def test_a_masked_caller_and_a_revealing_caller_never_share_bytes(app, callers):
    client = app.test_client()
    order = ["puppet", "reader", "puppet", "reader", "reader", "puppet"]  # app, then replays
    bodies = {name: set() for name in callers}
    for name in order:
        response = client.get(HIERA, headers=callers[name])
        assert response.status_code == 200, response.data
        bodies[name].add(response.data)
    [revealed], [masked] = bodies["puppet"], bodies["reader"]
    assert b"hunter2" in revealed and b"hunter2" not in masked and b'"******"' in masked
