"""Request parsing and response rendering shared by every blueprint.

Views parse with these helpers, call the facade and render with `served`: the version headers,
the ETag derived from the answer's inputs, `If-None-Match` and caching rules live here once.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, current_app, g, has_request_context, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.http import http_date, parse_etags

from gitstore import logs
from gitstore.answers import Answer, Encoder
from gitstore.api import request_state
from gitstore.backend.repository import Author
from gitstore.errors import InvalidInput, PreconditionFailed, UnsupportedMediaType
from gitstore.limits import check_plain_data
from gitstore.names import is_commit_id, parse_flag
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore import Store

IMMUTABLE = "public, max-age=31536000, immutable"
MOVING = "public, max-age=5"
#: Where the app factory keeps the facade it serves.
STORE = "gitstore"
#: The parameters of a blocking query (gitstore/api/blocking.py): one answer, one ETag, whatever
#: index the client waited from.
_BLOCKING = frozenset({"index", "wait"})
#: The request headers `make_conditional` reads (for 304 and 412; an `If-Range` only with a
#: `Range`): without any of them it would only set Content-Length, which the response does.
_CONDITIONAL = (
    "HTTP_IF_NONE_MATCH",
    "HTTP_IF_MATCH",
    "HTTP_IF_MODIFIED_SINCE",
    "HTTP_IF_UNMODIFIED_SINCE",
    "HTTP_RANGE",
)


def app_store() -> Store:
    """The store this app serves (the one facade every view calls)."""
    return current_app.extensions[STORE]


def request_body(cache: bool = True) -> bytes:
    """The whole request body, or a 413 when it is over the request's `max_content_length`.

    A declared length over the limit is refused before a byte is read (Werkzeug). A body with
    no declared length (`Transfer-Encoding: chunked`) is read up to the limit, where Werkzeug
    stops without a word: what came so far would be taken for the whole body, and a key write
    cut at the limit was committed. One byte more from the server's own stream tells.
    """
    body = request.get_data(cache=cache)
    limit = request.max_content_length
    filled = limit is not None and request.content_length is None and len(body) >= limit
    if filled and request.environ["wsgi.input"].read(1):
        raise RequestEntityTooLarge()
    return body


#: The most values a JSON body may hold, counted by its commas and brackets before it is
#: parsed (an upper bound: commas inside strings count too). Twenty documents at the key limit;
#: a body of `[{},{},...]` at the size limit parses into millions of objects, which take a
#: worker's memory and seconds of its CPU.
MAX_BODY_VALUES = 1_000_000


def _check_values(raw: bytes) -> None:
    counted = raw.count(b",") + raw.count(b"{") + raw.count(b"[")
    if counted > MAX_BODY_VALUES:
        raise InvalidInput(
            f"request body holds more than {MAX_BODY_VALUES} values (counted by its commas and "
            "brackets); send fewer documents per request"
        )


def json_body() -> Any:
    """The request body parsed as JSON; malformed or missing JSON is a 400, a body not sent
    as `application/json` a 415 (a cross-site `text/plain` form must not write)."""
    raw = request_body()
    if not raw.strip():
        raise InvalidInput("request body is empty; a JSON document is expected")
    if request.mimetype != "application/json":
        raise UnsupportedMediaType(
            "request body must be sent with Content-Type: application/json, not "
            f"{request.content_type or 'no Content-Type'}",
            key="Content-Type",
        )
    _check_values(raw)
    try:
        body = json.loads(raw, object_pairs_hook=_unrepeated)
    except _Repeated as exc:
        raise InvalidInput(f"request body is refused: {exc}", key=exc.key) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise InvalidInput("request body is not valid JSON: nested too deeply") from exc
    return check_plain_data(body)


class _Repeated(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} is repeated in one object")
        self.key = key


def _unrepeated(pairs: list[tuple[str, Any]]) -> dict:
    """An object of the body; a key given twice is refused (JSON would keep the last value
    without a word, as YAML would: documents people write are read strictly)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return found


