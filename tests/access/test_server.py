"""Access control of a real gunicorn server (2 workers): revocation, rate limits, git over HTTP.

The server runs with an access log that names the worker pid of each request, so the tests
can show that BOTH workers refused a revoked token and counted failures together.
"""

from __future__ import annotations

import http.client
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import yaml
from live_server import GUNICORN, stop_process, wait_until_answers

from .conftest import build_store
from .helpers import add_users, bearer, free_port, gitstore, isolated_env, password_of

USERS = {
    "reader": ["reader"],
    "writer1": ["writer:env:1"],
    "admin": ["admin"],
    "doomed": ["reader"],
}
ASTUTE = "/api/v1/config/environments/1/resources/astute/values"
LOG_FORMAT = '%(p)s "%(r)s" %(s)s'


class Gunicorn:
    """`GITSTORE_ROOT=<root> gunicorn -w 2 'gitstore.api:create_app()'` with a pid access log."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"gunicorn-{self.port}.log"
        # sync workers serve one request at a time, so concurrent requests reach both
        args = [
            str(GUNICORN),
            "-w",
            "2",
            "-b",
            f"127.0.0.1:{self.port}",
            "--no-control-socket",
            "--access-logfile",
            "-",
            "--access-logformat",
            LOG_FORMAT,
            "gitstore.api:create_app()",
        ]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=isolated_env(workdir, GITSTORE_ROOT=str(root)),
            )
        wait_until_answers(self.process, self.url, self.log, probe="/api/v1/access/whoami")

    def pids_answering(self, marker: str) -> dict[str, set[str]]:
        """Worker pid -> statuses it answered for requests whose line holds `marker`."""
        found: dict[str, set[str]] = {}
        for pid, line, status in re.findall(
            r'^<(\d+)> "([^"]*)" (\d+)$', self.log.read_text(), re.MULTILINE
        ):
            if marker in line:
                found.setdefault(pid, set()).add(status)
        return found

    def stop(self) -> None:
        stop_process(self.process)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("guarded-server")
    store = build_store(workdir / "store")
    tokens = add_users(store.root, USERS)
    server = Gunicorn(store.root, workdir)
    yield store, tokens, server, workdir
    server.stop()


@pytest.fixture(scope="module")
def digests(served) -> list[str]:
    """The password hashes and token digests of the access file, before any revocation."""
    return re.findall(r"(?:scrypt|sha256)\$\S+", (served[0].root / "access.yaml").read_text())


def fresh_gets(url: str, marker: str, headers: dict, count: int = 16) -> list[int]:
    """`count` concurrent GETs, each on a new connection, so both workers get some."""

    def get(i: int) -> int:
        with requests.Session() as session:
            return session.get(f"{url}?probe={marker}-{i}", headers=headers, timeout=20).status_code

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(get, range(count)))


def until_both_workers(server: Gunicorn, marker: str, headers: dict, url: str) -> list[int]:
    statuses: list[int] = []
    for _ in range(12):  # on a busy host the kernel may hand one worker many rounds in a row
        statuses += fresh_gets(url, marker, headers)
        if len(server.pids_answering(marker)) == 2:
            return statuses
    pytest.fail(f"one worker answered every request marked {marker}")


def test_a_revoked_token_is_refused_at_once_by_every_worker(served, digests):
    store, tokens, server, workdir = served
    headers, url = bearer(tokens["doomed"]), server.url + ASTUTE
    assert set(until_both_workers(server, "before", headers, url)) == {200}
    listed = gitstore(
        "--root",
        str(store.root),
        "token",
        "list",
        "--user",
        "doomed",
        "--format",
        "json",
        home=workdir,
    )
    [entry] = yaml.safe_load(listed.stdout)
    revoked = gitstore("--root", str(store.root), "token", "revoke", entry["id"], home=workdir)
    assert revoked.returncode == 0, revoked.stderr
    assert set(until_both_workers(server, "after", headers, url)) == {401}
    assert all(statuses == {"401"} for statuses in server.pids_answering("after").values())


def test_21_failures_spread_over_workers_block_the_address(served):
    _, tokens, server, _ = served

    def attempt(token: str, marker: str) -> int:
        # from 127.0.0.2: other tests keep talking from 127.0.0.1
        conn = http.client.HTTPConnection(
            "127.0.0.1", server.port, timeout=20, source_address=("127.0.0.2", 0)
        )
        try:
            conn.request("GET", f"{ASTUTE}?probe={marker}", headers=bearer(token))
            return conn.getresponse().status
        finally:
            conn.close()

    with ThreadPoolExecutor(7) as pool:  # concurrent: both workers take some
        statuses = list(pool.map(lambda i: attempt(f"gst_{i:012d}_guess", f"guess-{i}"), range(21)))
    assert statuses == [401] * 21
    assert len(server.pids_answering("guess-")) == 2  # both workers counted failures
    assert attempt(tokens["reader"], "blocked") == 429
    assert (
        requests.get(server.url + ASTUTE, headers=bearer(tokens["reader"]), timeout=20).status_code
        == 200
    )  # 127.0.0.1 is another address


def git(*args: str, cwd: Path | None = None, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=isolated_env(
            home,
            GIT_AUTHOR_NAME="Pusher",
            GIT_AUTHOR_EMAIL="pusher@example.com",
            GIT_COMMITTER_NAME="Pusher",
            GIT_COMMITTER_EMAIL="pusher@example.com",
        ),
    )


def with_user(url: str, user: str) -> str:
    return url.replace("http://", f"http://{user}:{password_of(user)}@")


def test_git_clone_needs_credentials(served, tmp_path):
    _, tokens, server, _ = served
    anonymous = git(
        "clone", "-q", f"{server.url}/git/environments/1.git", str(tmp_path / "a"), home=tmp_path
    )
    assert anonymous.returncode != 0
    assert "could not read Username" in anonymous.stderr  # git got the 401 challenge
    with_token = git(
        "-c",
        f"http.extraHeader=Authorization: Bearer {tokens['reader']}",
        "clone",
        "-q",
        f"{server.url}/git/environments/1.git",
        str(tmp_path / "b"),
        home=tmp_path,
    )
    assert with_token.returncode == 0, with_token.stderr
    assert (tmp_path / "b" / "environment.yaml").is_file()


def _clone_and_change(server, env_id: int, workdir: Path, home: Path) -> Path:
    url = with_user(f"{server.url}/git/environments/{env_id}.git", "reader")
    assert git("clone", "-q", url, str(workdir), home=home).returncode == 0
    (workdir / "global/values").mkdir(parents=True, exist_ok=True)
    (workdir / "global/values/astute.yaml").write_text("pushed: true\n")
    git("add", "-A", cwd=workdir, home=home)
    assert git("commit", "-qm", "push test", cwd=workdir, home=home).returncode == 0
    return workdir


def test_git_push_needs_writer_on_that_environment(served, tmp_path):
    store, tokens, server, _ = served
    one = _clone_and_change(server, 1, tmp_path / "one", tmp_path)
    as_reader = git("push", "-q", "origin", "main", cwd=one, home=tmp_path)
    assert as_reader.returncode != 0 and "403" in as_reader.stderr
    git(
        "remote",
        "set-url",
        "origin",
        with_user(f"{server.url}/git/environments/1.git", "writer1"),
        cwd=one,
        home=tmp_path,
    )
    as_writer = git("push", "-q", "origin", "main", cwd=one, home=tmp_path)
    assert as_writer.returncode == 0, as_writer.stderr
    got = requests.get(server.url + ASTUTE, headers=bearer(tokens["reader"]), timeout=20)
    assert got.json() == {"pushed": True}

    two = _clone_and_change(server, 2, tmp_path / "two", tmp_path)
    git(
        "remote",
        "set-url",
        "origin",
        with_user(f"{server.url}/git/environments/2.git", "writer1"),
        cwd=two,
        home=tmp_path,
    )
    elsewhere = git("push", "-q", "origin", "main", cwd=two, home=tmp_path)
    assert elsewhere.returncode != 0 and "403" in elsewhere.stderr


def test_rest_commits_name_the_authenticated_user(served):
    store, tokens, server, _ = served
    url = server.url + "/api/v1/config/environments/1/nodes/7/resources/astute/values"
    assert (
        requests.put(
            url, json={"by": "rest"}, headers=bearer(tokens["writer1"]), timeout=20
        ).status_code
        == 204
    )
    author = subprocess.run(
        ["git", "--git-dir", str(store.environment_path(1)), "log", "-1", "--format=%an <%ae>"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert author.stdout.strip() == "writer1 <writer1@gitstore>"


def test_no_secret_of_the_access_file_is_in_the_log_or_any_commit(served, digests):
    """Runs last in this module: everything above has been logged and committed."""
    store, tokens, server, _ = served
    assert len(digests) == 2 * len(USERS)
    secrets = [*tokens.values(), *map(password_of, USERS), *digests]
    repositories = [
        store.root / "catalog.git",
        *sorted((store.root / "environments").glob("*.git")),
    ]
    history = "".join(
        subprocess.run(
            ["git", "--git-dir", str(repo), "log", "-p", "--all"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for repo in repositories
    )
    log = server.log.read_text()
    assert "pushed: true" in history and "invalid or revoked token" in log  # both were written
    for secret in secrets:
        assert secret not in log
        assert secret not in history
