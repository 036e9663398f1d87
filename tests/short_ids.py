"""Short commit ids for `version=` in tests."""

from __future__ import annotations


def short_id(sha: str, length: int = 8) -> str:
    """The shortest prefix of `sha` of at least `length` characters that holds a letter.

    A prefix made only of digits reads as version number N (docs/versions.md), so a test that
    took `sha[:8]` would fail for the one commit id in forty whose first eight are digits.
    """
    return next(sha[:n] for n in range(length, len(sha) + 1) if not sha[:n].isdigit())