#: The query flags (read with `flag`, which judges their repetitions by meaning: `?a&a=yes`).
FLAGS = frozenset(
    {"all", "effective", "explain", "fetch_related", "only_latest", "reveal", "show_lookup"}
    | {"verify", "fragment"}
)


def flag(name: str) -> bool:
    """A query flag; every occurrence must be valid and they must agree.

    A bare `?name` is on; `?name=` with nothing after the `=` is refused: it reads as a value
    left out by mistake (a template's empty variable), and guessing either way is wrong.
    """
    if name not in FLAGS:
        raise KeyError(f"{name!r} is no flag of FLAGS")  # a new flag: list it there
    args = request.args
    if name not in args:
        return False  # absent (`?name=` would be present, as "")
    given = args.getlist(name)
    if f"{name}=".encode() in request.query_string.split(b"&"):
        raise InvalidInput(
            f"flag {name!r} has an empty value: write ?{name} or ?{name}=1 (or 0)", key=name
        )
    values = {parse_flag(raw, name) for raw in given}
    if len(values) > 1:
        raise InvalidInput(f"flag {name!r} is given more than once with different values", key=name)
    return values.pop() if values else False


def version_arg(name: str = "version") -> str | None:
    """A version given in the query: refused when empty, and when it holds a space or a
    control character, which no revision holds (docs/openapi.yaml's pattern says the same)."""
    args = request.args
    value = args.get(name) if name in args else None  # a missing key's get raises inside
    if value is not None and not value.strip():
        raise InvalidInput(f"query parameter {name!r} is empty", key=name)
    if value is not None and _SPACE_OR_CONTROL.search(value):
        raise InvalidInput(
            f"query parameter {name!r} holds a space or a control character: {value!r}", key=name
        )
    return value


#: Where a read that spans environments sends a client that wants a version.
ONE_ENVIRONMENT = "; read one environment with /api/v1/config/environments/<id>?version=..."


def no_version(what: str, instead: str = "") -> None:
    """Refuse a `version` on a read that has none: `what` says why (it spans repositories, or
    is not kept in a commit), `instead` where a versioned read is."""
    if version_arg() is not None:
        raise InvalidInput(f"{what} and takes no 'version'{instead}", key="version")


#: What `str.isspace` holds for (`\s` of a str pattern), control characters and DEL.
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")


def author() -> Author | None:
    """The author of a write: the authenticated user when there is one."""
    user = getattr(g, "user", None)
    if user is None:
        return None
    return Author(user, f"{user}@gitstore")


def may_reveal(env_id: int | None) -> bool:
    """Whether the caller may see the secrets of environment `env_id` (None: the catalog's)
    in plain text: it holds the `secrets` role there, or the store is open (no access file)."""
    identity = getattr(g, "identity", None)
    if identity is not None:
        return identity.has("secrets", env_id)
    access = app_store().access
    return access is None or access.policy() is None


def bind_reveal_rule(store: Store) -> None:
    """Let the secrets service ask, during each request, whether its caller may reveal an
    environment's secrets (`may_reveal`): writes compare a sent secret with the stored one
    only for such callers, so nobody else can test guesses. Outside a request (a background
    job) the rule the store was opened with decides: nobody, unless it named one."""
    outside = store.secrets.caller

    def rule(env_id: int | None) -> bool:
        return may_reveal(env_id) if has_request_context() else outside(env_id)

    store.secrets.bind_caller(rule)


def bound_requests(app: Flask) -> None:
    """Refuse what no route reads before anything (the access check, a form's CSRF token)
    parses it: a parameter that contradicts itself, a form of too many fields."""
    app.before_request(_refuse_contradictions)
    app.before_request(_bound_form)
    app.config["MAX_FORM_PARTS"] = MAX_FORM_FIELDS  # Werkzeug's own bound, for multipart


