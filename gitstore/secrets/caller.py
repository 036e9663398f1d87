"""Whether the caller of a write may learn that a secret it sends equals the stored one.

A sealer keeps the stored ciphertext of a secret sent unchanged, so an unchanged secret keeps
its bytes and a rewrite of the same document makes no commit. That comparison is an oracle: a
writer who may not read a secret could test guesses of it (the ciphertext comes back unchanged,
the write makes no commit). So it is made only for callers who may reveal the secret anyway;
for everyone else every secret sent is sealed with a fresh nonce.

The front end that knows the caller binds a rule for the duration of a request (the REST API:
the `secrets` role, or an open store). Without a binding the caller is the library's own user,
who holds the keyring on disk and may reveal everything (the CLI with --root, the importer).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

_RULE: contextvars.ContextVar[Callable[[int | None], bool] | None] = contextvars.ContextVar(
    "gitstore_may_reveal", default=None
)


def may_reveal(env_id: int | None) -> bool:
    """Whether the current caller may see environment `env_id`'s secrets in plain text
    (None: the catalog's, which need the store-wide `secrets` role)."""
    rule = _RULE.get()
    return True if rule is None else rule(env_id)


def bind(rule: Callable[[int | None], bool]) -> contextvars.Token:
    """Make `rule` decide for the current request; pass the token to `unbind` at its end."""
    return _RULE.set(rule)


def unbind(token: contextvars.Token) -> None:
    _RULE.reset(token)
