"""A stop reaching a worker before its own signal handlers are in still stops it
(gitstore/serve/workers.py).

Between the fork and the worker's handlers, the master's inherited handlers only queue a signal
in the worker's copy of the master's queue: the master's QUIT (Ctrl-C) was lost there, and the
master waited its 30 s graceful timeout before SIGKILL. A real gunicorn master with the real
worker class; a `post_fork` hook holds that window open for two seconds, so the stop lands in it
every time.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

SERVER = """
import time
from gunicorn.app.base import BaseApplication
from gitstore.serve.workers import BY_NAME, post_fork

def held_open(server, worker):
    post_fork(server, worker)
    print("forked", flush=True)
    time.sleep(2)  # the window between the fork and the worker's own handlers

class Server(BaseApplication):
    def load_config(self):
        for name, value in {"bind": "127.0.0.1:0", "workers": 1, "graceful_timeout": 30,
                            "worker_class": BY_NAME[WORKER_CLASS], "post_fork": held_open}.items():
            self.cfg.set(name, value)

    def load(self):
        return lambda environ, start_response: [b""]

Server().run()
"""
#: Well under the master's 30 s graceful timeout, well over the 2 s window and a stop.
STOPPED_WITHIN = 15


@pytest.mark.parametrize(
    "worker_class, stop",
    [("gevent", signal.SIGQUIT), ("gthread", signal.SIGTERM)],  # Ctrl-C's quick stop; a stop
    ids=["gevent-quit", "gthread-term"],
)
def test_a_stop_during_a_workers_start_stops_it(worker_class, stop):
    code = SERVER.replace("WORKER_CLASS", repr(worker_class))
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as master:
        try:
            assert master.stdout.readline().strip() == "forked"
            master.send_signal(stop)  # the master passes it on to its worker, inside the window
            began = time.monotonic()
            master.wait(timeout=STOPPED_WITHIN)
            assert time.monotonic() - began < STOPPED_WITHIN
        finally:
            master.kill()
