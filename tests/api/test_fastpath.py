"""The fast path of repeated reads (gitstore/api/fastpath.py): the app's answer, byte for byte.

Each test reads through the real app; a `before_request` hook of the test counts the requests
that reached Flask, so a test knows which answers the fast path gave.
"""

from __future__ import annotations

import base64
import logging
import re
import subprocess
import time

import pytest
from werkzeug.http import parse_date
from werkzeug.test import EnvironBuilder, run_wsgi_app

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app
from gitstore.secrets.keyring import Keyring

ASTUTE = "/api/v1/config/environments/1/resources/astute/values"
NODE = "/api/v1/config/environments/1/nodes/1/resources/astute/values"
CLIENT = {"REMOTE_ADDR": "127.0.0.1"}
DOCUMENT = {"a": {"b": 1, "c": [1, 2]}, "name": "one", "db_password": "hunter2"}


@pytest.fixture
def app(fuel_store, inventory):
    app = create_app({"TESTING": True}, store=fuel_store)
    app.reached, app.during = [], []  # requests that reached Flask; what to do inside them

    @app.before_request
    def reach():
        app.reached.append(1)
        for act in app.during:
            act()

    client = app.test_client()
    assert client.put(ASTUTE, json=DOCUMENT).status_code == 204
    assert client.put(NODE.replace("values", "overrides"), json={"a": {"b": 2}}).status_code == 204
    app.reached.clear()
    return app


def call(
    app, path: str, query: str = "", headers: dict | None = None, slow: bool = False, dated=False
):
    """(status, headers without X-Request-Id, body) of a GET through the app's WSGI callable
    (`slow`: straight to Flask, past the fast path). The `Date` is checked to be the second
    the answer was made in and, unless `dated`, shown as "<now>": answers made a second apart
    are equal."""
    environ = EnvironBuilder(
        path=path, query_string=query, headers=headers or {}, environ_base=CLIENT
    ).get_environ()
    wsgi = app.wsgi_app._inner if slow else app.wsgi_app
    before = int(time.time())
    body, status, answer_headers = run_wsgi_app(wsgi, environ, buffered=True)
    after = time.time()
    kept = [(name, value) for name, value in answer_headers if name != "X-Request-Id"]
    assert any(name == "X-Request-Id" for name, _ in answer_headers)
    for index, (name, value) in enumerate(kept):
        if name == "Date":
            assert before <= parse_date(value).timestamp() <= after, (value, before, after)
            kept[index] = (name, value if dated else "<now>")
    return status, kept, b"".join(body)


@pytest.mark.parametrize(
    "path, query",
    [
        (ASTUTE, ""),
        (ASTUTE, "key=a.b"),
        (ASTUTE, "key=a"),
        (NODE, "effective"),
        (NODE, "effective&key=a"),
        (NODE, "effective&show_lookup"),
        (NODE, "effective=1&version=2"),
        (NODE.replace("values", "overrides"), ""),
    ],
)
def test_a_repeated_read_gets_the_apps_status_headers_and_bytes(app, path, query):
    first = call(app, path, query)
    assert len(app.reached) == 1
    repeated = call(app, path, query)
    assert len(app.reached) == 1, "the repeated read reached Flask"
    assert repeated == first == call(app, path, query, slow=True)
    assert first[0].startswith("200")


def test_a_kept_answer_is_dated_when_it_is_answered(app):
    call(app, ASTUTE)
    etag = {"If-None-Match": dict(call(app, HIERA)[1])["ETag"]}
    assert call(app, HIERA, headers=etag)[0].startswith("304")
    reached = len(app.reached)
    time.sleep(max(0.0, int(time.time()) + 1.05 - time.time()))  # into the next second
    for path, headers in ((ASTUTE, None), (HIERA, None), (HIERA, etag)):
        later = call(app, path, headers=headers)  # `call` checks the Date is of now
        assert later == call(app, path, headers=headers, slow=True)
    assert len(app.reached) == reached + 3, "only the slow reads reached Flask"


def test_a_commit_is_read_at_once(app):
    call(app, ASTUTE)
    call(app, ASTUTE)
    client = app.test_client()
    assert client.put(ASTUTE, json={**DOCUMENT, "name": "two"}).status_code == 204
    status, headers, body = call(app, ASTUTE)
    assert b'"two"' in body and (status, headers, body) == call(app, ASTUTE, slow=True)


