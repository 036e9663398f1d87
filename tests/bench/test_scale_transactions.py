"""bench/scale_transactions.py on a few nodes: every row is measured against a real server,
the bulk create is one commit, the Newton dry run is recorded and the `wide` one refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def test_the_table_has_every_row(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSTORE_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    run = subprocess.run(
        [sys.executable, str(PROJECT / "bench" / "scale_transactions.py"), "--nodes", "24"],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    rows = {re.split(r"\s{2,}", line.strip())[0]: line for line in lines[1:]}
    assert "24 commits" in rows["create 24 nodes, one POST each"]
    assert "x" in rows["cost of the last 12 / the first 12"]
    assert "ms = " in rows["workers' CPU per create, the last 12 / the first 12"]
    assert "1 commit" in rows["create 24 nodes, one POST of a list"]
    assert "(recorded)" in rows["dry run of Newton's graph on 24 nodes"]
    assert "ms" in rows["one node's task statuses"]
    refused = rows["dry run refused by size (500 tasks, each waiting on 24 nodes)"]
    assert "(document_keys), worker RSS" in refused
