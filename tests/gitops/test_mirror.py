"""Mirror mode: a local bare repository plays the forge's repository (a file URL), webhooks come
signed in each forge's format, and pull-request reviews go to a stub of the forge's REST API."""

from __future__ import annotations

import contextlib
import copy
import json
import stat
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from fuel_data import newton_release

from cli.main import cli
from gitstore.api import create_app
from gitstore.errors import Conflict
from gitstore.gitops.service import INCOMING, start_poller

from . import forge_payloads as forge
from .helpers import GLOBAL_ASTUTE, Server, commit_files, free_port, git, isolated_env

SECRET = "s3cret-webhook"
TOKEN = "forge-token"
ENV = "environments/1.git"
FORGES = ["github", "gitlab", "gitea"]


@pytest.fixture
def remote(gitops_store, tmp_path):
    """The forge's repository (bare, a copy of environment 1) and a clone to commit in."""
    bare = tmp_path / "remote.git"
    git("clone", "-q", "--bare", str(gitops_store.environment_path(1)), str(bare))
    work = tmp_path / "upstream-work"
    git("clone", "-q", str(bare), str(work))
    return bare, work


@pytest.fixture
def client(gitops_store):
    return create_app({"TESTING": True}, store=gitops_store).test_client()


def mirror(store, remote, forge_name=None, api_url=None):
    bare, _ = remote
    return store.gitops.add_mirror(
        ENV,
        bare.as_uri(),
        secret=SECRET,
        forge=forge_name,
        api_url=api_url,
        api_token=TOKEN if api_url else None,
    )


def upstream_commit(remote, files, message="upstream change") -> str:
    _, work = remote
    new = commit_files(work, files, message)
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    return new


def send(client, forge_name, payload, secret=SECRET, event="push", query=""):
    body = forge.encode(payload)
    return client.post(
        f"/webhooks/{forge_name}{query}",
        data=body,
        headers=forge.headers(forge_name, body, secret, event),
    )


def status_of(client, name=ENV) -> dict:
    rows = client.get("/api/v1/status").get_json()["repositories"]
    return next(row for row in rows if row["repository"] == name)


@pytest.mark.parametrize("forge_name", FORGES)
def test_a_signed_push_event_serves_the_new_commit(gitops_store, remote, client, forge_name):
    mirror(gitops_store, remote, forge_name)
    before = status_of(client)["served_commit"]
    new = upstream_commit(remote, {"global/values/astute.yaml": "port: 9000\n"})
    response = send(
        client, forge_name, forge.push_payload(forge_name, remote[0].as_uri(), before, new)
    )
    assert response.status_code == 200, response.get_json()
    row = status_of(client)
    assert (row["served_commit"], row["remote_commit"], row["failure"]) == (new, new, None)
    assert row["last_fetch"].endswith("Z")
    assert row["mirror"]["webhook_secret"] == "***"
    values = client.get("/api/v1/config/environments/1/resources/astute/values")
    assert values.get_json() == {"port": 9000}
    objects = gitops_store.environment_repo(1).path / "objects"
    assert not (objects / new[:2] / new[2:]).exists()  # kept as the pack fetched, not loose


def test_a_failing_commit_is_recorded_and_the_last_good_one_stays_served(
    gitops_store, remote, client
):
    mirror(gitops_store, remote, "github")
    good = status_of(client)["served_commit"]
    bad = upstream_commit(remote, {"global/values/astute.yaml": "port: high\n"})
    send(client, "github", forge.push_payload("github", remote[0].as_uri(), good, bad))
    row = status_of(client)
    assert row["served_commit"] == good and row["remote_commit"] == bad
    assert row["failure"]["commit"] == bad
    assert row["failure"]["errors"] == [
        {
            "file": "global/values/astute.yaml",
            "line": 1,
            "key": "port",
            "message": "'high' is not of type 'integer' (schema of resource 'astute')",
        }
    ]
    fixed = upstream_commit(remote, {"global/values/astute.yaml": "port: 1\n"}, "fix")
    send(client, "github", forge.push_payload("github", remote[0].as_uri(), bad, fixed))
    row = status_of(client)
    assert (row["served_commit"], row["failure"]) == (fixed, None)


