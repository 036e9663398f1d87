"""`bench/scale.py --smoke` builds its two environments and prints ONE table with the rows of
every scale bench (its own, scale_blast, scale_console, scale_transactions) and its ratio line."""

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
    rows = [line for line in lines if line.startswith("| ")]
    for what in (
        "| the push gate over a 12-file push",
        "| blast radius: REST diff, global write inherited by every node",
        "| blast radius: commit page, global write inherited by every node",
        "| blast radius: edit preview, global write shadowed by every node",
        "| console: environment page, first page, warm",
        "| console: node page of a controller, HTML",
        "| console: node page DOMContentLoaded (Chromium) | not measured (--smoke) |",
        "| create 24 nodes, one POST each",
        "| create 24 nodes, one POST of a list | ",
        "| dry run of Newton's graph on 24 nodes",
        "| one node's task statuses",
        "| dry run refused by size",
    ):
        assert any(line.startswith(what) for line in rows), what
    # every row is (what, figure, target, met); smoke timings are noise, so not the verdicts
    assert all(line.rsplit("|", 2)[1].strip() in {"ok", "yes", "NO", "-"} for line in rows), rows
    assert any(line.startswith("RATIO scale = ") for line in lines)
