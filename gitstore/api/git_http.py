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
import ctypes
import io
import logging
import os
import posixpath
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, cast

from flask import Blueprint, Response, g, request
from werkzeug.exceptions import ClientDisconnected

from gitstore import limits
from gitstore.api.errors import error_response
from gitstore.api.http import app_store, request_body
from gitstore.errors import InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_ID, parse_repository_name

log = logging.getLogger("gitstore.api.git")

bp = Blueprint("git_http", __name__)

_PATH = re.compile(rf"^(catalog\.git|environments/{ENVIRONMENT_ID}\.git)(/[A-Za-z0-9._/-]+)$")
_CHUNK = 64 * 1024
RECEIVE_PACK = "git-receive-pack"
SERVICES = ("git-upload-pack", RECEIVE_PACK)
#: Request headers git http-backend reads (as HTTP_* CGI variables).
_PASSED_HEADERS = ("Content-Encoding", "Git-Protocol")
#: CGI response headers that must not be copied into the WSGI response.
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "status"}
#: A git client that sends and takes nothing for this long is given up (its git killed). Long
#: enough for the push gate of a large push, which moves no byte while it runs.
IDLE_SECONDS = 300


def split_path(subpath: str) -> tuple[str, str]:
    """`environments/1.git/info/refs` -> (`environments/1.git`, `/info/refs`); NotFound else.

    The rest is normalised (`/./x`, `a//b`, `a/../x` -> `/x`, `a/b`, `/x`): access is decided on
    this form and git is given this form, so no spelling of a path reaches git as one service
    while being authorised as another.
    """
    match = _PATH.match(subpath)
    rest = posixpath.normpath(match.group(2)) if match else ""
    if (
        match is None
        or not _is_repository(match.group(1))
        or not rest.startswith("/")
        or rest.startswith(("/..", "//"))
    ):
        raise NotFound(
            f"no git repository at /git/{subpath}: use /git/catalog.git or "
            "/git/environments/<id>.git"
        )
    return match.group(1), "" if rest == "/" else rest


def _is_repository(name: str) -> bool:
    """Whether `name` is a repository name of the store (an environment id within its bound)."""
    try:
        parse_repository_name(name)
    except NotFound:
        return False
    return True


def _check_services(services: list[str]) -> None:
    """Only git's two smart services may be asked for: anything else would reach git, which
    answers in its own plain-text shape, not ours."""
    for service in services:
        if service not in SERVICES:
            raise InvalidInput(
                f"query parameter 'service' must be one of {', '.join(SERVICES)}, "
                f"not {service[:40]!r}",
                key="service",
            )


def is_push(rest: str, services: list[str]) -> bool:
    """Whether a request (normalised `rest`, its `service` parameters) is part of a push."""
    return RECEIVE_PACK in rest.split("/") or RECEIVE_PACK in services


@bp.route("/git/<path:subpath>", methods=["GET", "POST"])
def git(subpath: str):
    name, rest = split_path(subpath)
    _check_services(request.args.getlist("service"))
    # A push body may be larger than a REST body; it has its own limit (docs/security.md).
    request.max_content_length = limits.current().push_bytes
    request.stream  # noqa: B018 - a declared length over the limit is a 413 before git starts
    store = app_store()
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
    body = request_body(cache=False)
    expected = request.content_length
    if expected is not None and len(body) != expected:
        # The client went away mid-body: what came is not a push, and git must not see it.
        raise InvalidInput(f"the push's body ended after {len(body)} of {expected} bytes")
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
        GITSTORE_REQUEST_ID=g.get("request_id") or "",  # the push gate's log lines carry it
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
        "receive.maxInputSize": str(limits.current().push_bytes),  # also bounds chunked bodies
        "core.hooksPath": str(Path(repo_path).resolve() / "hooks"),  # never bypass the gate
        "receive.fsckObjects": "true",
        "receive.unpackLimit": "1",  # a push lands as the pack it came in, as a REST write does
    }
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for index, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{index}"], env[f"GIT_CONFIG_VALUE_{index}"] = key, value
    return env


def _run_backend(env: dict[str, str]) -> Response:
    backend = _Backend(env)
    expected = request.content_length
    threading.Thread(target=backend.pump, args=(request.stream, expected), daemon=True).start()
    threading.Thread(target=backend.watch, daemon=True).start()
    status, headers = _read_headers(backend.stdout)
    if status is None:
        backend.finish()
        return error_response(502, "git http-backend produced no response")
    return Response(backend.body(), status=status, headers=headers, direct_passthrough=True)