@pytest.mark.parametrize("forge_name", FORGES)
@pytest.mark.parametrize("secret", [None, "wrong-secret"])
def test_a_bad_or_missing_signature_is_401_and_nothing_is_fetched(
    gitops_store, remote, client, forge_name, secret
):
    mirror(gitops_store, remote, forge_name)
    before = status_of(client)["served_commit"]
    new = upstream_commit(remote, {"global/values/globals.yaml": "a: 1\n"})
    response = send(
        client, forge_name, forge.push_payload(forge_name, remote[0].as_uri(), before, new), secret
    )
    assert response.status_code == 401
    assert response.get_json()["status"] == 401
    row = status_of(client)
    assert (row["served_commit"], row["remote_commit"], row["last_fetch"]) == (before, None, None)
    ref = git(
        "--git-dir",
        str(gitops_store.environment_path(1)),
        "rev-parse",
        "--verify",
        "-q",
        INCOMING,
        check=False,
    )
    assert ref.returncode != 0  # no fetch happened


def test_a_signature_made_for_another_body_is_refused(gitops_store, remote, client):
    mirror(gitops_store, remote, "github")
    payload = forge.push_payload("github", remote[0].as_uri(), "0" * 40, "1" * 40)
    body = forge.encode(payload)
    headers = forge.headers("github", body + b" ", SECRET, "push")
    assert client.post("/webhooks/github", data=body, headers=headers).status_code == 401


def test_events_for_other_branches_and_kinds_are_acknowledged_and_ignored(
    gitops_store, remote, client
):
    mirror(gitops_store, remote)
    before = status_of(client)["served_commit"]
    new = upstream_commit(remote, {"global/values/globals.yaml": "a: 1\n"})
    payload = forge.push_payload("gitea", remote[0].as_uri(), before, new, "refs/heads/other")
    response = send(client, "gitea", payload)
    assert response.status_code == 200
    assert "is not the mirrored branch" in response.get_json()["repositories"][0]["ignored"]
    ping = send(
        client,
        "github",
        {"zen": "Keep it simple.", "hook_id": 1, "repository": {"clone_url": remote[0].as_uri()}},
        event="ping",
    )
    assert ping.get_json() == {"event": "ping", "ignored": True}
    assert status_of(client)["served_commit"] == before


def test_the_webhook_url_may_name_the_environment(gitops_store, remote, client):
    mirror(gitops_store, remote, "github")
    new = upstream_commit(remote, {"global/values/globals.yaml": "a: 1\n"})
    payload = forge.push_payload("github", "https://github.com/ops/renamed.git", "0" * 40, new)
    assert send(client, "github", payload).status_code == 401
    assert send(client, "github", payload, query="?env=1").status_code == 200
    assert status_of(client)["served_commit"] == new


def test_history_rewritten_upstream_is_not_served(gitops_store, remote, client):
    mirror(gitops_store, remote, "github")
    before = status_of(client)["served_commit"]
    _, work = remote
    git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    rewritten = commit_files(work, {"global/values/globals.yaml": "a: 1\n"}, "rewrite")
    git("push", "-qf", "origin", "HEAD:main", cwd=work)
    send(client, "github", forge.push_payload("github", remote[0].as_uri(), before, rewritten))
    row = status_of(client)
    assert row["served_commit"] == before
    assert "does not contain the served commit" in row["failure"]["message"]


def test_a_mirrored_repository_refuses_direct_pushes(gitops_store, remote, tmp_path):
    mirror(gitops_store, remote)
    work = tmp_path / "direct"
    git("clone", "-q", str(gitops_store.environment_path(1)), str(work))
    commit_files(work, {"global/values/globals.yaml": "a: 1\n"})
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0
    assert "mirrors file://" in done.stderr and "push there" in done.stderr, done.stderr


VALUES_KEYS = "/api/v1/config/environments/1/resources/astute/values/keys/set"


