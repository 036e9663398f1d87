"""`HttpClient`: the `Client` of a gitstore server, over its REST API (standard library urllib).

Each operation of `Client` marked with a route (`cli.client.rest`) is derived from it here
(`_over_rest`); the few whose wire form is not a route's are written below. Errors come back
as the `gitstore.errors` class the server's status stands for, with the server's message, so a
command fails alike against a server and a local root.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import inspect
import json
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from email.message import Message
from typing import Any, Protocol

from cli.client import API_ROOT, V1_ROOT, Address, Client, LevelPairs, Route, operations, route_of
from gitstore import errors
from gitstore.configdb.values import Query
from gitstore.names import is_number
from gitstore.served import Served

#: Status code -> error class, the inverse of the server's table (gitstore/api/errors.py).
_ERRORS: dict[int, type[errors.GitstoreError]] = {
    400: errors.InvalidInput,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    405: errors.NotAllowed,
    409: errors.Conflict,
    412: errors.PreconditionFailed,
    413: errors.InvalidInput,
    422: errors.InvalidInput,
    429: errors.TooManyRequests,
    503: errors.Unavailable,
}


class Tokens(Protocol):
    """Tokens that can change during a run: a Keystone login's (`cli.keystone`)."""

    def token(self) -> str:
        """The token to send now (renewed before it expires)."""

    def new_token(self) -> str:
        """A token of a new login: the one sent was refused (revoked, or expired early)."""


class _AnswerBeforeBody:
    """A connection that stops sending when the server closes on it, so that the answer the
    server sent before closing is read: a 413 for a body over `body_bytes` comes before the
    body is read, and gunicorn then closes the socket while urllib is still sending."""

    def send(self, data: Any) -> None:
        # `getresponse` then reads the server's answer, or fails as unreachable without one
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().send(data)  # type: ignore[misc]


class _HTTPConnection(_AnswerBeforeBody, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_AnswerBeforeBody, http.client.HTTPSConnection):
    pass


_CONNECTIONS = {
    http.client.HTTPConnection: _HTTPConnection,
    http.client.HTTPSConnection: _HTTPSConnection,
}


class _ConnectionsThatReadEarlyAnswers:
    """A urllib handler that opens the connections above instead of http.client's own."""

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_CONNECTIONS.get(http_class, http_class), req, **kwargs)  # type: ignore[misc]


class _HTTPHandler(_ConnectionsThatReadEarlyAnswers, urllib.request.HTTPHandler):
    pass


class _HTTPSHandler(_ConnectionsThatReadEarlyAnswers, urllib.request.HTTPSHandler):
    pass


