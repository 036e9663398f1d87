"""`/git/<repository>/...`: git smart HTTP (`git clone`, `fetch`, `push`) of the store.

Each request runs the real `git http-backend` as a CGI program with the store root as its
project root; this module only translates between WSGI and CGI. Only the store's repositories
(`catalog.git`, `environments/<id>.git`) are reachable: the path is checked before git sees it.

A push (`git-receive-pack`) moves refs through git itself, so the repository's pre-receive hook
(the GitOps gate) decides what is accepted, and git takes the same ref lock file as our own
writers. Who may clone and push is decided with every other route in `gitstore.api.auth`; the
authenticated user reaches git as REMOTE_USER.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import posixpath
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from flask import Blueprint, Response, current_app, g, request

from gitstore.api.errors import error_response
from gitstore.errors import NotFound

log = logging.getLogger("gitstore.api.git")

bp = Blueprint("git_http", __name__)

_PATH = re.compile(r"^(catalog\.git|environments/[1-9][0-9]{0,17}\.git)(/[A-Za-z0-9._/-]+)$")
_CHUNK = 64 * 1024
RECEIVE_PACK = "git-receive-pack"
#: Request headers git http-backend reads (as HTTP_* CGI variables).
_PASSED_HEADERS = ("Content-Encoding", "Git-Protocol")
#: CGI response headers that must not be copied into the WSGI response.
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "status"}


def split_path(subpath: str) -> tuple[str, str]:
    """`environments/1.git/info/refs` -> (`environments/1.git`, `/info/refs`); NotFound else.

    The rest is normalised (`/./x`, `a//b`, `a/../x` -> `/x`, `a/b`, `/x`): access is decided on
    this form and git is given this form, so no spelling of a path reaches git as one service
    while being authorised as another.
    """
    match = _PATH.match(subpath)
    rest = posixpath.normpath(match.group(2)) if match else ""
    if match is None or not rest.startswith("/") or rest.startswith(("/..", "//")):
        raise NotFound(
            f"no git repository at /git/{subpath}: use /git/catalog.git or "
            "/git/environments/<id>.git"
        )
    return match.group(1), "" if rest == "/" else rest


def is_push(rest: str, services: list[str]) -> bool:
    """Whether a request (normalised `rest`, its `service` parameters) is part of a push."""
    return RECEIVE_PACK in rest.split("/") or RECEIVE_PACK in services


@bp.route("/git/<path:subpath>", methods=["GET", "POST"])
def git(subpath: str):
    name, rest = split_path(subpath)
    store = current_app.extensions["gitstore"]
    repo_path = store.gitops.repository_path(name)
    env = _cgi_environ(store.root, repo_path, name + rest)
    if request.method == "POST" and rest == "/" + RECEIVE_PACK:
        return _push(store.gitops.admit_push(name), env)
    if rest == "/info/refs" and request.args.get("service") == RECEIVE_PACK:
        status, headers, answer = _run_to_end(env, b"")
        if status is None:
            return error_response(502, "git http-backend produced no response")
        answer = store.gitops.advertise_for_push(name, answer)
        return Response(answer, status=status, headers=headers)
    return _run_backend(env)


def _push(admission, env: dict[str, str]) -> Response:
    """A push: the whole request first, then git under the repository's write queue, then
    the answer (see `gitstore.gitops.pushes`: the queue is held until git has answered)."""
    body = request.get_data(cache=False)
    compressed = request.headers.get("Content-Encoding", "identity") != "identity"
    with admission.turn():
        # a compressed request is queued but not re-aimed (git's client never sends one)
        body_for_git, extra = (body, {}) if compressed else admission.prepare(body)
        env = {**env, **extra, "CONTENT_LENGTH": str(len(body_for_git))}
        status, headers, answer = _run_to_end(env, body_for_git)
        if status is None:
            return error_response(502, "git http-backend produced no response")
        answer = admission.finish(answer)
    return Response(answer, status=status, headers=headers)


def _cgi_environ(root: Path, repo_path: Path, subpath: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_PROJECT_ROOT=str(Path(root).resolve()),
        GIT_HTTP_EXPORT_ALL="1",
        PATH_INFO=f"/{subpath}",
        QUERY_STRING=request.query_string.decode("latin-1"),
        REQUEST_METHOD=request.method,
        CONTENT_TYPE=request.content_type or "",
        REMOTE_ADDR=request.remote_addr or "",
        SERVER_PROTOCOL=request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
    )
    user = getattr(g, "user", None)
    if user:
        env["REMOTE_USER"] = str(user)
    if request.content_length is not None:
        env["CONTENT_LENGTH"] = str(request.content_length)
    for header in _PASSED_HEADERS:
        if request.headers.get(header):
            env["HTTP_" + header.upper().replace("-", "_")] = request.headers[header]
    settings = {
        "http.receivepack": "true",  # pushes are allowed; the gate and access rules decide
        "core.hooksPath": str(Path(repo_path).resolve() / "hooks"),  # never bypass the gate
        "receive.fsckObjects": "true",
    }
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for index, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{index}"], env[f"GIT_CONFIG_VALUE_{index}"] = key, value
    return env


def _run_backend(env: dict[str, str]) -> Response:
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _finish when the body ends
    proc = subprocess.Popen(
        ["git", "http-backend"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
    )
    pump = threading.Thread(target=_pump, args=(request.stream, proc.stdin), daemon=True)
    pump.start()
    status, headers = _read_headers(proc.stdout)
    if status is None:
        _finish(proc, errors)
        return error_response(502, "git http-backend produced no response")
    return Response(_body(proc, errors), status=status, headers=headers, direct_passthrough=True)


def _run_to_end(env: dict[str, str], body: bytes):
    """Run git http-backend on a whole request; its status, headers and whole answer."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            ["git", "http-backend"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        pump = threading.Thread(target=_pump, args=(io.BytesIO(body), proc.stdin), daemon=True)
        pump.start()
        status, headers = _read_headers(proc.stdout)
        answer = proc.stdout.read()
        pump.join()
        _finish(proc, errors)
    return status, headers, answer


def _pump(source: IO[bytes], sink: IO[bytes]) -> None:
    """Copy the request body into git's stdin (a thread: git may answer while reading)."""
    try:
        while chunk := source.read(_CHUNK):
            sink.write(chunk)
    except OSError:
        pass  # git stopped reading (it failed, and will say so on stdout)
    finally:
        with contextlib.suppress(OSError):
            sink.close()


def _read_headers(stdout: IO[bytes]) -> tuple[int | None, list[tuple[str, str]]]:
    status: int | None = None
    headers: list[tuple[str, str]] = []
    while line := stdout.readline():
        text = line.decode("latin-1").rstrip("\r\n")
        if not text:
            return status or 200, headers
        name, _, value = text.partition(":")
        if name.strip().lower() == "status":
            status = int(value.split()[0])
        elif name.strip().lower() not in _HOP_BY_HOP:
            headers.append((name.strip(), value.strip()))
    return status, headers


def _body(proc: subprocess.Popen, errors: IO[bytes]) -> Iterator[bytes]:
    try:
        while chunk := proc.stdout.read1(_CHUNK):
            yield chunk
    finally:
        _finish(proc, errors)


def _finish(proc: subprocess.Popen, errors: IO[bytes]) -> None:
    proc.stdout.close()  # always: a pipe left to the garbage collector leaks until then
    if proc.poll() is None:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    errors.seek(0)
    message = errors.read().decode("utf-8", "replace").strip()
    errors.close()
    if message:
        log.warning("git http-backend: %s", message)
