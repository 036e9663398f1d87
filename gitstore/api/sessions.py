"""The console's session cookie and CSRF tokens (docs/security.md, "Console sessions").

A session is a cookie `gitstore_session` holding `{sid, user, expires, fingerprint}` and an
HMAC-SHA256 of it, so the server keeps no session table and every gunicorn worker checks any
cookie. The signing key is 32 random bytes at `<root>/console-session.key` (mode 0600,
outside every repository), made by whichever worker needs it first.

- A signed-in session names a user of the access file. Each request looks the user up again:
  a removed user is signed out at once, and a changed password (the `fingerprint` is a digest
  of the stored hash) ends every session of the old one. Sessions expire after `LIFETIME`.
- Every console visitor holds a session, signed in or not: it anchors the CSRF token of each
  form (`csrf_token()`, an HMAC of the session id), so a form posted from another site, which
  cannot read our cookie or page, is refused (403), whatever credentials the browser adds.
- The cookie is `HttpOnly`, `SameSite=Strict`, `Path=/`, and `Secure` when the request came
  over TLS (or the app's `GITSTORE_SECURE_COOKIES` says TLS ends at a proxy in front).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from flask import Response, current_app, g, request

from gitstore.access.policy import Identity
from gitstore.api.http import app_store
from gitstore.errors import Forbidden
from gitstore.names import parse_flag

log = logging.getLogger("gitstore.api.sessions")

COOKIE = "gitstore_session"
KEY_FILE = "console-session.key"
#: How long a session lasts, signed in or not (seconds).
LIFETIME = 8 * 3600
#: Where a form carries its CSRF token, and where a script may send it instead.
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
#: App setting: mark the cookie `Secure` even when the request reached us over plain HTTP
#: (TLS ends at a proxy in front of gunicorn).
SECURE_COOKIES = "GITSTORE_SECURE_COOKIES"
_KEY_BYTES = 32
_KEYS: dict[Path, bytes] = {}
_KEYS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Session:
    sid: str
    user: str | None
    expires: int
    fingerprint: str | None = None


# -- the signing key -------------------------------------------------------------------------
def signing_key() -> bytes:
    """The store's session key, made on first use (every worker then reads the same file)."""
    path = app_store().root / KEY_FILE
    with _KEYS_LOCK:
        if path not in _KEYS:
            _KEYS[path] = _read_or_make(path)
        return _KEYS[path]


def _read_or_make(path: Path) -> bytes:
    if not path.exists():
        # written whole under another name, then linked: a racing worker either wins the
        # link or reads the winner's complete file, never a half-written one
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(_KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    key = path.read_bytes()
    if len(key) != _KEY_BYTES:
        raise RuntimeError(f"{path} must hold {_KEY_BYTES} bytes; remove it to make a new key")
    return key


# -- encoding --------------------------------------------------------------------------------
def _mac(key: bytes, text: bytes) -> bytes:
    return hmac.new(key, text, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(session: Session, key: bytes) -> str:
    payload = json.dumps(asdict(session), separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_mac(key, b'session:' + payload))}"


def decode(value: str, key: bytes, now: float | None = None) -> Session | None:
    """The session a cookie holds; None when it is malformed, forged or expired."""
    try:
        text, _, mac = value.partition(".")
        payload = _unb64(text)
        if not hmac.compare_digest(_unb64(mac), _mac(key, b"session:" + payload)):
            return None
        session = Session(**json.loads(payload))
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    if not isinstance(session.sid, str) or not isinstance(session.expires, int):
        return None
    if session.expires <= (time.time() if now is None else now):
        return None
    return session


def _new(user: str | None = None, fingerprint: str | None = None) -> Session:
    return Session(secrets.token_hex(16), user, int(time.time()) + LIFETIME, fingerprint)


# -- the request's session -------------------------------------------------------------------
def current() -> Session | None:
    """The valid session the request's cookie holds (None without one)."""
    if "session" not in g:
        raw = request.cookies.get(COOKIE)
        g.session = decode(raw, signing_key()) if raw else None
        if raw and g.session is None:
            log.info("ignored an invalid or expired session cookie from %s", request.remote_addr)
    return g.session


def ensure() -> Session:
    """The request's session, or a new anonymous one that the response will set."""
    session = current()
    if session is None:
        session = _start(_new())
    return session


def _start(session: Session) -> Session:
    g.session = session
    g.session_changed = True
    return session


def sign_in(identity: Identity) -> None:
    """Start a new session (a new id: no session fixation) for `identity`."""
    _start(_new(identity.name, fingerprint(identity.name)))


def sign_out() -> None:
    _start(_new())


def signed_in_user() -> str | None:
    session = current()
    return session.user if session is not None else None


def fingerprint(user: str) -> str | None:
    """A digest of the user's stored password hash: changing the password ends sessions."""
    policy = app_store().access.policy()
    entry = (policy.users.get(user) if policy is not None else None) or {}
    stored = entry.get("password")
    return hashlib.sha256(str(stored).encode()).hexdigest()[:16] if stored else None


def identity() -> Identity | None:
    """The signed-in user of the request's session, as the access file says today."""
    session = current()
    if session is None or session.user is None:
        return None
    policy = app_store().access.policy()
    if policy is None or session.user not in policy.users:
        return None
    if session.fingerprint != fingerprint(session.user):
        return None  # the password changed since this session signed in
    return policy.identity(session.user, "session")


def save(response: Response) -> Response:
    """Set the cookie on `response` when this request started or renewed a session."""
    if not g.get("session_changed"):
        return response
    session: Session = g.session
    response.set_cookie(
        COOKIE,
        encode(session, signing_key()),
        max_age=max(0, session.expires - int(time.time())),
        path="/",
        secure=secure(),
        httponly=True,
        samesite="Strict",
    )
    return response


def secure() -> bool:
    forced = current_app.config.get(SECURE_COOKIES, os.environ.get(SECURE_COOKIES, "0"))
    return request.is_secure or parse_flag(str(forced), SECURE_COOKIES)


# -- CSRF ------------------------------------------------------------------------------------
def csrf_token() -> str:
    """The token forms of this session carry (the session is started if there is none)."""
    return _b64(_mac(signing_key(), b"csrf:" + ensure().sid.encode()))


def check_csrf() -> None:
    """Forbidden unless the request carries the CSRF token of its session (form field
    `csrf_token` or header `X-CSRF-Token`)."""
    session = current()
    sent = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD) or ""
    if session is None:
        raise Forbidden(
            "no console session: load the form again (cookies must be enabled)", key=CSRF_FIELD
        )
    expected = _b64(_mac(signing_key(), b"csrf:" + session.sid.encode()))
    if not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise Forbidden(
            "missing or wrong CSRF token: submit the form from the console page "
            f"(or send header {CSRF_HEADER})",
            key=CSRF_FIELD,
        )