def commit_during_the_next_request(app, fuel_store, name: str) -> list:
    """A hook writing `name` into the global astute document inside the next request that
    reaches Flask (after the fast path read the heads); returns the commits it made."""
    made: list = []

    def write():
        if not made:
            fuel_store.config.put(1, [], "astute", "values", {**DOCUMENT, "name": name})
            made.append(fuel_store.environment_repo(1).head())

    app.during.append(write)
    return made


def test_a_read_is_answered_at_the_heads_read_when_it_started(app, fuel_store):
    before = fuel_store.environment_repo(1).head()
    made = commit_during_the_next_request(app, fuel_store, "during")
    _, headers, body = call(app, ASTUTE)
    assert made and dict(headers)["X-Gitstore-Commit"] == before and b'"one"' in body
    _, headers, body = call(app, ASTUTE)  # the commit is seen by the next read
    assert dict(headers)["X-Gitstore-Commit"] == made[0] and b'"during"' in body


def test_a_pinned_read_is_not_kept_under_the_heads_read_before_it(app, fuel_store):
    # `version=main` is read at main when the app resolves it: after the commit the hook
    # makes, so its answer is not the one of the heads the fast path read first. Were it kept
    # under them, main moved back there would be answered with the later commit's data.
    repo = fuel_store.environment_repo(1)
    before = repo.head()
    made = commit_during_the_next_request(app, fuel_store, "during")
    _, _, body = call(app, ASTUTE, "version=main")
    assert made and b'"during"' in body
    subprocess.run(["git", "update-ref", "refs/heads/main", before], cwd=repo.path, check=True)
    _, headers, body = call(app, ASTUTE, "version=main")
    assert dict(headers)["X-Gitstore-Commit"] == before and b'"one"' in body


def test_a_read_at_a_branch_follows_the_branch(app, fuel_store):
    # A branch moves without main or the catalog moving (docs/gitops.md: create, move and
    # delete them freely): its answer was kept under the heads and replayed after it moved.
    repo = fuel_store.environment_repo(1)
    first = repo.head()
    client = app.test_client()
    assert client.put(ASTUTE, json={**DOCUMENT, "name": "two"}).status_code == 204
    second = repo.head()
    git = ["git", "update-ref", "refs/heads/review"]
    subprocess.run([*git, first], cwd=repo.path, check=True)
    for _ in range(2):
        _, headers, body = call(app, ASTUTE, "version=review")
        assert dict(headers)["X-Gitstore-Commit"] == first and b'"one"' in body
    subprocess.run([*git, second], cwd=repo.path, check=True)
    _, headers, body = call(app, ASTUTE, "version=review")
    assert dict(headers)["X-Gitstore-Commit"] == second and b'"two"' in body


def test_a_deleted_environment_is_not_found_at_once(app, fuel_store):
    for path in (ASTUTE, HIERA):
        call(app, path)
        call(app, path)
    fuel_store.environments.delete(1)
    for path in (ASTUTE, HIERA):
        status, _, body = call(app, path)
        assert status.startswith("404") and (status, body) == call(app, path, slow=True)[::2]


def test_a_conditional_read_is_answered_by_the_app(app):
    status, headers, _ = call(app, ASTUTE)
    etag = dict(headers)["ETag"]
    reached = len(app.reached)
    status, _, body = call(app, ASTUTE, headers={"If-None-Match": etag})
    assert status.startswith("304") and body == b""
    assert len(app.reached) == reached + 1


def test_a_reveal_is_never_kept(app):
    for _ in range(2):
        status, _, body = call(app, ASTUTE, "reveal")
        assert status.startswith("200") and b"hunter2" in body
    assert len(app.reached) == 2  # each reveal is made and audited by the app


def test_fast_answers_are_logged_and_counted_as_the_apps(app, caplog):
    call(app, ASTUTE)
    caplog.set_level(logging.INFO, logger="gitstore.requests")
    environ = EnvironBuilder(path=ASTUTE, headers={"X-Request-Id": "abc-1"}).get_environ()
    _, _, headers = run_wsgi_app(app.wsgi_app, environ, buffered=True)
    assert dict(headers)["X-Request-Id"] == "abc-1"
    [record] = [r for r in caplog.records if r.name == "gitstore.requests"]
    assert record.fields["request_id"] == "abc-1"
    assert record.fields["route"] == "/api/v1/config/environments/<int:env_id>/<path:rest>"
    assert record.fields["env"] == 1 and record.fields["status"] == 200
    assert record.fields["commit"] == dict(headers)["X-Gitstore-Commit"]
    metrics = app.test_client().get("/metrics").get_data(as_text=True)
    route = 'route="/api/v1/config/environments/<int:env_id>/<path:rest>"'
    assert any(route in line and 'status="200"' in line for line in metrics.splitlines())


