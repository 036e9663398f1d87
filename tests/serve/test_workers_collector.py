"""A serving worker sets the cyclic garbage collector up once its app is loaded
(gitstore/serve/workers.py).

Run in a child process: the collector's settings are process-wide, and the test process's own
must stay Python's defaults.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHILD = """
import gc, json, sys
from gunicorn.config import Config
from gitstore.serve.workers import BY_NAME, YOUNG_THRESHOLD

class App:
    def wsgi(self):
        self.held = [{"a": [1, 2]} for _ in range(1000)]  # what a loaded app keeps
        return lambda environ, start_response: [b""]

before = {"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}
cfg = Config()
worker = BY_NAME[sys.argv[1]](0, 0, [], App(), 30, cfg, None)
worker.load_wsgi()
print(json.dumps({
    "before": before,
    "threshold": gc.get_threshold(),
    "frozen": gc.get_freeze_count(),
    "young": YOUNG_THRESHOLD,
    "served": worker.wsgi({}, None),
}, default=lambda value: value.decode()))
"""


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_a_worker_freezes_its_loaded_app_and_collects_young_objects_less_often(worker_class):
    answer = subprocess.run(
        [sys.executable, "-c", CHILD, worker_class], capture_output=True, text=True, check=True
    )
    state = json.loads(answer.stdout)
    assert state["before"]["threshold"][0] < state["young"]
    assert state["threshold"][0] == state["young"] > 700
    assert state["threshold"][1:] == state["before"]["threshold"][1:]
    assert state["frozen"] > state["before"]["frozen"] + 1000  # the app's objects, at least
    assert state["served"] == [""]
