"""The one exception tree of gitstore.

    GitstoreError                 root: every expected failure of the library
    ├── NotFound                  an addressed thing does not exist
    │   └── UnknownRevision       a `version` that names no commit
    ├── Conflict                  the request is well formed but clashes with the stored state
    ├── PreconditionFailed        the document changed since the version an If-Match names
    ├── NotAllowed                the operation does not apply to the addressed entity
    ├── InvalidInput              a malformed request: bad name, bad field, bad body
    │   ├── ValidationFailed      a document breaks the store's rules (schema, graph, layout)
    │   ├── UnknownPin            a `version` pin that names no commit, where NotFound would
    │   │                         mean something else (an unknown node of a Hiera node document)
    │   └── UnsupportedMediaType  a body not declared as the type the route reads (JSON)
    ├── Undecryptable             a sealed secret that does not open where it is stored
    ├── Unauthorized              no or bad credentials
    ├── Forbidden                 valid credentials, insufficient role
    ├── TooManyRequests           too many failed authentications
    ├── MisdirectedRequest        an open store asked for under a name it is not served as
    └── Unavailable               a needed facility is not configured (e.g. no keyring)
        ├── Damaged               a repository on disk is corrupt (bad ref, missing or
        │                         unreadable object): reads of it fail, others are served
        ├── Busy                  every slot for waiting requests of this process is taken
        └── DeadlineExceeded      a request still running at its deadline (`Deadline`)

The core knows no HTTP: `gitstore.api.errors` maps these classes to status codes in one table.
Leaves carry structured attributes so front ends can render more than a string.
"""

from __future__ import annotations

from typing import Any


class GitstoreError(Exception):
    """Root of every expected gitstore failure."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        key: str | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.key = key
        self.errors = errors or []

    def __str__(self) -> str:
        return self.message


class NotFound(GitstoreError):
    """An addressed entity, level, resource, file or key does not exist."""


class UnknownRevision(NotFound):
    """A `version` that names no commit of the addressed repository."""

    def __init__(self, revision: str, repository: str = "") -> None:
        where = f" in {repository}" if repository else ""
        super().__init__(f"unknown version {revision!r}{where}; {_versions_step(repository)}")
        self.revision = revision


def _versions_step(repository: str) -> str:
    """Where the versions of `repository` ("environment 1", "catalog") are listed."""
    kind, _, env_id = repository.partition(" ")
    if kind == "environment" and env_id.isdigit():
        return (
            f"list its versions with `gitstore config history --env {env_id}` "
            f"(GET /api/v1/config/environments/{env_id}/history)"
        )
    return "a version is a commit number (1 = the first), a commit id, a tag or a branch (main~2)"


class Conflict(GitstoreError):
    """The request clashes with the stored state (duplicate, data in the way, bad key path)."""


class PreconditionFailed(GitstoreError):
    """A write conditioned on a version (`If-Match`, `--if-version`) whose document changed
    since that version: another writer got there first, so this edit would lose theirs."""


class NotAllowed(GitstoreError):
    """The operation does not apply to the entity it addresses (a node that is not in the
    original of the seed it is assigned to): Fuel's 405."""


class InvalidInput(GitstoreError):
    """A malformed request: the message names the bad field, name or body part."""


class ValidationFailed(InvalidInput):
    """A document breaks the store's rules; `errors` lists each problem with file/line/key."""


class UnknownPin(InvalidInput):
    """A `version` pin that names no commit, kept apart from NotFound for one reason.

    In the Hiera node document NotFound means "unknown node" (which a client may treat as "no
    data"); a bad pin must never be mistaken for that.
    """

    def __init__(self, revision: str, repository: str = "") -> None:
        where = f" in {repository}" if repository else ""
        super().__init__(
            f"unknown version {revision!r}{where}: the pin names no commit", key="version"
        )
        self.revision = revision


class UnsupportedMediaType(InvalidInput):
    """A request body whose Content-Type is not the one the route reads (`application/json`).

    Browsers send `text/plain` across sites without asking first; insisting on the JSON type
    makes such a request fail before it writes.
    """


class Undecryptable(GitstoreError):
    """A sealed secret that does not open: unknown key, moved or copied ciphertext, tampering.

    `path` is the file and `key` the dotted key path; the message never holds the value.
    """


class Unauthorized(GitstoreError):
    """No or bad credentials. `challenge`: the caller should be asked for credentials (a front
    end that speaks HTTP answers with an authentication challenge)."""

    def __init__(self, message: str, *, challenge: bool = False, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.challenge = challenge


class Forbidden(GitstoreError):
    """Valid credentials without the role the operation needs."""


class TooManyRequests(GitstoreError):
    """Too many failed authentications from one address; `retry_after` seconds until it may
    try again."""

    def __init__(self, message: str, *, retry_after: int | None = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class MisdirectedRequest(GitstoreError):
    """A request to an open store whose `Host` is not a name the store is served as.

    A web page can reach a loopback server under its own name by DNS rebinding; an open store
    has no credentials to stop it, so it answers only loopback names, addresses and the names
    it was started with.
    """


class Unavailable(GitstoreError):
    """A facility the request needs is not configured on this store."""


class Damaged(Unavailable):
    """A repository whose ref or objects are corrupt on disk; `repository` names it and
    `damage` says what is wrong (the message holds both)."""

    def __init__(self, repository: str, damage: str) -> None:
        super().__init__(
            f"repository {repository} is damaged: {damage}; restore it from a backup or a "
            "clone (docs/security.md)",
            path=repository,
        )
        self.repository = repository
        self.damage = damage


class Busy(Unavailable):
    """Every slot for waiting requests (blocking queries, event streams) of this process is
    taken; `retry_after` seconds is a fair wait before asking again."""

    def __init__(self, message: str, *, retry_after: int, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class DeadlineExceeded(Unavailable):
    """A request still running at its deadline: `seconds` allowed by the limit named `limit`
    (`gitstore.limits`); `retry_after` seconds is a fair wait before asking again.

    Raised only at the steps of a long operation, and for a write only before its commit: a
    write cut by its deadline has written nothing.
    """

    def __init__(
        self, message: str, *, limit: str, seconds: float, retry_after: int, **fields: Any
    ) -> None:
        super().__init__(message, **fields)
        self.limit = limit
        self.seconds = seconds
        self.retry_after = retry_after