def test_a_mirrored_repository_refuses_writes_through_the_api(gitops_store, remote, client):
    """A commit made here would stop every later sync: the forge is the source of truth."""
    mirror(gitops_store, remote)
    head = gitops_store.environment_repo(1).head()
    refused = client.patch(VALUES_KEYS, json=[["region", "here"]])
    assert refused.status_code == 409, refused.get_data(as_text=True)
    message = refused.get_json()["message"]
    assert f"{ENV} mirrors file://" in message and "change it there" in message, message
    with pytest.raises(Conflict, match="mirrors"):  # the facade (CLI on --root) alike
        gitops_store.config.update_keys(1, [], "astute", "values", "set", [["region", "x"]])
    assert gitops_store.environment_repo(1).head() == head
    gitops_store.gitops.remove_mirror(ENV)
    assert client.patch(VALUES_KEYS, json=[["region", "here"]]).status_code == 204
    assert gitops_store.environment_repo(1).head() != head


def test_a_catalog_change_leaves_a_mirrored_environment_alone(gitops_store, remote):
    """Re-electing primaries after a release change writes to each environment using it;
    a mirrored one is skipped, and the catalog change still lands."""
    release = gitops_store.releases.create(newton_release()).data
    gitops_store.environments.update(1, {"release": release["id"]})
    mirror(gitops_store, remote)
    head = gitops_store.environment_repo(1).head()
    # a copy: answers share their data with the caches, which must never be edited
    roles = copy.deepcopy(gitops_store.releases.get(release["id"]).data["roles_metadata"])
    roles["compute"]["description"] = "changed while environment 1 is mirrored"
    gitops_store.releases.update(release["id"], {"roles_metadata": roles})
    assert gitops_store.environment_repo(1).head() == head
    changed = gitops_store.releases.get(release["id"]).data["roles_metadata"]["compute"]
    assert changed["description"] == "changed while environment 1 is mirrored"


class _ForgeStub(BaseHTTPRequestHandler):
    """Records every API call; answers 201 like the forges do for comments and statuses."""

    calls: list[dict]

    def do_POST(self):  # noqa: N802 - the name http.server dispatches to
        length = int(self.headers.get("Content-Length") or 0)
        self.calls.append(
            {
                "path": self.path,
                "headers": dict(self.headers),
                "json": json.loads(self.rfile.read(length) or b"null"),
            }
        )
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def forge_api():
    calls: list[dict] = []
    handler = type("Handler", (_ForgeStub,), {"calls": calls})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", calls
    server.shutdown()
    server.server_close()


EXPECTED_CALLS = {
    "github": (
        "/api/repos/ops/env-1/issues/7/comments",
        "/api/repos/ops/env-1/statuses/{sha}",
        "Authorization",
        f"Bearer {TOKEN}",
        "context",
        "failure",
    ),
    "gitea": (
        "/api/repos/ops/env-1/issues/7/comments",
        "/api/repos/ops/env-1/statuses/{sha}",
        "Authorization",
        f"token {TOKEN}",
        "context",
        "failure",
    ),
    "gitlab": (
        "/api/projects/15/merge_requests/7/notes",
        "/api/projects/15/statuses/{sha}",
        "Private-Token",
        TOKEN,
        "name",
        "failed",
    ),
}


