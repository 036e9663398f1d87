"""Whether the caller of a write may learn that a secret it sends equals the stored one.

A sealer keeps the stored ciphertext of a secret sent unchanged, so an unchanged secret keeps
its bytes and a rewrite of the same document makes no commit. That comparison is an oracle: a
writer who may not read a secret could test guesses of it (the ciphertext comes back unchanged,
the write makes no commit). So it is made only for callers who may reveal the secret anyway;
for everyone else every secret sent is sealed with a fresh nonce.

A `Caller` answers that question for an environment (None: the catalog). `Secrets.sealer` takes
one explicitly; the Secrets service holds the one its front end bound (`Secrets.bind_caller`),
and it is `NOBODY` until bound: a front end that binds nothing never compares. Who may compare
is bound by name: `KEYRING_HOLDER` for the library's own user, who holds the keyring on disk and
may reveal everything (the CLI with --root, the store's creator); the REST API binds a rule that
asks the request's identity (`api/http.py`), permissive for an open store only.
"""

from __future__ import annotations

from collections.abc import Callable

#: Whether the current caller may see environment `env_id`'s secrets in plain text (None: the
#: catalog's, which need the store-wide `secrets` role).
Caller = Callable[[int | None], bool]


def NOBODY(env_id: int | None) -> bool:  # noqa: N802 - a named rule, spelt as a constant
    """No caller bound: never compare (the default)."""
    return False


def KEYRING_HOLDER(env_id: int | None) -> bool:  # noqa: N802 - a named rule, spelt as a constant
    """The keyring's holder (the process reads the keyring on disk): may reveal everything."""
    return True
