"""One sealed value: `ENC[v1,aesgcm,kid=<key id>,n=<b64 nonce>,d=<b64 ciphertext+tag>]`.

AES-256-GCM with a random 96-bit nonce. The plaintext is the value as JSON, so a sealed integer
opens as an integer. The associated data binds the value to its place: repository, file path and
key path. A ciphertext copied to another key, file or environment fails GCM's authentication
and does not open; nothing about the value leaks in the attempt.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from gitstore.errors import Undecryptable

PREFIX = "ENC["
NONCE_BYTES = 12
_SEALED = re.compile(
    r"^ENC\[v1,aesgcm,kid=([A-Za-z0-9_.-]{1,64}),n=([A-Za-z0-9+/]{16}),"
    r"d=([A-Za-z0-9+/]+={0,2})\]$"
)


@dataclass(frozen=True)
class Place:
    """Where a value lives: what its ciphertext is bound to."""

    repository: str  # `environments/<id>`
    file: str  # repository-relative path
    key: tuple[str, ...]  # the key path inside the document (list indexes as digits)

    @property
    def dotted(self) -> str:
        return ".".join(self.key)

    def associated_data(self) -> bytes:
        """An unambiguous encoding of the three parts (a key may itself contain dots)."""
        return json.dumps(
            [self.repository, self.file, list(self.key)], separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8")

    def named(self) -> str:
        return f"{self.file}: key {self.dotted!r}"


def is_sealed(value: Any) -> bool:
    """Whether `value` is (or pretends to be) a sealed value; never shown as a plain value."""
    return isinstance(value, str) and value.startswith(PREFIX)


def key_id_of(value: str) -> str | None:
    """The key id a sealed value names; None when it is malformed."""
    match = _SEALED.match(value)
    return match.group(1) if match else None


def well_formed(value: str) -> bool:
    return _SEALED.match(value) is not None


def seal(value: Any, key_id: str, key: bytes, place: Place) -> str:
    """The sealed text of `value` (any JSON-able value) at `place`."""
    plain = json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    nonce = os.urandom(NONCE_BYTES)
    data = _aead(key).encrypt(nonce, plain, place.associated_data())
    return f"ENC[v1,aesgcm,kid={key_id},n={_b64(nonce)},d={_b64(data)}]"


def open_sealed(text: str, keys: dict[str, bytes], place: Place) -> Any:
    """The value sealed in `text` at `place`; Undecryptable naming the place otherwise.

    The message never holds the ciphertext or any part of the value.
    """
    match = _SEALED.match(text)
    if match is None:
        raise _fail(place, "it is not a well-formed ENC[v1,aesgcm,...] value")
    key_id, nonce, data = match.groups()
    key = keys.get(key_id)
    if key is None:
        raise _fail(place, f"its key {key_id!r} is not in the keyring")
    try:
        plain = _aead(key).decrypt(_unb64(nonce), _unb64(data), place.associated_data())
        return json.loads(plain)
    except (InvalidTag, binascii.Error, ValueError) as exc:
        raise _fail(place, "it was sealed for another place (moved or copied) or altered") from exc


@functools.lru_cache(maxsize=64)
def _aead(key: bytes) -> AESGCM:
    """One cipher object per key (setting up the key schedule costs more than a small value):
    a pure memo of immutable input, one of the few module caches the conventions allow."""
    return AESGCM(key)


def _fail(place: Place, why: str) -> Undecryptable:
    return Undecryptable(
        f"the secret at {place.named()} does not decrypt: {why}", path=place.file, key=place.dotted
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def segments(path: Sequence[Any]) -> tuple[str, ...]:
    """A key path as the strings the associated data holds."""
    return tuple(str(segment) for segment in path)