@pytest.mark.parametrize("forge_name", FORGES)
def test_a_pull_request_is_reviewed_and_the_report_posted_back(
    gitops_store, remote, client, forge_api, forge_name
):
    api_url, calls = forge_api
    mirror(gitops_store, remote, forge_name, api_url + "/api")
    bare, work = remote
    base = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    head = commit_files(work, {"global/values/astute.yaml": GLOBAL_ASTUTE.replace("8000", "8080")})
    pr_ref = "refs/merge-requests/7/head" if forge_name == "gitlab" else "refs/pull/7/head"
    git("push", "-q", "origin", f"HEAD:{pr_ref}", cwd=work)  # the forge keeps PR heads there
    payload = forge.pull_request_payload(forge_name, bare.as_uri(), base, head)
    response = send(client, forge_name, payload, event="pull_request")
    assert response.status_code == 200, response.get_json()
    review = response.get_json()["reviews"][0]
    assert review["posted"] is True and review["nodes_affected"] == [1, 2, 3, 4]
    comment_path, status_path, auth, token, context, failed = EXPECTED_CALLS[forge_name]
    assert [c["path"] for c in calls] == [comment_path, status_path.format(sha=head)]
    assert "gitstore review: valid" in calls[0]["json"]["body"]
    assert "**Nodes affected** (4): 1, 2, 3, 4" in calls[0]["json"]["body"]
    assert calls[1]["json"]["state"] == "success"
    assert calls[1]["json"][context] == "gitstore/review"
    assert all(call["headers"][auth] == token for call in calls)
    assert status_of(client)["served_commit"] == base  # a review never serves anything

    bad = commit_files(work, {"nodes/1/values/astute.yaml": "port: [\n"}, "break it")
    git("push", "-qf", "origin", f"HEAD:{pr_ref}", cwd=work)
    action = "update" if forge_name == "gitlab" else "synchronize"
    send(
        client,
        forge_name,
        forge.pull_request_payload(forge_name, bare.as_uri(), base, bad, action),
        event="pull_request",
    )
    assert calls[-1]["json"]["state"] == failed
    assert "nodes/1/values/astute.yaml:2: YAML does not parse" in calls[-2]["json"]["body"]


def test_the_mirror_commands_keep_secrets_private(gitops_store, remote):
    runner = CliRunner()
    root = ["--root", str(gitops_store.root)]
    url = remote[0].as_uri()
    added = runner.invoke(
        cli,
        [
            *root,
            "mirror",
            "add",
            "--env",
            "1",
            url,
            "--forge",
            "gitlab",
            "--webhook-secret",
            SECRET,
            "--api-url",
            "http://gl/api/v4",
            "--api-token",
            TOKEN,
        ],
    )
    assert added.exit_code == 0, added.output
    settings = gitops_store.root / "gitops" / "mirrors.json"
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    listed = runner.invoke(cli, [*root, "mirror", "list", "--format", "json"])
    assert json.loads(listed.stdout) == [
        {
            "repository": ENV,
            "url": url,
            "branch": "main",
            "forge": "gitlab",
            "webhook_secret": "***",
            "api_url": "http://gl/api/v4",
            "api_token": "***",
        }
    ]
    assert SECRET not in listed.stdout and TOKEN not in listed.stdout
    new = upstream_commit(remote, {"global/values/globals.yaml": "a: 1\n"})
    synced = runner.invoke(cli, [*root, "mirror", "sync", "--env", "1"])
    assert synced.exit_code == 0, synced.output
    assert f"{ENV}: serving {new[:12]}" in synced.stdout
    removed = runner.invoke(cli, [*root, "mirror", "remove", "--env", "1"])
    assert removed.exit_code == 0
    assert gitops_store.gitops.mirrors() == []
    again = runner.invoke(cli, [*root, "mirror", "remove", "--env", "1"])
    assert again.exit_code == 1 and "has no mirror" in again.stderr
    missing = runner.invoke(cli, [*root, "mirror", "add", "--env", "1", url])
    assert missing.exit_code == 2 and "--webhook-secret" in missing.stderr


def test_the_poller_fetches_on_a_timer(gitops_store, remote):
    mirror(gitops_store, remote)
    stop = threading.Event()
    thread = start_poller(gitops_store.gitops, 0.1, stop)
    try:
        new = upstream_commit(remote, {"global/values/globals.yaml": "polled: true\n"})
        deadline = time.monotonic() + 10
        while gitops_store.environment_repo(1).head() != new and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gitops_store.environment_repo(1).head() == new
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_serve_poll_moves_the_served_commit_without_a_webhook(gitops_store, remote, tmp_path):
    mirror(gitops_store, remote)
    port = free_port()
    gitstore_bin = Path(sys.executable).with_name("gitstore")
    args = [
        str(gitstore_bin),
        "serve",
        "--root",
        str(gitops_store.root),
        "--port",
        str(port),
        "--workers",
        "1",
        "--poll",
        "1",
    ]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=isolated_env(tmp_path),
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        new = upstream_commit(remote, {"global/values/globals.yaml": "polled: true\n"})
        url = f"{server.url}/api/v1/config/environments/1"
        deadline = time.monotonic() + 30
        served = None
        while time.monotonic() < deadline and served != new:
            with contextlib.suppress(requests.RequestException):
                served = requests.get(url, timeout=2).headers.get("X-Gitstore-Commit")
            time.sleep(0.2)
        assert served == new, log.read_text()
        assert "polling mirrors every 1s" in log.read_text()
    finally:
        server.stop()


