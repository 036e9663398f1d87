"""Every benchmark runs in its smoke mode and prints its ratio line, so none of them rots.

The benches start real gunicorn servers on tiny stores; they run at once (a few seconds each)
to keep this file quick. Only the exit status and the `RATIO <name>` line are checked: the
targets themselves are measured by hand (docs/performance.md), not by a timed test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
BENCHES = [
    "lookup",
    "flat",
    "writes",
    "push",
    "memory",
    "watch",
    "compare",
    "console",
    "limit",
    "docwrites",
    "cold",
    "scale_console",
    "scale_blast",
]


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    home = tmp_path_factory.mktemp("bench-home")
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("GIT_", "GITSTORE_"))
    }
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1")
    running = {
        name: subprocess.Popen(
            [sys.executable, str(PROJECT / "bench" / f"{name}.py"), "--smoke"],
            env=env,
            cwd=PROJECT,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in BENCHES
    }
    done = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=120)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return done


@pytest.mark.parametrize("name", BENCHES)
def test_the_bench_runs_and_prints_its_ratio(smoke_runs, name):
    run = smoke_runs[name]
    assert run.returncode == 0, f"{name}: {run.stdout}\n{run.stderr[-3000:]}"
    assert re.search(rf"^RATIO {name} \d+\.\d+ \(target .+\) ", run.stdout, re.M), run.stdout
