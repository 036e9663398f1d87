"""Build the stores of earlier formats that tests/ops/test_migrate.py migrates (run once).

Each fixture is made by the gitstore of a commit of this repository that wrote that format, run
from a `git archive` of it with this virtualenv, so it holds what that version really wrote:

    python tests/data/stores/make_fixtures.py            # writes format-0.tar.gz beside this file

Format 0 (stores made before `store.yaml`): commit c1b4976, `gitstore init --sample` and two
writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[2]
FIXTURES = {0: "c1b4976"}


def build(version: int, commit: str, folder: Path) -> Path:
    source, root = folder / "source", folder / "store"
    source.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(PROJECT), "archive", commit], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT", "GITSTORE_"))}
    env["PYTHONPATH"] = str(source)

    def gitstore(*args: str) -> None:
        command = [sys.executable, "-c", "from cli.main import main; main()", *args]
        subprocess.run(command, env=env, cwd=folder, check=True)

    gitstore("init", "--sample", "--root", str(root))
    for value in ("1", "2"):
        gitstore(
            "--root", str(root), "config", "set", "--env", "1", "--resource", "globals",
            "--key", "fixture_writes", "--type", "int", "--value", value,
        )  # fmt: skip
    target = HERE / f"format-{version}.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        tar.add(root, arcname="store")
    return target


def main() -> None:
    for version, commit in FIXTURES.items():
        with tempfile.TemporaryDirectory() as folder:
            print(build(version, commit, Path(folder)))


if __name__ == "__main__":
    main()
