"""`bench/hiera.py --smoke --floor`: the Hiera bench and its floor run, so neither rots.

It needs Puppet (installed by .ci/run). Only the exit status and the report's lines are checked:
the ratios themselves are measured by hand (docs/performance.md), not by a timed test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def test_the_hiera_bench_compiles_against_gitstore_and_the_floor(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITSTORE_")}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path))
    run = subprocess.run(
        [sys.executable, str(PROJECT / "bench" / "hiera.py"), "--smoke", "--floor"],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-3000:]}"
    assert "every backend returns the same values" in run.stdout
    assert re.search(
        r"^warm compile \(one Ruby process\), wall: .* ratio \d+\.\d+$", run.stdout, re.M
    )
    assert re.search(
        r"^floor: any HTTP backend on this server stack \d+\.\d+x yaml files; "
        r"gitstore \d+\.\d+x the floor",
        run.stdout,
        re.M,
    ), run.stdout
    assert not list(tmp_path.glob("gitstore-bench-hiera-*")), "the bench left its folder"
