"""Helpers of the GitOps tests: a store with data, real git, a real gunicorn server."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from live_server import GUNICORN, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

__all__ = ["free_port", "isolated_env"]  # re-exported for the GitOps tests
ASTUTE_SCHEMA = {
    "type": "object",
    "properties": {"port": {"type": "integer"}, "region": {"type": "string"}},
}
GLOBAL_ASTUTE = "port: 8000\ndebug: false\nregion: one\n"


def git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the real git; output as text."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def commit_files(workdir: Path, files: dict[str, str | None], message: str = "change") -> str:
    """Write (None: delete) files in a clone, commit them, return the new commit id."""
    for path, text in files.items():
        target = workdir / path
        if text is None:
            git("rm", "-rq", path, cwd=workdir)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git("add", "-A", cwd=workdir)
    git("commit", "-qm", message, cwd=workdir)
    return git("rev-parse", "HEAD", cwd=workdir).stdout.strip()


def fill(store: Store) -> Store:
    """Component `fuel` (astute has a schema), environment 1 with hierarchy [nodes]:

    global astute {port, debug, region}; node 1 overrides debug; node 2 sets region (shadowing
    global's); node 3 has only globals; node 4 is in the inventory with no data of its own.
    """
    store.components.create(
        {
            "name": "fuel",
            "resource_definitions": [
                {"name": "astute", "schema": ASTUTE_SCHEMA},
                {"name": "globals"},
                {"name": "override/plugins"},
            ],
        }
    )
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    files = {
        "global/values/astute.yaml": GLOBAL_ASTUTE,
        "nodes/1/overrides/astute.yaml": "debug: true\n",
        "nodes/2/values/astute.yaml": "region: two\n",
        "nodes/3/values/globals.yaml": "x: 1\n",
        "inventory/nodes/4.yaml": "id: 4\nfqdn: node-4.example\n",
    }
    changes = ChangeSet("seed data")
    for path, text in files.items():
        changes.put(path, text.encode())
    store.environment_repo(1).update(lambda _: changes, Author("seed", "seed@example.com"))
    return store


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        stop_process(self.process)


def start_gunicorn(root: Path, workdir: Path) -> Server:
    """`GITSTORE_ROOT=<root> gunicorn -w 2 'gitstore.api:create_app()'` on a free port."""
    port = free_port()
    log = workdir / f"gunicorn-{port}.log"
    args = [
        str(GUNICORN),
        "-w",
        "2",
        "-b",
        f"127.0.0.1:{port}",
        "--no-control-socket",
        "gitstore.api:create_app()",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            env=isolated_env(workdir, GITSTORE_ROOT=str(root)),
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    wait_until_answers(process, server.url, log, probe="/api/v1/status")
    return server