# -- access control ------------------------------------------------------------------------------
@pytest.fixture
def guarded(app, fuel_store):
    access = AccessFile(fuel_store.root)
    access.add_user("reader", parse_grants(["reader"]), None)
    access.add_user("other", parse_grants(["reader:env:2"]), None)
    tokens = {name: access.create_token(name)[1] for name in ("reader", "other")}
    return app, access, tokens


@pytest.mark.parametrize("header", ["Authorization", "X-Auth-Token"])
def test_a_token_read_is_kept_and_identical(guarded, header):
    app, _, tokens = guarded
    value = f"Bearer {tokens['reader']}" if header == "Authorization" else tokens["reader"]
    first = call(app, ASTUTE, headers={header: value})
    reached = len(app.reached)
    assert call(app, ASTUTE, headers={header: value}) == first
    assert len(app.reached) == reached
    assert first[0].startswith("200") and dict(first[1])["Cache-Control"].startswith("private")


def test_a_revoked_token_is_refused_at_once(guarded):
    app, access, tokens = guarded
    headers = {"Authorization": f"Bearer {tokens['reader']}"}
    assert call(app, ASTUTE, headers=headers)[0].startswith("200")
    assert call(app, ASTUTE, headers=headers)[0].startswith("200")
    [entry] = access.tokens("reader")
    access.revoke_token(entry["id"])
    assert call(app, ASTUTE, headers=headers)[0].startswith("401")


def test_a_withdrawn_role_is_refused_at_once(guarded):
    app, access, tokens = guarded
    headers = {"X-Auth-Token": tokens["reader"]}
    call(app, ASTUTE, headers=headers)
    call(app, ASTUTE, headers=headers)
    access.set_roles("reader", parse_grants(["reader:env:2"]))
    assert call(app, ASTUTE, headers=headers)[0].startswith("403")


def test_another_callers_answer_is_not_theirs(guarded):
    app, _, tokens = guarded
    call(app, ASTUTE, headers={"X-Auth-Token": tokens["reader"]})
    call(app, ASTUTE, headers={"X-Auth-Token": tokens["reader"]})
    assert call(app, ASTUTE, headers={"X-Auth-Token": tokens["other"]})[0].startswith("403")
    assert call(app, ASTUTE)[0].startswith("401")


def test_an_address_blocked_for_failures_is_refused_even_for_a_kept_answer(guarded, fuel_store):
    app, _, tokens = guarded
    headers = {"X-Auth-Token": tokens["reader"]}
    call(app, ASTUTE, headers=headers)
    for _ in range(25):
        fuel_store.failures.record("127.0.0.1")
    assert call(app, ASTUTE, headers=headers)[0].startswith("429")


def test_basic_credentials_are_never_kept(guarded):
    app, access, _ = guarded
    access.set_password("reader", "correct horse battery")
    pair = base64.b64encode(b"reader:correct horse battery").decode()
    for _ in range(2):
        assert call(app, ASTUTE, headers={"Authorization": f"Basic {pair}"})[0].startswith("200")
    assert len(app.reached) == 2


def test_a_console_session_answer_is_never_an_anonymous_callers(guarded):
    """A read made with the console's session cookie carries no credential header: kept under
    the same key as an anonymous read, it would be served to anyone."""
    app, access, _ = guarded
    access.set_password("reader", "correct horse battery")
    client = app.test_client()
    form = client.get("/ui/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    signed_in = client.post(
        "/ui/login",
        data={"user": "reader", "password": "correct horse battery", "csrf_token": csrf},
    )
    assert signed_in.status_code == 303
    cookie = f"gitstore_session={client.get_cookie('gitstore_session').value}"
    for _ in range(2):
        assert call(app, ASTUTE, headers={"Cookie": cookie})[0].startswith("200")
    assert call(app, ASTUTE)[0].startswith("401")


# -- the Hiera node document ---------------------------------------------------------------------
HIERA = "/api/v1/hiera/1/1"


def _hiera_reveals(store) -> int:
    return sum(entry["what"] == "hiera node 1" for entry in store.secrets.audit.entries())