#: The most fields a form may hold (the console's hold a dozen). Werkzeug parses a whole
#: urlencoded body at once: millions of empty fields (`a=&a=&...`) took a worker's memory and
#: seconds of its CPU, from anyone, before the session or CSRF check could refuse it.
MAX_FORM_FIELDS = 200


def _bound_form() -> None:
    """Refuse a form of more than MAX_FORM_FIELDS fields before anything parses it (its body
    is read once, bounded by body_bytes, and kept: the form is parsed from it)."""
    if request.mimetype == "application/x-www-form-urlencoded":
        separator = b"&"
    elif request.mimetype == "multipart/form-data":
        separator = b"--" + request.mimetype_params.get("boundary", "").encode()
    else:
        return
    if request_body().count(separator) > MAX_FORM_FIELDS:
        raise InvalidInput(
            f"a form holds at most {MAX_FORM_FIELDS} fields; this one holds more", key="form"
        )


#: Query parameters a route reads as a list (repeated or comma-separated): diff scopes, git's
#: service, the graph routes' names and ids. Any other is read once.
REPEATABLE = frozenset(
    {"levels", "path", "service", "include", "clusters_ids", "plugins_ids", "releases_ids"}
    | {"graph_types", "tasks", "remove"}
)


def _refuse_contradictions() -> None:
    """A parameter read once and given twice with different values is a 400 naming it: the
    first one won without a word (`version=1&version=2` read version 1). Flags are `flag`'s."""
    query = request.query_string
    if b"&" not in query or query.count(b"&") + 1 == len(request.args):
        return  # no name given twice (`args` holds each name once)
    for name, values in request.args.lists():
        if len(set(values)) > 1 and name not in REPEATABLE and name not in FLAGS:
            raise InvalidInput(
                f"query parameter {name!r} is given more than once with different values",
                key=name,
            )


def to_json(data: Any) -> bytes:
    return current_app.json.dumps(data).encode("utf-8")


def encoder_of(app: Flask) -> Encoder | None:
    """The `Encoder` giving the very bytes of `app.json.dumps` (`answers.py`): for Flask's
    default provider without sorted keys (fragments keep the entries' order); None for any
    other provider, whose answers are encoded whole, per request."""
    settings = _settings(app.json)
    return None if settings is None else Encoder(*settings)


def _settings(provider: Any) -> tuple | None:
    if (
        not isinstance(provider, DefaultJSONProvider)
        or type(provider).dumps is not DefaultJSONProvider.dumps
        or provider.sort_keys
    ):
        return None
    return provider.default, provider.ensure_ascii


def answer_of(result: Served) -> Answer:
    """`result` with its JSON bytes from the store's answers (`store.answers`: kept there for
    a shared answer), while the app's JSON provider still has the settings the store encodes
    with (`create_app` hands them over); else `to_json` of its data."""
    answers = app_store().answers
    if _settings(current_app.json) != answers.encoder.settings:
        return Answer(result, to_json(result.data))  # the provider was changed since
    return answers.of(result)


def served(result: Served, status: int = 200, *, weak: bool = False) -> Response:
    """A JSON response for a read, with version headers, ETag and conditional GET.

    `weak` marks the ETag weak (`W/"..."`): for documents whose bytes name the commit they were
    read at while the ETag follows only the data inputs (equal meaning, not equal bytes).
    """
    answer = answer_of(result)
    state = request_state.of(request.environ)
    if state is not None:
        state.answer = answer  # what the fast path keeps to give this answer again
    body = answer.body
    response = Response(body, status=status, mimetype="application/json")
    if result.commit:
        response.headers["X-Gitstore-Commit"] = result.commit
    if result.version is not None:
        response.headers["X-Gitstore-Version"] = str(result.version)
    if result.masked:
        response.headers["X-Gitstore-Masked"] = ",".join(result.masked)
    if request.method in ("GET", "HEAD") and status == 200:
        _conditional(response, result, body, weak)
    return response


