"""The one door through which a document becomes the bytes of a file in a repository.

Every write path (REST, CLI, facts upload, upgrade clones) calls `encode`, so rules that apply to
stored bytes (comment-preserving rewrites, encryption of secret leaves, the document limits of
`gitstore.limits`) live in exactly one place.
A writer of environment documents passes the `sealer` of `store.secrets`; only documents that
can hold no secret (catalog files, `environment.yaml`, inventory records) are encoded without.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitstore import limits, yamlio
from gitstore.backend.snapshot import parsed_blob, remember_parsed
from gitstore.errors import InvalidInput

if TYPE_CHECKING:
    from gitstore.secrets.seal import Sealer

_UNREADABLE = object()


def encode(
    repository: str,
    path: str,
    document: Any,
    old: bytes | None = None,
    *,
    sealer: Sealer | None = None,
    edited: bool = False,
) -> bytes:
    """Bytes for `document` at `path` of `repository`, keeping comments and order of `old`.

    With `sealer`, secret leaves are sealed first; values unchanged against `old` keep their
    ciphertext byte for byte. `edited`: `document` is plain data made from the parse of `old`
    by a key batch (`keypaths.apply_batch`: kept keys keep their order, new ones come last),
    so the written bytes parse back to it exactly and it is remembered as their parse.
    """
    if not isinstance(document, dict):
        raise InvalidInput(f"{path}: document must be a mapping", path=path)
    limits.check_document(path, document)  # before any dump: a huge document costs seconds
    data, written = _encode(repository, path, document, old, sealer)
    limits.check_encoded(path, data)
    if edited and written is not None:
        remember_parsed(data, written)  # the next write or read of it does not parse it again
    return data


def _encode(
    repository: str, path: str, document: dict, old: bytes | None, sealer: Sealer | None
) -> tuple[bytes, dict | None]:
    """The bytes, and the document they read back as in its key order (None if unsure)."""
    parsed = _parse(repository, path, old)
    if sealer is not None:
        document = sealer.seal(path, document, parsed if isinstance(parsed, dict) else None)
    if old and parsed is _UNREADABLE:
        return yamlio.dump(document), document  # an unreadable old file is simply replaced
    data, ordered = yamlio.rewrite_reporting(old, document, parsed=parsed if old else None)
    return data, document if ordered else None


def _parse(repository: str, path: str, old: bytes | None) -> Any:
    if not old:
        return None
    try:
        # The write just read `old` through a Snapshot: its parse is in the blob cache.
        return parsed_blob(old, f"{repository}:{path}")
    except InvalidInput:
        return _UNREADABLE
