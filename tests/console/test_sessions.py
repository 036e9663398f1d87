"""Signing in to the console: the form, the signed session cookie, CSRF tokens, and the
cookie's identity on REST routes (docs/security.md, "Console sessions")."""

from __future__ import annotations

import stat
import time
from dataclasses import replace

import pytest
from access.helpers import basic, password_of

from console.forms import COOKIE, csrf_of, form_token, guarded_client, sign_in
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import sessions

VALUES = "/api/v1/config/environments/1/nodes/1/resources/astute/overrides"


@pytest.fixture
def guarded(tmp_path):
    return guarded_client(tmp_path / "store")


def _cookie_header(response) -> str:
    found = [h for h in response.headers.getlist("Set-Cookie") if h.startswith(COOKIE + "=")]
    assert found, response.headers
    return found[-1]


def test_sign_in_sets_a_strict_http_only_cookie_and_shows_the_user(guarded):
    _, client = guarded
    response = sign_in(client, "writer1")
    assert response.status_code == 303 and response.headers["Location"] == "/ui/environments/1"
    header = _cookie_header(response)
    assert "HttpOnly" in header and "SameSite=Strict" in header and "Path=/" in header
    assert "Max-Age=" in header and "Secure" not in header  # plain HTTP here
    response = client.get("/ui/environments/1")
    assert '<strong class="user">writer1</strong>' in response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "private"  # a user's page: no shared cache


def test_over_tls_the_cookie_is_secure(guarded):
    _, client = guarded
    page = client.get("/ui/login", base_url="https://localhost").get_data(as_text=True)
    response = client.post(
        "/ui/login",
        base_url="https://localhost",
        data={"user": "reader", "password": "reader-pw", "csrf_token": csrf_of(page)},
    )
    assert response.status_code == 303
    assert "Secure" in _cookie_header(response)


def test_a_wrong_password_is_refused_and_counted(guarded):
    store, client = guarded
    response = sign_in(client, "writer1", "wrong")
    assert response.status_code == 401
    assert "invalid user name or password" in response.get_data(as_text=True)
    assert client.get("/ui/environments/1").status_code == 401  # still nobody
    assert store.failures.path.exists()


def test_the_failed_sign_in_limit_is_the_basic_auth_one(guarded):
    _, client = guarded
    for _ in range(21):
        sign_in(client, "writer1", "wrong")
    response = sign_in(client, "writer1")  # the right password, too late
    assert response.status_code == 429 and int(response.headers["Retry-After"]) >= 1
    # and the same count holds for HTTP Basic from that address
    assert client.get("/ui/", headers=basic("reader", password_of("reader"))).status_code == 429


def test_a_tampered_cookie_is_refused(guarded):
    _, client = guarded
    sign_in(client, "reader")
    value = client.get_cookie(COOKIE).value
    payload, _, mac = value.partition(".")
    forged = payload.replace(payload[5], "A" if payload[5] != "A" else "B", 1) + "." + mac
    client.set_cookie(COOKIE, forged)
    assert client.get("/ui/environments/1").status_code == 401
    client.set_cookie(COOKIE, payload + "." + mac[:-2])
    assert client.get("/ui/environments/1").status_code == 401
    client.set_cookie(COOKIE, value)
    assert client.get("/ui/environments/1").status_code == 200


def test_a_password_change_or_removal_ends_the_session(guarded):
    store, client = guarded
    sign_in(client, "reader")
    assert client.get("/ui/").status_code == 200
    AccessFile(store.root).set_password("reader", "new-password")
    assert client.get("/ui/").status_code == 401
    sign_in(client, "reader", "new-password")
    assert client.get("/ui/").status_code == 200
    AccessFile(store.root).remove_user("reader")
    assert client.get("/ui/").status_code == 401


def test_roles_are_read_again_on_every_request(guarded):
    store, client = guarded
    sign_in(client, "reader")
    assert client.get("/ui/").status_code == 200
    AccessFile(store.root).set_roles("reader", parse_grants(["reader:env:1"]))
    assert client.get("/ui/").status_code == 403


def test_logout_needs_the_csrf_token_and_ends_the_session(guarded):
    _, client = guarded
    sign_in(client, "reader")
    assert client.post("/ui/logout").status_code == 403
    assert client.post("/ui/logout", data={"csrf_token": "wrong"}).status_code == 403
    token = form_token(client, "/ui/")  # the sign-out form of the header
    response = client.post("/ui/logout", data={"csrf_token": token})
    assert response.status_code == 303
    assert client.get("/ui/").status_code == 401


@pytest.mark.parametrize("token", [None, "", "wrong"])
def test_sign_in_without_the_right_csrf_token_is_403(guarded, token):
    _, client = guarded
    client.get("/ui/login")  # a session to bind a token to
    data = {"user": "reader", "password": "reader-pw"}
    if token is not None:
        data["csrf_token"] = token
    assert client.post("/ui/login", data=data).status_code == 403
    assert client.get("/ui/").status_code == 401


def test_a_token_of_another_session_is_403(guarded, tmp_path):
    _, client = guarded
    other = client.application.test_client()
    token = csrf_of(other.get("/ui/login").get_data(as_text=True))
    client.get("/ui/login")
    data = {"user": "reader", "password": "reader-pw", "csrf_token": token}
    assert client.post("/ui/login", data=data).status_code == 403


