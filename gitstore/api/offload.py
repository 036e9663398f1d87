"""Heavy reads (history, diff, explain) in helper processes of lower priority than the worker's.

A gevent worker that walks a long history itself, even yielding between steps, spends its
share of the CPU on the walk, and the kernel then lets its lookups wait: with walks on every
worker, a warm lookup's median grew tens of times (bench/deadlines.py). Walks in processes of
their own at nice 10 leave the workers' share to the lookups. Each worker keeps
`heavy_requests` helpers (its turns, `deadlines.py`), started at its first heavy requests (a
worker that gets none costs none); a helper serves one call at a time and exits when its
worker does (its stdin closes).

A call names a service of the `Store` and one of its methods; the helper runs it on a store of
its own with the request's deadline, and answers the result (a `Served`) or the error. A helper
that has not answered `GRACE` after the deadline (in a step that does not check it) leaves its
request answered 503, and is left to finish (it stays warm) unless it is stuck (`STUCK`).
`gitstore serve` turns this on (`OFFLOAD_HEAVY`); elsewhere (tests, `create_app` by hand) heavy
reads run in the request.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, current_app

from gitstore import Store, limits, logs
from gitstore.api.http import app_store
from gitstore.deadlines import Deadline
from gitstore.errors import GitstoreError

#: App config key: run heavy reads in helper processes (`gitstore serve` sets it).
OFFLOAD_HEAVY = "GITSTORE_OFFLOAD_HEAVY"
#: A helper's niceness: below the workers, which answer the lookups.
NICENESS = 10
#: Seconds a helper may take past the deadline before its request is answered 503 anyway.
GRACE = 0.5
#: Seconds more before a helper that has still not answered is killed.
STUCK = 60
_LIMITS_ENV = "GITSTORE_OFFLOAD_LIMITS"
_HEADER = struct.Struct("!I")
_HELPERS = "gitstore.helpers"
#: A helper's program (not `-m` of this module, which the package has imported already).
_ENTRY = f"import sys; from {__name__} import serve_calls; serve_calls(sys.argv[1])"


def register(app: Flask, root: str, count: int) -> None:
    """Give `app` `count` helper processes for its heavy reads, if its config asks for them."""
    if app.config.get(OFFLOAD_HEAVY):
        app.extensions[_HELPERS] = Helpers(root, app.config.get("GITSTORE_LIMITS"), count)


def heavy_service(name: str) -> Any:
    """The store's service `name` for a heavy read: its stand-in whose methods run in a helper
    process when the app has helpers, else the service itself."""
    helpers = current_app.extensions.get(_HELPERS)
    return getattr(app_store(), name) if helpers is None else helpers.service(name)


class Helpers:
    """The helper processes of one worker process (made after gunicorn forked it)."""

    def __init__(self, root: str, overrides: dict | None, count: int) -> None:
        self.root = root
        self.overrides = overrides or {}
        self.count = count
        self._idle: list[_Helper] = []
        self._lock = threading.Lock()  # gevent's in a worker: held for no I/O
        self._pid = os.getpid()

    def start(self) -> None:
        """Start every helper now (otherwise each starts when a call first needs it)."""
        for _ in range(self.count):
            self._give_back(_Helper.start(self.root, self.overrides))

    def service(self, name: str) -> _Service:
        """A stand-in for the store's service `name` whose methods run in a helper."""
        return _Service(self, name)

    def call(self, service: str, method: str, args: tuple, kwargs: dict) -> Any:
        deadline: Deadline = kwargs.pop("deadline")
        helper = self._take()
        # The monotonic clock is the machine's: the helper's deadline ends when this one does.
        request = (service, method, args, kwargs, deadline.seconds, deadline.ends, deadline.limit)
        try:
            helper.send(request)
            answer = helper.answer(deadline.remaining() + GRACE)
        except _Stuck:
            threading.Thread(target=self._wait_for, args=(helper,), daemon=True).start()
            raise deadline.exceeded() from None
        self._give_back(helper)
        return _unpacked(answer)

    def _wait_for(self, helper: _Helper) -> None:
        """Let a helper that answers late (in a step that does not check the deadline, such as
        its first walk of a long chain) finish, dropping its answer, so that it stays warm;
        one that takes `STUCK` seconds more, or is gone, is killed."""
        try:
            helper.answer(STUCK)
        except _Stuck:
            helper.kill()
            return
        self._give_back(helper)

    def _take(self) -> _Helper:
        with self._lock:
            if os.getpid() != self._pid:  # a fork's copy: the parent's helpers are not ours
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop()
        return _Helper.start(self.root, self.overrides)

    def _give_back(self, helper: _Helper) -> None:
        """Keep `helper` for the next call; one more than `count` (started while a late one
        finished) is let go."""
        with self._lock:
            keep = len(self._idle) < self.count
            if keep:
                self._idle.append(helper)
        if not keep:
            helper.kill()


