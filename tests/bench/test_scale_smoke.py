"""`bench/scale.py --smoke` builds its two environments, prints its table and its ratio line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def test_scale_bench_runs_its_rows(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSTORE_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    env["PYTHONPATH"] = str(PROJECT)
    done = subprocess.run(
        [
            sys.executable,
            str(PROJECT / "bench" / "scale.py"),
            "--smoke",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any(
        line.startswith("| bulk upload of 12 real-size nodes") and "1 commit" in line
        for line in lines
    )
    assert sum(line.startswith("| ") for line in lines) >= 9
    assert any(line.startswith("RATIO scale = ") for line in lines)
