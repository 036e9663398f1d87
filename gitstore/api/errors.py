"""The one place where errors become HTTP: a table from class to status, one JSON shape.

Every error body is `{"status": <code>, "message": "..."}` with an optional `"errors": [...]`.
"""

from __future__ import annotations

import logging

from flask import Flask, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from gitstore import errors
from gitstore.access.keystone import KEYSTONE

log = logging.getLogger("gitstore.api")

#: Most specific class first is not needed: the handler walks each error's MRO.
STATUS = {
    errors.UnknownRevision: 404,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.PreconditionFailed: 412,
    errors.NotAllowed: 405,
    errors.ValidationFailed: 400,
    errors.UnknownPin: 422,
    errors.UnsupportedMediaType: 415,
    errors.Undecryptable: 422,
    errors.InvalidInput: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.TooManyRequests: 429,
    errors.Damaged: 503,
    errors.Busy: 503,
    errors.DeadlineExceeded: 503,
    errors.MisdirectedRequest: 421,
    errors.Unavailable: 503,
    errors.GitstoreError: 400,
}


def status_of(exc: errors.GitstoreError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_response(status: int, message: str, details: list | None = None, headers=None):
    body: dict = {"status": status, "message": message}
    if details:
        body["errors"] = details
    response = jsonify(body)
    response.status_code = status
    pairs = headers.items() if isinstance(headers, dict) else headers or ()
    for name, value in pairs:
        response.headers.add(name, value)
    return response


def _http_message(exc: HTTPException) -> str:
    """Werkzeug's generic texts replaced by ones that name the request."""
    default = type(exc).description
    if exc.description and exc.description != default:
        return exc.description
    where = f"{request.method} {request.path}"
    if exc.code == 413:
        return _too_large()
    if exc.code == 404:
        return f"no such route: {where} (see docs/api.md)"
    if exc.code == 405:
        allowed = ", ".join(sorted(getattr(exc, "valid_methods", None) or []))
        return f"method not allowed: {where}; this route allows {allowed}"
    return f"{exc.name}: {where}"


def _too_large() -> str:
    limit = request.max_content_length
    size = f"of {request.content_length} bytes " if request.content_length is not None else ""
    return (
        f"request body {size}is over the limit of {limit} bytes for {request.method} "
        f"{request.path} (body_bytes, or push_bytes for git; raise it in <root>/limits.yaml, "
        "see docs/security.md)"
    )


#: Asks an HTTP client for credentials (RFC 7617).
CHALLENGE = {"WWW-Authenticate": 'Basic realm="gitstore"'}


def _headers(exc: errors.GitstoreError) -> dict[str, str] | list[tuple[str, str]] | None:
    """The headers an error's own attributes call for."""
    if (
        isinstance(exc, errors.TooManyRequests | errors.Busy | errors.DeadlineExceeded)
        and exc.retry_after is not None
    ):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, errors.Unauthorized) and exc.challenge:
        return _challenges()
    return None


def _challenges() -> list[tuple[str, str]]:
    """Basic, and on a server that accepts Keystone tokens the challenge keystonemiddleware
    sends (`Keystone uri="<identity URL>"`), by which OpenStack clients find Keystone."""
    settings = current_app.config.get(KEYSTONE)
    uri = settings.challenge_uri() if settings is not None else None
    keystone = [("WWW-Authenticate", f'Keystone uri="{uri}"')] if uri else []
    return [*keystone, *CHALLENGE.items()]


def answer(exc: errors.GitstoreError):
    """The response of an expected failure: its status, its JSON shape, its headers."""
    return error_response(status_of(exc), exc.message, exc.errors or None, _headers(exc))


def register(app: Flask) -> None:
    app.register_error_handler(errors.GitstoreError, answer)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        response = error_response(exc.code or 500, _http_message(exc))
        valid_methods = getattr(exc, "valid_methods", None)  # a MethodNotAllowed's
        if exc.code == 405 and valid_methods:
            response.headers["Allow"] = ", ".join(sorted(valid_methods))
        return response

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        log.exception("internal error")
        return error_response(500, "internal error: this is a bug, please report it")