def etag_of(path: str, args: list, result: Served, body: bytes | None = None) -> str:
    """The ETag of `result` read at `path` with query `args` (sorted pairs): from its inputs
    when it names them, else from its bytes. A blocking query's `index` and `wait` are not part
    of what is answered, so not of its tag either."""
    args = [(key, value) for key, value in args if key not in _BLOCKING]
    seed = repr((path, args, result.inputs)) if result.inputs else repr((path, body))
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def if_match() -> str | None:
    """The one entity tag or version of an `If-Match` header (quotes and `W/` removed); None
    without the header or for `*` (any current document)."""
    raw = request.headers.get("If-Match")
    if raw is None or raw.strip() == "*":
        return None
    tokens = [t.strip() for t in raw.split(",") if t.strip()]
    if len(tokens) != 1:
        raise InvalidInput(
            "If-Match must name one ETag or version (X-Gitstore-Commit or X-Gitstore-Version "
            "of a read)",
            key="If-Match",
        )
    token = tokens[0].removeprefix("W/").strip('"').strip()
    if not token:
        raise InvalidInput("If-Match is empty", key="If-Match")
    return token


def _conditional(response: Response, result: Served, body: bytes, weak: bool = False) -> None:
    args = sorted(request.args.items(multi=True))
    response.set_etag(etag_of(request.path, args, result, body), weak=weak)
    response.headers["Cache-Control"] = _cache_control()
    response.headers["Date"] = date_now()  # what make_conditional would add, made once a second
    environ = request.environ
    if "HTTP_IF_MATCH" in environ:
        _check_if_match(response.get_etag())
        # Werkzeug compares `If-Match` itself and fails `*` (RFC 9110: any current document).
        environ = {key: value for key, value in environ.items() if key != "HTTP_IF_MATCH"}
    if any(name in environ for name in _CONDITIONAL):
        response.make_conditional(environ)


def _check_if_match(etag: tuple[str, bool] | tuple[None, None]) -> None:
    """`If-Match` on a read: `*` holds (the document exists), else one of its tags must be the
    answer's, compared strongly (RFC 9110 13.1.1: a weak tag never matches); otherwise a 412
    in the one error shape, not the document with a 412 status."""
    raw = request.headers["If-Match"]
    tags = parse_etags(raw)
    tag, weak = etag
    if tags.star_tag or (tag is not None and not weak and tags.is_strong(tag)):
        return
    raise PreconditionFailed(
        f"If-Match {raw!r} does not name this answer's ETag "
        f'{"W/" if weak else ""}"{tag}" (strong comparison: a weak ETag never matches)',
        key="If-Match",
    )


#: The `Date` header, formatted once a second, not once a request (email.utils' formatting was
#: a visible share of a cold lookup's CPU).
_DATE = logs.PerSecond(http_date)


def date_now() -> str:
    """The `Date` of an answer made now (the fast path dates its kept answers with it)."""
    return _DATE.text(int(time.time()))


def _cache_control() -> str:
    """Public caching for open reads; `private` once credentials are involved.

    A revealed secret must never sit in any cache, and an answer to an authenticated request
    must not be handed by a shared cache to someone else.
    """
    args, environ = request.args, request.environ
    if "reveal" in args:
        return "private, no-store"
    pinned = "version" in args and is_commit_id(args["version"].strip())
    rule = IMMUTABLE if pinned else MOVING
    signed_in = g.get("identity") is not None  # by any means, a console session cookie too
    authorised = "HTTP_AUTHORIZATION" in environ and request.authorization is not None
    if authorised or environ.get("HTTP_X_AUTH_TOKEN") or signed_in:
        rule = rule.replace("public", "private")
    return rule


def no_content() -> Response:
    return Response(status=204)


def written(result: Served, status: int = 204) -> Response:
    """A write's response: 204 with the new commit named in the headers."""
    response = Response(status=status)
    if result.commit:
        response.headers["X-Gitstore-Commit"] = result.commit
    if result.version is not None:
        response.headers["X-Gitstore-Version"] = str(result.version)
    return response
