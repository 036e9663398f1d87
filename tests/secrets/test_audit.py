"""The reveal audit log: each line is what json.dumps writes for the reveal, also when repeated."""

from __future__ import annotations

import json
import time

import pytest

from gitstore.secrets.audit import AuditLog

REVEALS = [
    ("puppet", 1, "hiera node 3", "4f1c" * 10, ["resources.astute.nova.db_password"]),
    (None, None, "plan deploy", None, ["parameters.password", "parameters.keys.root"]),
    (
        "opérateur",
        12,
        "hiera node nœud-1",
        "a" * 40,
        [f"resources.r.k{i}.password" for i in range(60)],
    ),
    ("puppet", 1, "hiera node 3", "5e2d" * 10, ["resources.astute.nova.db_password"]),
    ("puppet", 1, "hiera node 3", "4f1c" * 10, ["resources.astute.nova.db_password"]),
]


def _expected(line: bytes, who, environment, what, commit, paths) -> bytes:
    stamp = json.loads(line)["time"]
    entry = {
        "time": stamp,
        "who": who or "(open store: no user)",
        "environment": environment,
        "what": what,
        "commit": commit,
        "paths": list(paths),
    }
    return (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")


@pytest.mark.parametrize("rounds", [1, 3])
def test_every_line_is_the_json_of_its_reveal(tmp_path, rounds):
    audit = AuditLog(tmp_path)
    before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for _ in range(rounds):
        for reveal in REVEALS:
            audit.record(*reveal)
    after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lines = audit.path.read_bytes().splitlines(keepends=True)
    assert len(lines) == rounds * len(REVEALS)
    for line, reveal in zip(lines, REVEALS * rounds, strict=True):
        assert line == _expected(line, *reveal)
        assert before <= json.loads(line)["time"] <= after
    assert [e["commit"] for e in audit.entries()[:5]] == [r[3] for r in REVEALS]