class HttpClient(Client):
    """A gitstore server at a base URL such as `http://127.0.0.1:8000`.

    With `tokens` each request carries the current one, and a request refused with 401 is sent
    once more with a new login's: a watch runs for days, longer than a token lives.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        tokens: Tokens | None = None,
        user: str | None = None,
        password: str | None = None,
        cacert: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.base = url.rstrip("/")
        self.timeout = timeout
        self._tokens = tokens
        self.headers = {
            "Accept": "application/json",
            "User-Agent": "gitstore-cli",
            "X-Gitstore-Client": "cli",  # the server counts our commits as source="cli"
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        elif user:
            pair = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {pair}"
        context = ssl.create_default_context(cafile=cacert) if cacert else None
        self._opener = urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler(context=context))

    # -- transport -------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        body: Any = None,
        root: str = API_ROOT,
        raw: bool = False,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[Any, Message]:
        """One request below the API root; the parsed JSON answer (None for 204; the text when
        `raw`) and headers."""
        url = self.base + root + path
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode("utf-8")
        extra = {
            **(headers or {}),
            **({} if body is None else {"Content-Type": "application/json"}),
        }
        return self._logged_in(lambda: self._send(method, url, data, extra, raw, timeout))

    def _logged_in(self, call: Callable[[], Any]) -> Any:
        """`call()`, made once more with a new login's token when the server refused the token
        (a 401 is answered before anything is done, so a write is not made twice)."""
        try:
            return call()
        except errors.Unauthorized:
            if self._tokens is None:
                raise
            self._tokens.new_token()
            return call()

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        current = {"Authorization": f"Bearer {self._tokens.token()}"} if self._tokens else {}
        return {**self.headers, **current, **(extra or {})}

    def _send(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: dict[str, str],
        raw: bool,
        timeout: float | None,
    ) -> tuple[Any, Message]:
        req = urllib.request.Request(url, data=data, headers=self._headers(headers), method=method)
        try:
            with self._opener.open(req, timeout=timeout or self.timeout) as response:
                data = response.read()
                answer = data.decode("utf-8", "replace") if raw else _parse(data, url)
                return answer, response.headers  # case-insensitive
        except urllib.error.HTTPError as exc:
            raise _error(exc) from None
        except urllib.error.URLError as exc:
            raise errors.Unavailable(f"cannot reach {self.base}: {exc.reason}") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise errors.Unavailable(f"cannot reach {self.base}: {exc}") from exc

    def _get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)[0]

    def _written(self, method: str, path: str, body: Any, expected: str | None = None) -> Served:
        condition = {"If-Match": f'"{expected}"'} if expected else None
        _, headers = self.request(method, path, body=body, headers=condition)
        version = headers.get("X-Gitstore-Version")
        return Served(
            None,
            headers.get("X-Gitstore-Commit"),
            int(version) if is_number(version) else None,
        )

    # -- the operations whose wire form is not a route's: headers, streams, a retry ----
    def read_served(
        self, env_id: int, pairs: LevelPairs, resource: str, kind: str, query: Query
    ) -> Served:
        params = {
            "effective": _on(query.effective),
            "show_lookup": _on(query.show_lookup),
            "key": query.key,
            "version": query.version,
            "reveal": _on(query.reveal),
        }
        path = document_path(env_id, pairs, resource, kind)
        data, headers = self.request("GET", path, params=params)
        version = headers.get("X-Gitstore-Version")
        masked = headers.get("X-Gitstore-Masked") or ""
        return Served(
            data,
            headers.get("X-Gitstore-Commit"),
            int(version) if is_number(version) else None,
            masked=tuple(p for p in masked.split(",") if p),
        )

    def watch_read(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        query: Query,
        index: str | None,
        wait: float,
    ) -> tuple[Any, str | None]:
        """A blocking query of a value (docs/watch.md): the answer and the head it was read at."""
        params = {
            "effective": _on(query.effective),
            "key": query.key,
            "index": index,
            "wait": f"{int(wait)}s",
        }
        data, headers = self.request(
            "GET",
            document_path(env_id, pairs, resource, "values"),
            params=params,
            timeout=wait + self.timeout,
        )
        return data, headers.get("X-Gitstore-Index")

    def events(self, env_id: int, since: str | None = None) -> Iterator[dict]:
        """The commit events of environment `env_id` after `since` (default: from now on)."""
        url = self.base + V1_ROOT + "/events?" + urllib.parse.urlencode({"env": int(env_id)})
        if since:
            url += "&" + urllib.parse.urlencode({"since": since})
        response = self._logged_in(lambda: self._open_stream(url))
        try:
            with response:
                yield from _sse_events(response)
        except (OSError, http.client.HTTPException) as exc:
            raise errors.Unavailable(f"cannot reach {self.base}: {exc}") from exc

    def _open_stream(self, url: str) -> Any:
        req = urllib.request.Request(url, headers=self._headers())
        try:
            return self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            raise _error(exc) from None
        except (OSError, http.client.HTTPException) as exc:
            raise errors.Unavailable(f"cannot reach {self.base}: {exc}") from exc

    def put(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        document: dict,
        expected: str | None = None,
    ) -> Served:
        path = document_path(env_id, pairs, resource, kind)
        return self._written("PUT", path, document, expected)

    def update_keys(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        op: str,
        paths: list[list[Any]],
        expected: str | None = None,
    ) -> Served:
        path = f"{document_path(env_id, pairs, resource, kind)}/keys/{_segment(op)}"
        return self._written("PATCH", path, paths, expected)

    def write_many(self, env_id: int, documents: dict[Address, dict], message: str) -> Served:
        items = [
            {
                "levels": [list(pair) for pair in pairs],
                "resource": resource,
                "kind": kind,
                "document": document,
            }
            for (pairs, resource, kind), document in documents.items()
        ]
        body = {"message": message, "documents": items}
        return self._written("PUT", f"/environments/{int(env_id)}/documents", body)

    def history(self, env_id, **params):
        return self.request("GET", f"/environments/{int(env_id)}/history", params=params)[0]

    def compare(self, env_a, env_b, **params):
        return self._get(f"/environments/{int(env_a)}/compare/{int(env_b)}", **params)

    def explain(self, env_id, pairs, resource, key=None, version=None):
        return self._get(
            document_path(env_id, pairs, resource, "values"),
            effective="1",
            explain="1",
            key=key,
            version=version,
        )

    def _v1(self, method: str, path: str, body: Any = None) -> Any:
        return self.request(method, path, body=body, root=V1_ROOT)[0]

    def cluster_tasks(self, env_id, graph_type, view="merged"):
        suffix = "" if view == "merged" else f"/{_segment(view)}"
        return self.request(
            "GET",
            f"/clusters/{int(env_id)}/deployment_tasks{suffix}",
            params={"graph_type": graph_type},
            root=V1_ROOT,
        )[0]

    def graph_dot(self, env_id, graph_type, **filters):
        params = {
            "graph_type": graph_type,
            "tasks": ",".join(filters.get("only") or []) or None,
            "parents_for": filters.get("parents_for"),
            "remove": ",".join(filters.get("remove") or []) or None,
        }
        return self.request(
            "GET",
            f"/clusters/{int(env_id)}/deploy_tasks/graph.gv",
            params=params,
            root=V1_ROOT,
            raw=True,
        )[0]

    def upload_role(self, name, content, description=None):
        """POST a new name; when it exists, PUT a new version of its latest."""
        body = {"content": content, **({} if description is None else {"description": description})}
        try:
            return self._v1("POST", "/roles", {"name": name, **body}), True
        except errors.Conflict:
            latest = next((r for r in self.list_roles(True) if r["name"] == name), None)
            if latest is None:
                raise
        entity = self._v1("PUT", f"/roles/{_segment(latest['uuid'])}", body)
        return entity, entity["version"] != latest["version"]


#: A path template's placeholder: `<name>` or `<int:name>` (`cli.client`).
_PLACEHOLDER = re.compile(r"<(?:(int):)?([A-Za-z_][A-Za-z0-9_]*)>")


def _over_rest(name: str, operation: Callable[..., Any]) -> Callable[..., Any]:
    """The HTTP form of one routed operation: its arguments bound by its own signature, then
    placed in the route's path, query and body."""
    route = route_of(operation)
    assert route is not None
    signature = inspect.signature(operation)

    def call(self: HttpClient, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        return self.request(
            route.method,
            _filled(route, values),
            params=_query(route, values),
            body=_body(route, values),
            root=route.root,
        )[0]

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{route.method} {route.root}{route.path} ({operation.__doc__ or name})"
    return call


def _filled(route: Route, values: dict[str, Any]) -> str:
    def one(match: re.Match) -> str:
        value = values[match.group(2)]
        return str(int(value)) if match.group(1) else _segment(value)

    return _PLACEHOLDER.sub(one, route.path)


def _wire(item: str) -> tuple[str, str]:
    """`wire=name` or `name`: (the name on the wire, the argument's)."""
    wire, _, name = item.partition("=")
    return wire, name or wire


def _query(route: Route, values: dict[str, Any]) -> dict[str, Any]:
    found = {}
    for wire, name in map(_wire, route.query):
        value = values[name]
        found[wire] = _on(value) if isinstance(value, bool) else value
    return found


def _body(route: Route, values: dict[str, Any]) -> Any:
    if route.body is None:
        return None
    if isinstance(route.body, str):
        return values[route.body]
    return {wire: values[name] for wire, name in map(_wire, route.body)}


for _name, _operation in operations().items():
    if route_of(_operation) is not None and _name not in vars(HttpClient):
        setattr(HttpClient, _name, _over_rest(_name, _operation))


def document_path(env_id: int, pairs: LevelPairs, resource: str, kind: str) -> str:
    """`/environments/1/nodes/2/resources/override/plugins/values`, each segment quoted."""
    levels = "".join(f"{_segment(level)}/{_segment(value)}/" for level, value in pairs)
    name = "/".join(_segment(part) for part in resource.split("/"))
    return f"/environments/{int(env_id)}/{levels}resources/{name}/{_segment(kind)}"


def _segment(text: str) -> str:
    return urllib.parse.quote(str(text), safe="")


def _on(flag: bool) -> str | None:
    return "1" if flag else None


def _parse(raw: bytes, url: str) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise errors.GitstoreError(f"{url} did not answer JSON: {raw[:80]!r}") from exc


def _error(exc: urllib.error.HTTPError) -> errors.GitstoreError:
    """The gitstore error a server's error answer stands for, with the server's message."""
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    finally:
        exc.close()
    message = body.get("message") if isinstance(body, dict) else None
    details = body.get("errors") if isinstance(body, dict) else None
    cls = _ERRORS.get(exc.code)
    if cls is errors.InvalidInput and details:
        cls = errors.ValidationFailed
    if cls is None:
        prefix = "server error" if exc.code >= 500 else "unexpected answer"
        return errors.GitstoreError(
            f"{prefix} {exc.code}: {message or exc.reason}",
            errors=details if isinstance(details, list) else None,
        )
    return cls(
        message or f"HTTP {exc.code} {exc.reason}",
        errors=details if isinstance(details, list) else None,
    )


def _sse_events(response) -> Iterator[dict]:
    """The `data:` JSON of each `event: commit` of a Server-Sent Events stream."""
    kind, data = None, []
    for raw in response:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line:
            if kind == "commit" and data:
                yield json.loads("\n".join(data))
            kind, data = None, []