def test_a_hiera_document_and_its_304_are_the_apps(app):
    first = call(app, HIERA)
    assert first[0].startswith("200") and b"hunter2" in first[2]  # an open store reveals
    assert call(app, HIERA) == first == call(app, HIERA, slow=True)
    reached = len(app.reached)
    etag = {"If-None-Match": dict(first[1])["ETag"]}
    revalidated = call(app, HIERA, headers=etag)
    assert revalidated[0].startswith("304") and revalidated[2] == b""
    assert (
        call(app, HIERA, headers=etag) == revalidated == call(app, HIERA, headers=etag, slow=True)
    )
    assert len(app.reached) == reached + 2, "the repeated 200 and 304 reached Flask"


def test_every_hiera_reveal_is_audited_fast_or_not(app, fuel_store):
    before = _hiera_reveals(fuel_store)
    etag = {"If-None-Match": dict(call(app, HIERA)[1])["ETag"]}
    for _ in range(3):
        call(app, HIERA)
        call(app, HIERA, headers=etag)
    assert _hiera_reveals(fuel_store) == before + 7


def _audited(store) -> list[dict]:
    """The Hiera reveals recorded so far, without their times."""
    entries = store.secrets.audit.entries()
    return [
        {k: v for k, v in e.items() if k != "time"} for e in entries if e["what"] == "hiera node 1"
    ]


@pytest.mark.parametrize("pinned", [False, True])
def test_a_repeated_hiera_reveal_is_audited_as_the_app_audits_it(app, fuel_store, pinned):
    version = dict(call(app, HIERA)[1])["X-Gitstore-Version"]
    query = f"version={version}" if pinned else ""
    etag = {"If-None-Match": dict(call(app, HIERA, query)[1])["ETag"]}
    call(app, HIERA, query, headers=etag)  # kept
    reached = len(app.reached)
    call(app, HIERA, query, headers=etag, slow=True)
    call(app, HIERA, query, headers=etag)
    call(app, HIERA, query)
    assert len(app.reached) == reached + 1, "the 304 and the 200 were the fast path's"
    app_line, *fast_lines = _audited(fuel_store)[-3:]
    assert "resources.astute.db_password" in app_line["paths"]
    assert app_line["commit"] == fuel_store.environment_repo(1).head()
    assert fast_lines == [app_line, app_line]


def test_a_hiera_reveal_after_a_commit_names_the_new_commit(app, fuel_store):
    call(app, HIERA)
    call(app, HIERA)
    client = app.test_client()
    assert client.put(ASTUTE, json={**DOCUMENT, "db_password": "swordfish"}).status_code == 204
    call(app, HIERA)
    call(app, HIERA)
    head = fuel_store.environment_repo(1).head()
    assert [line["commit"] for line in _audited(fuel_store)[-2:]] == [head, head]


def test_a_hiera_commit_is_read_at_once(app):
    first = call(app, HIERA)
    etag = {"If-None-Match": dict(first[1])["ETag"]}
    call(app, HIERA, headers=etag)
    client = app.test_client()
    assert client.put(ASTUTE, json={**DOCUMENT, "db_password": "swordfish"}).status_code == 204
    status, _, body = call(app, HIERA, headers=etag)
    assert status.startswith("200") and b"swordfish" in body
    assert call(app, HIERA) == call(app, HIERA, slow=True)


def test_a_new_key_makes_the_hiera_document_read_again(app, fuel_store):
    call(app, HIERA)
    call(app, HIERA)
    reached = len(app.reached)
    Keyring.of_root(fuel_store.root).add_key()  # a new epoch, no commit: revealed values
    assert call(app, HIERA) == call(app, HIERA, slow=True)  # follow from the keys too
    assert len(app.reached) == reached + 2  # the first after the new key, and the slow one


def test_a_hiera_reader_gets_the_masked_document_and_loses_it_at_once(guarded):
    app, access, tokens = guarded
    headers = {"Authorization": f"Bearer {tokens['reader']}"}
    first = call(app, HIERA, headers=headers)
    assert first[0].startswith("200") and b"hunter2" not in first[2]
    assert "X-Gitstore-Masked" in dict(first[1])
    assert call(app, HIERA, headers=headers) == first
    assert call(app, HIERA)[0].startswith("401")
    [entry] = access.tokens("reader")
    access.revoke_token(entry["id"])
    assert call(app, HIERA, headers=headers)[0].startswith("401")
