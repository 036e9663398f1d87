"""A rolling upgrade under load (docs/ha.md "Upgrading a cluster, one member at a time").

Three members start on the previous version of gitstore, the commit the annotated tag
`gitstore-prev` names, unpacked from git (or, in a checkout without the tag, from the same
code kept in tests/data/gitstore-prev.tar.gz) and run from a virtualenv of its own (its own
interpreter and path; the third-party packages are this checkout's virtualenv's, so nothing is
downloaded). Writers (REST keys and git pushes) and readers go through HAProxy while each member
in turn is stopped and started again on this checkout's version with the same store root: the
replicas one at a time, then the primary (its stop is the failover). No acknowledged write may
be lost, writes are acknowledged while the two versions serve together, reads fail only while
the primary is replaced, and once the previous version is removed pushes still pass the gate.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest
from background import Background
from cluster_harness import THIS_VERSION, Cluster, Version, clean_env, http

from gitstore.cluster.secret import PROTOCOL_HEADER

from .test_cluster import VALUES, Writers, _settled, wait_until

PROJECT = Path(__file__).resolve().parents[2]
TAG = "gitstore-prev"
ARCHIVE = PROJECT / "tests/data/gitstore-prev.tar.gz"
ARCHIVED = ("gitstore", "cli", "webhooks", "pyproject.toml")

#: The store every member starts from, made by the previous version (tests/cluster/conftest.py's
#: seed_store, as that version's code runs it).
SEED = """import sys
from gitstore import Store
store = Store.init(sys.argv[1])
store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
"""

LAUNCHER = """#!{python}
import sys
from cli.main import main
sys.exit(main())
"""


def previous_code() -> bytes:
    """The previous version's code as a tar: `git archive` of the tag when this checkout has
    it, which must then equal the archive kept in tests/data (`tools/previous-version.sh`
    writes it); that archive alone in a checkout without the tag (a shallow clone)."""
    done = subprocess.run(
        ["git", "-C", str(PROJECT), "archive", "--format=tar", f"refs/tags/{TAG}", *ARCHIVED],
        capture_output=True, check=False,
    )  # fmt: skip
    kept = gzip.decompress(ARCHIVE.read_bytes())
    if done.returncode == 0:
        assert done.stdout == kept, f"{ARCHIVE} is not {TAG}'s code: run tools/previous-version.sh"
    return kept


def build_previous_version(workdir: Path) -> Version:
    """The tagged commit's code in `workdir/src` and a virtualenv `workdir/venv` that runs it:
    its path holds that code first, then this interpreter's third-party packages (plain path
    lines, so this checkout's editable install of gitstore is not among them)."""
    src, venv = workdir / "src", workdir / "venv"
    src.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=previous_code(), check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin/python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    packages = sysconfig.get_paths()["purelib"]
    (Path(site) / "gitstore_previous.pth").write_text(f"{src}\n{packages}\n")
    program = venv / "bin/gitstore"
    program.write_text(LAUNCHER.format(python=python))
    program.chmod(0o755)
    return Version(program=str(program), inherits_path=False)


def run_previous(version: Version, *args: str, home: Path) -> str:
    """Run the previous version's interpreter (its own path only: not in this checkout, which
    `python -c` would import from); what it printed."""
    python = str(Path(version.program).with_name("python"))
    env = clean_env(home)
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [python, *args], env=env, cwd=home, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def previous(tmp_path):
    workdir = tmp_path / "previous"
    version = build_previous_version(workdir)
    where = run_previous(version, "-c", "import gitstore; print(gitstore.__file__)", home=workdir)
    assert where.startswith(str(workdir / "src")), f"the previous version imports {where}"
    return version


def uninstall(version: Version) -> None:
    shutil.rmtree(Path(version.program).parents[2])


class Readers(Background):
    """Reads of environment 1's values through HAProxy; the moments of those that failed."""

    def __init__(self, cluster: Cluster, threads: int = 2) -> None:
        super().__init__()
        self.cluster = cluster
        self.served = 0
        self.failed: list[tuple[float, object]] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._read) for _ in range(threads)]

    def _read(self) -> None:
        while not self.stop.is_set():
            try:
                code = http("GET", self.cluster.url + VALUES, timeout=10)[0]
            except OSError as exc:
                code = type(exc).__name__
            with self._lock:
                if code == 200:
                    self.served += 1
                else:
                    self.failed.append((time.monotonic(), code))
            time.sleep(0.02)


