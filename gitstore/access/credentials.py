"""Password hashes and API tokens: how secrets of the access file are made and checked.

Passwords are hashed with scrypt (hashlib) and a random per-user salt; the stored string names
its parameters, so they can be raised later without breaking existing hashes:

    scrypt$n=16384,r=8,p=1$<salt, base64>$<hash, base64>

Tokens are 256 random bits, shown once. They are stored as a SHA-256 digest: a token has far
more entropy than a password, so a slow hash would add cost on every request and no safety.
A token names its own id (`gst_<id>_<secret>`), so checking one is one lookup, not a scan.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

_SCHEME = "scrypt"
_N, _R, _P = 2**14, 8, 1
_SALT_BYTES = 16
_KEY_BYTES = 32
_MAXMEM = 64 * 1024 * 1024
TOKEN_PREFIX = "gst"
_TOKEN_ID_BYTES = 6
_TOKEN_SECRET_BYTES = 32


def hash_password(password: str) -> str:
    """A new salted scrypt hash of `password`, as stored in the access file."""
    salt = secrets.token_bytes(_SALT_BYTES)
    digest = _scrypt(password, salt, _N, _R, _P)
    return f"{_SCHEME}$n={_N},r={_R},p={_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches the `stored` hash (False for a malformed hash)."""
    try:
        scheme, params, salt, digest = stored.split("$")
        cost = dict(item.split("=") for item in params.split(","))
        n, r, p = int(cost["n"]), int(cost["r"]), int(cost["p"])
        expected = base64.b64decode(digest, validate=True)
        salt_bytes = base64.b64decode(salt, validate=True)
    except (ValueError, KeyError):
        return False
    if scheme != _SCHEME:
        return False
    return hmac.compare_digest(_scrypt(password, salt_bytes, n, r, p), expected)


def dummy_hash() -> str:
    """A hash to check against when the user does not exist: a missing user then costs as
    much time as a wrong password, and response times do not tell which names exist (made
    once per store: `AccessFile`)."""
    return hash_password(secrets.token_hex(16))


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=_KEY_BYTES
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class NewToken:
    """A token just made: `secret` is shown once, `digest` is what the access file keeps."""

    token_id: str
    secret: str
    digest: str


def new_token() -> NewToken:
    token_id = secrets.token_hex(_TOKEN_ID_BYTES)
    secret = f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(_TOKEN_SECRET_BYTES)}"
    return NewToken(token_id, secret, token_digest(secret))


def token_digest(token: str) -> str:
    return "sha256$" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_id_of(token: str) -> str | None:
    """The id a token names, or None when it is not shaped like one of ours."""
    prefix, _, rest = token.partition("_")
    token_id, _, secret = rest.partition("_")
    if prefix != TOKEN_PREFIX or not token_id or not secret:
        return None
    return token_id


def token_matches(token: str, digest: str) -> bool:
    return hmac.compare_digest(token_digest(token), digest)