class _Service:
    def __init__(self, helpers: Helpers, name: str) -> None:
        self._helpers = helpers
        self._name = name

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._helpers.call(self._name, method, args, kwargs)

        return call


class _Stuck(Exception):
    """A helper that did not answer in time, or is gone."""


class _Helper:
    """One helper process, its pipes, and what it has answered so far."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None  # started with pipes
        self.process = process
        self._requests, self._answers = process.stdin, process.stdout
        self._received = bytearray()

    @classmethod
    def start(cls, root: str, overrides: dict) -> _Helper:
        env = {**os.environ, _LIMITS_ENV: json.dumps(overrides)}
        process = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            preexec_fn=_lower_priority,  # from its first instruction: its imports too
        )
        return cls(process)

    def send(self, request: tuple) -> None:
        try:
            _write(self._requests.fileno(), request)
        except OSError as exc:
            raise _Stuck() from exc

    def answer(self, seconds: float) -> tuple:
        """The answer to the last request, waited for at most `seconds` (what arrived by
        then is kept for the next wait)."""
        try:
            return _read(self._answers.fileno(), self._received, seconds)
        except (OSError, EOFError) as exc:
            raise _Stuck() from exc

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self._requests.close()
        self._answers.close()


def _lower_priority() -> None:
    os.nice(NICENESS)  # between fork and exec: one system call, no lock taken


def _write(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    data = _HEADER.pack(len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


def _read(fd: int, received: bytearray, seconds: float) -> Any:
    """The next message of `fd`, waiting (a green thread's wait in a gevent worker) at most
    `seconds` (`math.inf`: as long as it takes). Bytes are gathered in `received`, so a wait
    that runs out can be taken up again."""
    ends = time.monotonic() + seconds
    while True:
        if len(received) >= _HEADER.size:
            size = _HEADER.size + _HEADER.unpack_from(received)[0]
            if len(received) >= size:
                message = pickle.loads(received[_HEADER.size : size])
                del received[:size]
                return message
        left = ends - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], None if left == math.inf else left)[0]:
            raise _Stuck()
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise EOFError("the helper is gone")
        received += chunk


def _unpacked(answer: tuple) -> Any:
    kind, payload = answer
    if kind == "ok":
        return payload
    if kind == "error":
        module, name, message, fields = payload
        cls = getattr(importlib.import_module(module), name)
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.__dict__.update(fields)
        raise error
    raise RuntimeError(f"a heavy read failed in its helper process: {payload}")


# -- the helper process ----------------------------------------------------------------------
def serve_calls(root: str) -> None:
    """Answer calls on stdin until it closes."""
    logs.configure(os.environ.get(logs.FORMAT_ENV) or logs.default_format())  # the server's
    store = Store(root)
    limits.configure(root, json.loads(os.environ.get(_LIMITS_ENV) or "{}"))
    source, sink = sys.stdin.buffer.fileno(), sys.stdout.buffer.fileno()
    received = bytearray()
    while True:
        try:
            request = _read(source, received, math.inf)
        except (EOFError, _Stuck):
            return
        _write(sink, _answer(store, request))


def _answer(store: Store, request: tuple) -> tuple:
    service, method, args, kwargs, seconds, ends, limit = request
    began = None if seconds is None else ends - seconds
    kwargs["deadline"] = Deadline(seconds, limit, began=began)
    try:
        return "ok", getattr(getattr(store, service), method)(*args, **kwargs)
    except GitstoreError as exc:
        cls = type(exc)
        return "error", (cls.__module__, cls.__qualname__, exc.message, exc.__dict__)
    except Exception as exc:  # noqa: BLE001 - a bug: reported to the worker, which logs a 500
        return "bug", f"{type(exc).__name__}: {exc}"