def caught_up(cluster: Cluster, name: str) -> None:
    """Wait until the member is a replica that knows the primary and lags on nothing."""

    def ready() -> bool:
        status = cluster.status(name) or {}
        return status.get("role") == "replica" and status.get("behind") == [] and status["primary"]

    wait_until(ready, timeout=30, what=f"{name} back as an up-to-date replica")


def upgrade(cluster: Cluster, name: str) -> None:
    """docs/ha.md's step for one replica: stop it, start this version on the same root, wait
    until it follows."""
    cluster.terminate(name)
    cluster.nodes[name].version = THIS_VERSION
    cluster.start_node(name)
    caught_up(cluster, name)


def acknowledged_meanwhile(writers: Writers, since: int, what: str) -> int:
    """Wait until a write more than `since` is acknowledged; the count then."""
    wait_until(lambda: len(writers.keys) > since, timeout=20, what=f"a write acknowledged {what}")
    return len(writers.keys)


def refuses_protocol_2(cluster: Cluster, name: str) -> bool:
    headers = {**cluster.member_headers(), PROTOCOL_HEADER: "2"}
    code, body, _ = http("GET", cluster.nodes[name].url + "/cluster/v1/status", **headers)
    return code == 409 and "cluster protocol '2'" in json.loads(body)["message"]


def test_a_rolling_upgrade_under_load_loses_no_acknowledged_write(previous, tmp_path):
    started = time.monotonic()
    steps: list[str] = []  # printed: where the seconds went

    def step(what: str) -> None:
        steps.append(f"{what} {time.monotonic() - started:.1f}s")

    seed = tmp_path / "seed"
    run_previous(previous, "-c", SEED, str(seed), home=tmp_path / "home")
    with Cluster(tmp_path / "cluster", seed, workers=1, version=previous) as cluster:
        primary = cluster.wait_for_primary()
        replicas = [n for n in cluster.nodes if n != primary]
        step("previous version serving")
        with Readers(cluster) as readers, Writers(cluster, tmp_path, rest=3, pushers=1) as writers:
            count = acknowledged_meanwhile(writers, 0, "by the previous version")
            for name in replicas:
                upgrade(cluster, name)
                count = acknowledged_meanwhile(writers, count, f"with {name} upgraded")
                step(f"{name} upgraded")
            # either version refuses a member call in a protocol it does not speak
            assert refuses_protocol_2(cluster, primary) and refuses_protocol_2(cluster, name)
            stopped = time.monotonic()
            cluster.terminate(primary, wait=False)  # the failover: its coordinator lets go
            assert cluster.wait_for_primary(other_than=primary) in replicas
            took_over = time.monotonic()
            count = acknowledged_meanwhile(writers, count, "by the upgraded primary")
            step("failed over")
            cluster.nodes[primary].process.wait(timeout=30)
            uninstall(previous)  # no member runs it now
            pushed = len(writers.pushed) + 1  # the push under way may have passed the old gate
            cluster.nodes[primary].version = THIS_VERSION
            cluster.start_node(primary)
            caught_up(cluster, primary)
            acknowledged_meanwhile(writers, count, "with every member upgraded")
            step(f"{primary} upgraded")
            wait_until(lambda: len(writers.pushed) > pushed, what="a push through the new gate")
            step("pushed")
        print(f"upgrade: {len(writers.keys)} writes and {len(writers.pushed)} pushes "
              f"acknowledged, {writers.codes} refused; {readers.served} reads served, "
              f"{len(readers.failed)} failed; failover {took_over - stopped:.1f}s; "
              f"{', '.join(steps)}")  # fmt: skip
        outside = [(round(t - stopped, 1), code) for t, code in readers.failed
                   if not stopped <= t <= took_over + 1]  # fmt: skip
        assert outside == [], "reads failed outside the failover (seconds after the stop, code)"
        assert readers.served > 50
        _settled(cluster)
        for name, node in cluster.nodes.items():
            served = json.loads(http("GET", node.url + VALUES)[1])
            lost = {k: v for k, v in writers.keys.items() if served.get(k) != v}
            assert lost == {}, f"{name} lost acknowledged writes"
            git_dir = node.root / "environments/1.git"
            for sha in writers.pushed:
                ancestor = ["git", "--git-dir", git_dir, "merge-base", "--is-ancestor", sha, "main"]
                assert subprocess.run(ancestor, check=False).returncode == 0, f"{name} lost {sha}"
            assert sys.executable in (git_dir / "hooks/pre-receive").read_text()