class _Backend:
    """One `git http-backend`, in a process group of its own so that it can be killed with
    everything it started (`git` runs the backend as a child, which runs receive-pack), and
    that dies with the worker (`_BACKEND_COMMAND`): a SIGKILLed worker used to leave it running.

    A client that vanishes mid-body leaves git waiting for bytes that never come (git 2.39's
    backend was seen spinning at 100 % CPU on the cut pipe until the server stopped): the body
    pump kills the group at once. A client that stalls, sending and taking nothing, is given
    `IDLE_SECONDS`, then the group is killed too.
    """

    def __init__(self, env: dict[str, str]) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by finish()
        self.proc = subprocess.Popen(
            _BACKEND_COMMAND,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            start_new_session=True,
            preexec_fn=_dies_with(os.getpid()),
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # started with pipes
        self.stdin = self.proc.stdin
        self.stdout = cast(io.BufferedReader, self.proc.stdout)  # buffered: it has `read1`
        self._moved = time.monotonic()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def pump(self, source: IO[bytes], expected: int | None) -> None:
        """Copy the request body into git's stdin (a thread: git may answer while reading)."""
        copied = 0
        try:
            while chunk := source.read(_CHUNK):
                self._moved = time.monotonic()
                try:
                    self.stdin.write(chunk)
                except OSError:
                    return  # git stopped reading (it failed, and will say so on stdout)
                copied += len(chunk)
        except (OSError, ClientDisconnected):
            copied = -1  # the client went away mid-body
        finally:
            with contextlib.suppress(OSError):
                self.stdin.close()
        if copied < 0 or (expected is not None and copied < expected):
            log.warning("git client vanished mid-request: killing git http-backend")
            self.kill()

    def watch(self) -> None:
        """Kill git once neither side has moved a byte for IDLE_SECONDS."""
        while self.proc.poll() is None:
            time.sleep(1)
            if time.monotonic() - self._moved > IDLE_SECONDS:
                log.warning("git client idle for %ss: killing git http-backend", IDLE_SECONDS)
                self.kill()
                return

    def body(self) -> Iterator[bytes]:
        try:
            while chunk := self.stdout.read1(_CHUNK):
                self._moved = time.monotonic()
                yield chunk
        finally:
            self.finish()

    def finish(self) -> None:
        self.stdout.close()  # always: a pipe left to the garbage collector leaks until then
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
                self.proc.wait()
        self.errors.seek(0)
        message = self.errors.read().decode("utf-8", "replace").strip()
        self.errors.close()
        if message:
            log.warning("git http-backend: %s", message)


#: The backend's command. A shell stands between the worker and git: the kernel sends it
#: SIGTERM when the worker dies (`_dies_with`), and its trap then SIGKILLs its whole process
#: group: `git http-backend`, the dashed program it runs, `receive-pack`/`upload-pack` and a
#: running hook. Parent-death signals reach one process only, and git's own clean-up on
#: SIGTERM leaves receive-pack and its hook running (measured with git 2.39). Stdin goes
#: through fd 3 because a shell gives a background job /dev/null as its stdin.
_BACKEND_COMMAND = [
    "/bin/sh",
    "-c",
    'trap "kill -KILL 0" TERM; exec 3<&0; git http-backend <&3 3<&- & exec 3<&-; wait $!',
]
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PRCTL = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)


def _dies_with(parent: int) -> Callable[[], None] | None:
    """What the backend's shell runs before exec: ask for SIGTERM when the thread that
    forked it exits. That thread lives as long as the worker: gevent forks from the one OS
    thread of the worker, gthread from a thread of its pool, which is kept until the worker
    stops. If the worker died before the request was made, the shell stops at once."""
    if _PRCTL is None:
        return None  # not Linux: nothing reaps a dead worker's git

    def arrange() -> None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return arrange


def _run_to_end(env: dict[str, str], body: bytes):
    """Run git http-backend on a whole request held in memory (a push, read whole before git
    starts, so a client that vanishes mid-body never reaches git); status, headers, answer."""
    backend = _Backend(env)
    pump = threading.Thread(target=backend.pump, args=(io.BytesIO(body), len(body)), daemon=True)
    pump.start()
    status, headers = _read_headers(backend.stdout)
    answer = backend.stdout.read()
    pump.join()
    backend.finish()
    return status, headers, answer


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