def test_a_browser_without_credentials_is_sent_to_the_form(guarded):
    _, client = guarded
    response = client.get("/ui/environments/1?version=2", headers={"Accept": "text/html"})
    assert response.status_code == 303
    assert response.headers["Location"].startswith("/ui/login?next=")
    response = sign_in_to(client, response.headers["Location"], "reader")
    assert response.headers["Location"] == "/ui/environments/1?version=2"


def sign_in_to(client, login_url: str, user: str):
    page = client.get(login_url).get_data(as_text=True)
    target = page.split('name="next" value="')[1].split('"')[0]
    return client.post(
        "/ui/login",
        data={
            "user": user,
            "password": password_of(user),
            "csrf_token": csrf_of(page),
            "next": target,
        },
    )


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/ui/", "/api/v1/x", "/ui/\r\nX-Injected: 1"],
)
def test_sign_in_never_redirects_off_the_console(guarded, target):
    # A line break in `next` made the redirect a 500 that still set the session cookie.
    _, client = guarded
    token = csrf_of(client.get("/ui/login").get_data(as_text=True))
    data = {"user": "reader", "password": "reader-pw", "csrf_token": token, "next": target}
    response = client.post("/ui/login", data=data)
    assert response.status_code == 303 and response.headers["Location"] == "/ui/"


def test_the_signing_key_is_private_and_outside_the_repositories(guarded):
    store, client = guarded
    client.get("/ui/login")
    key = store.root / "console-session.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_bytes()) == 32


def test_rest_reads_honour_the_cookie_and_writes_need_the_csrf_header(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    read = client.get(VALUES)
    assert read.status_code == 200 and read.headers["Cache-Control"].startswith("private")
    body = {"net": {"mtu": 1}}
    head = store.environment_repo(1).head()
    assert client.put(VALUES, json=body).status_code == 403  # another site could send this
    assert client.put(VALUES, json=body, headers={"X-CSRF-Token": "x"}).status_code == 403
    assert store.environment_repo(1).head() == head
    token = form_token(client, "/ui/environments/1")
    written = client.put(VALUES, json=body, headers={"X-CSRF-Token": token})
    assert written.status_code == 204
    assert store.environment_repo(1).snapshot().info().author == "writer1"


def test_the_cookie_of_a_reader_cannot_write_over_rest(guarded):
    _, client = guarded
    sign_in(client, "reader")
    token = form_token(client, "/ui/")
    response = client.put(VALUES, json={"a": 1}, headers={"X-CSRF-Token": token})
    assert response.status_code == 403 and "writer" in response.get_json()["message"]


def test_an_expired_cookie_is_refused(guarded):
    """A cookie signed with the right key but past its expiry: as good as none."""
    store, client = guarded
    sign_in(client, "reader")
    key = (store.root / "console-session.key").read_bytes()
    session = sessions.decode(client.get_cookie(COOKIE).value, key)
    assert session is not None and session.user == "reader"
    client.set_cookie(COOKIE, sessions.encode(replace(session, expires=int(time.time()) - 1), key))
    assert client.get("/ui/").status_code == 401
    client.set_cookie(COOKIE, sessions.encode(session, key))
    assert client.get("/ui/").status_code == 200


@pytest.mark.parametrize(
    "content_type, body",
    [
        ("application/x-www-form-urlencoded", "a=&" * 5000 + "user=writer1"),
        (
            "multipart/form-data; boundary=b",
            "".join(
                f'--b\r\nContent-Disposition: form-data; name="a{n}"\r\n\r\n\r\n'
                for n in range(500)
            )
            + "--b--\r\n",
        ),
    ],
    ids=["urlencoded", "multipart"],
)
def test_a_form_of_too_many_fields_is_refused_before_it_is_parsed(guarded, content_type, body):
    # 5 million empty fields (15 MB) took 700 MB and 3 s of a worker, before any check, from
    # anyone: the console's forms hold a dozen fields.
    _, client = guarded
    sign_in(client, "writer1")  # a cookie: REST writes read the form's CSRF token
    for path in ("/ui/login", "/ui/logout", VALUES):
        response = client.post(path, data=body, content_type=content_type)
        assert response.status_code in (400, 413), (path, response.status_code)
        assert response.is_json and "fields" in response.get_json()["message"], response.data


def test_an_ordinary_sign_in_still_works_after_the_bound(guarded):
    _, client = guarded
    assert sign_in(client, "writer1").status_code == 303


@pytest.mark.parametrize(
    ("user", "landing"), [("reader", "/ui/"), ("writer1", "/ui/environments/1")]
)
def test_a_sign_in_without_a_return_page_lands_on_a_page_the_user_may_read(guarded, user, landing):
    # A user whose grants name one environment landed on the store-wide list: a JSON 403.
    _, client = guarded
    form = client.get("/ui/login").get_data(as_text=True)
    assert 'name="next"' not in form  # a browser posts the form as it is
    response = sign_in(client, user)
    assert response.status_code == 303 and response.headers["Location"] == landing
    page = client.get(landing)
    assert page.status_code == 200 and page.content_type.startswith("text/html")
