"""The one door through which a document becomes the bytes of a file in a repository.

Every write path (REST, CLI, facts upload, upgrade clones) calls `encode`, so rules that apply to
stored bytes (comment-preserving rewrites today, encryption of secret leaves with the secrets
issue) live in exactly one place.
"""

from __future__ import annotations

from typing import Any

from gitstore import yamlio
from gitstore.errors import InvalidInput


def encode(repository: str, path: str, document: Any, old: bytes | None = None) -> bytes:
    """Bytes for `document` at `path` of `repository`, keeping comments and order of `old`."""
    if not isinstance(document, dict):
        raise InvalidInput(f"{path}: document must be a mapping", path=path)
    return yamlio.rewrite(old, document)