def test_an_unreachable_remote_is_503_and_recorded(gitops_store, client, tmp_path):
    gone = (tmp_path / "gone.git").as_uri()
    gitops_store.gitops.add_mirror(ENV, gone, secret=SECRET, forge="github")
    before = status_of(client)["served_commit"]
    response = send(client, "github", forge.push_payload("github", gone, "0" * 40, "1" * 40))
    assert response.status_code == 503
    assert f"git fetch from {gone} failed" in response.get_json()["message"]
    row = status_of(client)
    assert row["served_commit"] == before
    assert row["failure"]["message"].startswith(f"git fetch from {gone} failed")


def test_a_malformed_payload_is_400_only_once_signed(gitops_store, remote, client):
    mirror(gitops_store, remote, "gitea")
    body = b"{not json"
    signed = forge.headers("gitea", body, SECRET, "push")
    assert client.post("/webhooks/gitea?env=1", data=body, headers=signed).status_code == 400
    unsigned = forge.headers("gitea", body, "wrong", "push")
    assert client.post("/webhooks/gitea?env=1", data=body, headers=unsigned).status_code == 401
    assert client.post("/webhooks/bitbucket", data=body, headers=signed).status_code == 404


@pytest.mark.parametrize(
    "header, value",
    [
        ("X-Hub-Signature-256", "sha256=\u00e9\u00e9"),
        ("X-Hub-Signature-256", "\u00ff"),
        ("X-Gitea-Signature", "\u00e9" * 64),
    ],
)
def test_a_non_ascii_signature_is_401_in_the_error_shape(
    gitops_store, remote, client, header, value
):
    forge_name = "gitea" if header.startswith("X-Gitea") else "github"
    mirror(gitops_store, remote, forge_name)
    body = forge.encode(forge.push_payload(forge_name, remote[0].as_uri(), "0" * 40, "1" * 40))
    headers = {**forge.headers(forge_name, body, SECRET, "push"), header: value}
    response = client.post(f"/webhooks/{forge_name}", data=body, headers=headers)
    assert response.status_code == 401
    assert response.get_json()["status"] == 401
    assert "does not verify" in response.get_json()["message"]


def _counter(name: str, label: str) -> float:
    """A counter's value in this process's metrics (gitstore.metrics), 0 if unset."""
    from gitstore import metrics

    text = metrics.exposition()[0].decode()
    found = [line for line in text.splitlines() if line.startswith(f"{name}{{{label}}} ")]
    return float(found[0].split()[-1]) if found else 0.0


def test_syncs_count_mirrored_commits_and_refusals(gitops_store, remote, client):
    mirror(gitops_store, remote, "github")
    commits = _counter("gitstore_commits_total", 'source="mirror"')
    refusals = _counter("gitstore_gate_refusals_total", 'rule="valid_tree"')
    good = status_of(client)["served_commit"]
    upstream_commit(remote, {"global/values/astute.yaml": "port: 1\n"}, "one")
    new = upstream_commit(remote, {"global/values/astute.yaml": "port: 2\n"}, "two")
    send(client, "github", forge.push_payload("github", remote[0].as_uri(), good, new))
    assert _counter("gitstore_commits_total", 'source="mirror"') == commits + 2
    bad = upstream_commit(remote, {"global/values/astute.yaml": "port: high\n"})
    send(client, "github", forge.push_payload("github", remote[0].as_uri(), new, bad))
    assert _counter("gitstore_gate_refusals_total", 'rule="valid_tree"') == refusals + 1
    assert _counter("gitstore_commits_total", 'source="mirror"') == commits + 2
