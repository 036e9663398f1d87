"""The processes a server runs beside gunicorn's arbiter: the cluster coordinator, the mirror
poller, git maintenance; each ends with the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from gitstore import Store, logs
from gitstore.ops.maintenance import start_detached

#: Processes started next to gunicorn's arbiter (the coordinator, the poller): stopped with it.
_CHILDREN: list[subprocess.Popen] = []


def start_coordinator(root: Path, membership: dict) -> None:
    """The node's coordinator (it holds the leader lease and follows etcd) in its own process;
    it exits when this process (gunicorn's arbiter) is gone."""
    _start_child("coordinate", str(root), json.dumps(membership), str(os.getpid()))


def coordinate(root: str, membership: str, parent: str) -> None:
    """The coordinator process's body (`_start_child`)."""
    from gitstore.cluster.coordinator import run  # etcd's client: only in the coordinator

    _end_with_parent()
    logs.configure(logs.default_format())
    run(json.loads(membership), Path(root), int(parent))


def start_poller(root: Path, seconds: float) -> None:
    """Run the mirror poller in its own process (`_start_child`).

    Not a thread of the gunicorn arbiter: the arbiter forks workers, and a fork taken while the
    poller thread holds a lock (a cache's, logging's) would leave that lock held forever in the
    worker."""
    _start_child("poll_forever", str(root), str(seconds))


def poll_forever(root: str, seconds: str) -> None:
    """The poller process's body (`_start_child`)."""
    from gitstore.gitops.service import start_poller as poll

    _end_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))  # nothing of its own to finish
    poll(Store(root).gitops, float(seconds)).join()


def start_maintenance(root: Path) -> None:
    """Git maintenance of every repository, in one process per server (not a child of
    gunicorn's arbiter, which counts its children as workers), so workers never repack; in a
    cluster each member maintains its own copy. It ends with the server."""
    start_detached(root, os.getpid())


def stop_children() -> None:
    """Stop the processes `_start_child` started (gunicorn's `on_exit` hook calls it)."""
    for child in _CHILDREN:
        child.terminate()
    for child in _CHILDREN:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    _CHILDREN.clear()


def _start_child(entry: str, *args: str) -> None:
    """Run `gitstore.serve.children.<entry>(*args)` in a new interpreter next to gunicorn's
    arbiter.

    Not `multiprocessing`: the workers are forked from the arbiter, inherit its record of the
    child and try to join it when they exit (a traceback from every worker at each stop). The
    child is stopped by the arbiter's exit hook (`stop_children`) and, should the arbiter be
    killed, by the parent-death signal it asks for (`_end_with_parent`)."""
    code = f"import sys; from gitstore.serve.children import {entry}; {entry}(*sys.argv[1:])"
    _CHILDREN.append(subprocess.Popen([sys.executable, "-c", code, *args]))


def _end_with_parent() -> None:
    """SIGTERM this process when its parent dies (Linux's PR_SET_PDEATHSIG; elsewhere the
    coordinator still notices its parent is gone within a turn of its loop)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
