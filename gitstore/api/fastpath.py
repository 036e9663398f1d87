"""A WSGI-level answer for a repeated read of values: a warm lookup costs what gunicorn costs.

A warm effective-value GET went through Flask's request context, routing, four request hooks,
the view, the answer cache and the response object: several times what the server stack costs
to send the same bytes (docs/performance.md). Yet an answer of
`.../resources/<r>/values|overrides` follows from the request and three ids only: the head of
the environment, the head of the catalog and the parsed access file (whose grants decide 200
or 401/403). So the first answer of a request is made by the app as always, and how it was
given is kept in the store's answers (`store.answers.keep`: the `Answer` the app rendered,
whose data and bytes the store keeps anyway, with the status and the app's headers); the same
request is answered from it while those three are the same objects, with what the app adds
per request done here the same way: a fresh `X-Request-Id`, the `Date` of the second it is
answered in (a cache ages an answer by it), the request metrics and the request's log line
(`observe.answered`, naming the answer's commit). The fast path keeps no cache of its own.

A request it cannot answer goes to the app with the heads read here (`RequestState.heads`,
request_state.py): the values view reads a plain read of the head at them (and says so,
`read_at`), so a cold lookup reads the two refs once, not three times, and its answer is of
those heads whatever lands meanwhile.

What is never answered here (the app answers it, so every rule holds as it is written there):
anything but GET; a request with a conditional or range header (304, 412, 206); query
parameters other than `effective`, `show_lookup`, `key` and `version` (a reveal is audited per
request; a blocking query waits); a `version` other than a number or a full commit id (a branch
or a label moves while the heads compared stay the same); an answer other than 200; and
credentials the auth module does not call replayable (`auth.replayable`: which ones, and why,
are decided there only). Keys are the raw path, query string, Host and credential headers: a
request spelt differently is another entry.

The Hiera node document (`/api/v1/hiera/<env>/<node>`, which a Puppet master asks for at every
compile with the ETag of the one it has) is answered here too, its 200 and its 304 alike (the
`If-None-Match` header is part of the key). It also follows from the keyring (a revealed
document: the keyring's epoch is compared too), and every reveal is audited: a repeated request
records the reveal its answer made (`hiera.record_reveal` of `hiera.reveal_of(answer.served)`:
the same audit line the view's read writes) or, for a pinned document, calls the store's
`hiera.node_document` as the view does; only Flask, the access check, the ETag and the response
are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from flask import Flask

from gitstore.answers import Answer
from gitstore.api import auth, observe, request_state
from gitstore.api.http import STORE, date_now
from gitstore.api.request_state import RequestState
from gitstore.errors import GitstoreError
from gitstore.names import is_commit_id

#: The routes whose answers are kept: the values view's rule (the log line names it) and the
#: Hiera node document's.
ROUTE = "/api/v1/config/environments/<int:env_id>/<path:rest>"
HIERA_ROUTE = "/api/v1/hiera/<int:env_id>/<node>"
_PREFIX = "/api/v1/config/environments/"
_HIERA_PREFIX = "/api/v1/hiera/"
_QUERY_NAMES = frozenset({"effective", "show_lookup", "key", "version"})
_HIERA_QUERY_NAMES = frozenset({"version", "resources"})
#: Headers whose presence makes the app's own rules decide (conditional and range requests).
_APP_DECIDES = (
    "HTTP_IF_NONE_MATCH",
    "HTTP_IF_MATCH",
    "HTTP_IF_MODIFIED_SINCE",
    "HTTP_IF_UNMODIFIED_SINCE",
    "HTTP_IF_RANGE",
    "HTTP_RANGE",
)
StartResponse = Callable[..., Any]


@dataclass(frozen=True)
class _Replay:
    """How the app answered a request (kept in the store's answers, `Answers.keep`): its
    answer with the bytes, and what else the response followed from."""

    heads: tuple[str | None, str | None]
    policy: Any  # the parsed access file it was authorised under (compared by identity)
    answer: Answer  # the data and its bytes; the commit of the log line, what a reveal audits
    status: str
    #: The app's headers but X-Request-Id, made per request: those that follow from the answer
    #: (commit, version, masked paths, length) and from the request (ETag, Cache-Control).
    headers: list[tuple[str, str]]
    env: int | None
    user: str | None
    route: str = ROUTE
    epoch: Any = None  # the keyring's epoch (a Hiera document only)
    #: Where `Date` is in `headers`: replaced by the second it is answered in (a cache ages an
    #: answer by it, and `max-age` counts from it).
    date_at: int | None = None
    #: A Hiera document's (env, node, version, resources, reveal, who): audited again per
    #: request, with the paths its answer revealed (`Hiera.reveal_of`).
    hiera_read: tuple | None = None

    @property
    def body(self) -> bytes:
        """A 200's answer; a 304 has none."""
        return self.answer.body if self.status.startswith("200 ") else b""


class FastPath:
    """WSGI middleware in front of the Flask app `app` (its `wsgi_app` is `inner`)."""

    def __init__(self, app: Flask, inner: Callable) -> None:
        self._inner = inner
        self._store = app.extensions[STORE]
        self._answers = self._store.answers  # no cache of its own: replays live there

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        key = _key(environ)
        if key is None:
            return self._inner(environ, start_response)
        try:
            heads, policy, epoch = self._ids(key)
        except GitstoreError:
            return self._inner(environ, start_response)  # the app explains what is wrong
        if not auth.replayable(environ, policy, self._store.failures):
            return self._inner(environ, start_response)  # the app checks these credentials
        kept = self._answers.replay(key)
        if (
            kept is not None
            and kept.heads == heads
            and kept.policy is policy
            and kept.epoch == epoch
            and self._read_again(kept)
        ):
            return _replay(kept, environ, start_response, started)
        return self._fill(key, (heads, policy, epoch), environ, start_response)

    def _ids(self, key: tuple) -> tuple:
        """What an answer to `key` follows from besides the request: the heads, the parsed
        access file and, for a Hiera document, the keyring's epoch."""
        return (self._heads(key[0]), *self._policy_and_epoch(key))

    def _policy_and_epoch(self, key: tuple) -> tuple:
        policy = self._store.access.policy()
        epoch = self._store.secrets.keys_epoch() if key[1].startswith(_HIERA_PREFIX) else None
        return policy, epoch

    def _heads(self, env_id: int) -> tuple[str | None, str | None]:
        """What `config.heads` reads (the environment's head, the catalog's), without its
        checks that both repositories exist (two stats per request): an environment deleted
        since reads no head, and an answer is kept only for two heads (`_fill`), so it goes
        to the app, which answers 404. A ref is still read per request: a push is seen at once."""
        return self._store.repos.remembered_heads(env_id)

    def _read_again(self, kept: _Replay) -> bool:
        """A Hiera document's reveal is audited per request. At the head (no pin) the answer
        is the document of the heads and keyring epoch just compared, so the reveal it made
        is recorded again as it is; a pinned document is read again through the store (cached:
        what the view does), which audits it; False (the app answers) if that read fails."""
        if kept.hiera_read is None:
            return True
        env, node, version, resources, reveal, who = kept.hiera_read
        hiera = self._store.hiera
        if version is None:
            if reveal:
                hiera.record_reveal(env, who, *hiera.reveal_of(kept.answer.served))
            return True
        try:
            hiera.node_document(env, node, version, resources, reveal=reveal, who=who)
        except GitstoreError:
            return False
        return True

    def _fill(
        self, key: tuple, ids: tuple, environ: dict, start_response: StartResponse
    ) -> Iterable[bytes]:
        """The app's answer, kept when it is a 200 made while the ids stayed the same."""
        captured: list = []
        state = RequestState(heads=ids[0] if None not in ids[0] else None)
        environ[request_state.KEY] = state

        def capture(status: str, headers: list, exc_info: Any = None) -> Callable:
            captured[:] = [status, headers, exc_info]
            return lambda data: None  # the app never writes through it (Flask returns bodies)

        result = self._inner(environ, capture)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers, exc_info = captured
        start_response(status, headers, exc_info) if exc_info else start_response(status, headers)
        kept = self._keeps(state, status, body) and None not in ids[0]
        if kept and self._still(ids, key, state.read_at is ids[0]):
            self._keep(key, ids, state, status, headers)
        return [body]

    @staticmethod
    def _keeps(state: RequestState, status: str, body: bytes) -> bool:
        """Whether the app's response is one to give again: a 200 of values or a Hiera
        document (or the latter's 304) that is the very answer `http.served` rendered."""
        answered, answer = state.answered, state.answer
        route = answered[0] if answered is not None else None
        if answer is None or not (route == ROUTE or (route == HIERA_ROUTE and state.hiera_read)):
            return False
        if status.startswith("200 "):
            return body == answer.body
        return route == HIERA_ROUTE and status.startswith("304 ")

    def _keep(
        self, key: tuple, ids: tuple, state: RequestState, status: str, headers: list
    ) -> None:
        kept = [(name, value) for name, value in headers if name != observe.REQUEST_ID]
        date_at = next((i for i, (name, _) in enumerate(kept) if name == "Date"), None)
        heads, policy, epoch = ids
        assert state.answered is not None and state.answer is not None  # as `_keeps` checked
        route, env, user = state.answered
        hiera_read = state.hiera_read if route == HIERA_ROUTE else None
        replay = _Replay(
            heads,
            policy,
            state.answer,
            status,
            kept,
            env,
            user,
            route,
            epoch,
            date_at=date_at,
            hiera_read=hiera_read,
        )
        self._answers.keep(key, replay, state.answer)

    def _still(self, ids: tuple, key: tuple, read_at_heads: bool) -> bool:
        """Whether the ids read before the app answered are still the current ones: a commit
        or an access-file change during the request must not be kept as the old state's. An
        answer the app read at the very heads read before (`read_at_heads`) is theirs
        whatever moved since: only the access file and the keyring are read again."""
        try:
            heads = ids[0] if read_at_heads else self._heads(key[0])
            policy, epoch = self._policy_and_epoch(key)
        except GitstoreError:
            return False
        return heads == ids[0] and policy is ids[1] and epoch == ids[2]


def _replay(
    kept: _Replay, environ: dict, start_response: StartResponse, started: float
) -> list[bytes]:
    request_id = observe.new_request_id(environ.get("HTTP_X_REQUEST_ID", ""))
    headers = [*kept.headers, (observe.REQUEST_ID, request_id)]
    if kept.date_at is not None:
        headers[kept.date_at] = ("Date", date_now())
    start_response(kept.status, headers)
    seconds = time.perf_counter() - started
    status, commit = int(kept.status[:3]), kept.answer.served.commit
    observe.answered("GET", kept.route, status, seconds, request_id, kept.env, commit, kept.user)
    return [kept.body]


def _key(environ: dict) -> tuple | None:
    """(env id, path, query, host, token headers, If-None-Match) of a request the fast path
    may answer."""
    if environ.get("REQUEST_METHOD") != "GET" or environ.get("SCRIPT_NAME"):
        return None
    path = environ.get("PATH_INFO", "")
    if path.startswith(_PREFIX):
        env_text, _, rest = path[len(_PREFIX) :].partition("/")
        names, revalidates = _QUERY_NAMES, False
        if "resources/" not in rest:
            return None
    elif path.startswith(_HIERA_PREFIX):
        env_text, _, rest = path[len(_HIERA_PREFIX) :].partition("/")
        names, revalidates = _HIERA_QUERY_NAMES, True
        if not rest or "/" in rest:
            return None
    else:
        return None
    if not (env_text.isascii() and env_text.isdigit() and len(env_text) <= 9):
        return None
    conditional = [name for name in _APP_DECIDES if name in environ]
    if conditional and (not revalidates or conditional != ["HTTP_IF_NONE_MATCH"]):
        return None
    query = environ.get("QUERY_STRING", "")
    if not _plain_query(query, names) or not _fixed_version(query):
        return None
    return (
        int(env_text),
        path,
        query,
        environ.get("HTTP_HOST"),
        environ.get("HTTP_AUTHORIZATION"),
        environ.get("HTTP_X_AUTH_TOKEN"),
        environ.get("HTTP_IF_NONE_MATCH"),
    )


def _fixed_version(query: str) -> bool:
    """Whether the `version` asked for, if any, names the same commit for as long as the heads
    compared are the same: a number (the N-th commit of main) or a full commit id. A branch or
    a label moves on its own, and `main~1` spelt otherwise than as digits is left to the app."""
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name == "version" and not (value.isdigit() or is_commit_id(value)):
            return False
    return True


def _plain_query(query: str, names: frozenset) -> bool:
    """Whether every parameter is one of `names`, spelt without escapes."""
    if not query:
        return True
    for part in query.split("&"):
        name = part.partition("=")[0]
        if name not in names:
            return False  # includes escaped names such as %72eveal, which the app decodes
    return True
