"""Operations on a real `gitstore serve` with three workers: metrics summed across workers,
request ids, JSON log lines, no secret in the logs, readiness of a corrupted repository."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store, metrics
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.configdb.importer import SAMPLE_DIR

USER, PASSWORD = "operator", "Op-Pa55word-7Qz"
SECRET = "Db-S3cret-Value-41x"
KEYS_SET = "/api/v1/config/environments/1/nodes/2/resources/astute/overrides/keys/set"
VALUES = "/api/v1/config/environments/1/nodes/2/resources/astute/overrides"
WORKER = "X-Gitstore-Worker"  # gitstore.api.bench, on with GITSTORE_BENCH_BASELINE=1
SAMPLE = re.compile(r"^(gitstore_[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ops-serve")
    root = workdir / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    access = AccessFile(root)
    access.add_user(USER, parse_grants(["admin", "writer", "secrets"]), PASSWORD)
    token = access.create_token(USER, "ops tests")[1]
    port = free_port()
    log = workdir / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "3"]
    args += ["--log-format", "json", "--min-free-disk", "1"]
    env = isolated_env(workdir, GITSTORE_BENCH_BASELINE="1")
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log, probe="/healthz")
    yield {"url": url, "root": root, "log": log, "token": token, "process": process}
    stop_process(process)


def _auth() -> tuple[str, str]:
    return (USER, PASSWORD)


def _scrape(url: str) -> dict[tuple[str, str], float]:
    answer = requests.get(url + "/metrics", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/plain")
    return {
        (name, labels or ""): float(value) for name, labels, value in SAMPLE.findall(answer.text)
    }


def _value(samples: dict, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    return sum(
        v for (n, text), v in samples.items() if n == name and all(w in text for w in wanted)
    )


def _healthz(url: str) -> str:
    answer = requests.get(url + "/healthz", timeout=10)
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}
    assert answer.headers["Cache-Control"] == "no-store"
    return answer.headers[WORKER]


def _settled_healthz_count(url: str) -> float:
    """The count of /healthz once the requests made before (the fixture's start-up polls,
    earlier tests) have landed: two reads a flush interval apart agree."""
    count = _value(_scrape(url), "gitstore_http_requests_total", route="/healthz", status="200")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(metrics.FLUSH_SECONDS + 0.5)
        again = _value(_scrape(url), "gitstore_http_requests_total", route="/healthz", status="200")
        if again == count:
            return count
        count = again
    raise AssertionError("the /healthz count kept moving with no request sent")


def test_request_counts_add_up_across_workers(served):
    url = served["url"]
    before = _settled_healthz_count(url)
    workers: set[str] = set()
    sent = 0
    with ThreadPoolExecutor(max_workers=8) as pool:  # concurrent connections spread the accepts
        while sent < 400 and (len(workers) < 2 or sent < 40):
            workers.update(pool.map(lambda _: _healthz(url), range(20)))
            sent += 20
    assert len(workers) >= 2, "the requests should have reached several workers"
    # A worker adds its request counts to the shared files every FLUSH_SECONDS (and before it
    # answers a scrape): after that interval, whichever worker answers, the sum is complete.
    # (Generous: on a loaded machine a worker's timer runs late.)
    deadline = time.monotonic() + metrics.FLUSH_SECONDS + 15
    while time.monotonic() < deadline:
        samples = _scrape(url)
        if _value(samples, "gitstore_http_requests_total", route="/healthz") >= before + sent:
            break
        time.sleep(0.2)
    for _ in range(6):
        samples = _scrape(url)
        counted = _value(samples, "gitstore_http_requests_total", route="/healthz", status="200")
        assert counted == before + sent
        duration = _value(samples, "gitstore_http_request_duration_seconds_count", route="/healthz")
        assert duration >= sent


def test_commits_are_counted_by_source(served):
    url = served["url"]
    before = _scrape(url)
    for index in range(3):
        done = requests.put(
            url + KEYS_SET, json=[["ops", f"k{index}", index]], auth=_auth(), timeout=10
        )
        assert done.status_code == 204
    cli = requests.put(
        url + KEYS_SET,
        json=[["ops", "from_cli", True]],
        auth=_auth(),
        headers={"X-Gitstore-Client": "cli"},
        timeout=10,
    )
    assert cli.status_code == 204
    command = [str(GITSTORE), "--url", url, "--user", USER, "--password", PASSWORD, "config"]
    command += ["override", "-e", "1", "-l", "nodes=2", "-r", "astute", "-k", "ops.real_cli"]
    done = subprocess.run(
        [*command, "-t", "int", "-v", "7"],
        capture_output=True,
        text=True,
        env=isolated_env(served["root"].parent),
    )
    assert done.returncode == 0, done.stderr
    after = _scrape(url)
    for source, added in (("rest", 3), ("cli", 2)):
        was = _value(before, "gitstore_commits_total", source=source)
        assert _value(after, "gitstore_commits_total", source=source) == was + added
    assert (
        _value(after, "gitstore_git_objects_written_total")
        >= _value(before, "gitstore_git_objects_written_total") + 4 * 3
    )  # a commit, a blob and trees each
    hits = _value(after, "gitstore_cache_requests_total", result="hit")
    deadline = time.monotonic() + metrics.FLUSH_SECONDS + 10  # counts land at each flush
    while hits == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
        hits = _value(_scrape(url), "gitstore_cache_requests_total", result="hit")
    assert hits > 0


def test_auth_failures_are_counted_by_reason(served):
    url = served["url"]
    before = _value(_scrape(url), "gitstore_auth_failures_total", reason="bad_password")
    refused = requests.get(url + VALUES, auth=(USER, "wrong-password"), timeout=10)
    assert refused.status_code == 401
    after = _value(_scrape(url), "gitstore_auth_failures_total", reason="bad_password")
    assert after == before + 1


def test_a_request_id_round_trips_and_a_bad_one_is_replaced(served):
    url = served["url"]
    given = requests.get(url + "/healthz", headers={"X-Request-Id": "trace-42.a_b"}, timeout=10)
    assert given.headers["X-Request-Id"] == "trace-42.a_b"
    bad = requests.get(url + "/healthz", headers={"X-Request-Id": "no spaces!"}, timeout=10)
    made = bad.headers["X-Request-Id"]
    assert made != "no spaces!" and re.fullmatch(r"[A-Za-z0-9._-]{1,128}", made)
    refused = requests.get(url + VALUES, headers={"X-Request-Id": "refused-1"}, timeout=10)
    assert refused.status_code == 401 and refused.headers["X-Request-Id"] == "refused-1"


def _log_lines(served) -> list[dict]:
    text = served["log"].read_text()
    lines = [line for line in text.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a log line is not JSON: {line!r}")
    return parsed


def test_every_log_line_is_json_with_one_line_per_request(served):
    url = served["url"]
    requests.put(
        url + KEYS_SET,
        json=[["ops", "logged", 1]],
        auth=_auth(),
        timeout=10,
        headers={"X-Request-Id": "logged-write-1"},
    )
    lines = _log_lines(served)
    assert any(line["logger"] == "gunicorn.error" for line in lines)  # gunicorn's own lines
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in lines)
    request = next(
        line
        for line in lines
        if line.get("request_id") == "logged-write-1" and line["logger"] == "gitstore.requests"
    )
    assert request["method"] == "PUT" and request["status"] == 204 and request["user"] == USER
    assert request["route"] == "/api/v1/config/environments/<int:env_id>/<path:rest>"
    assert request["env"] == 1 and re.fullmatch(r"[0-9a-f]{40}", request["commit"])
    assert isinstance(request["duration_ms"], float)
    commit = next(
        line
        for line in lines
        if line.get("request_id") == "logged-write-1" and line.get("event") == "commit"
    )
    assert commit["commit"] == request["commit"] and "environment 1" in commit["repository"]


def _git(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=isolated_env(home), check=False
    )


def test_pushes_count_as_commits_and_refusals_by_rule(served, tmp_path):
    url = served["url"].replace("http://", f"http://{USER}:{PASSWORD}@")
    before = _scrape(served["url"])
    clone = tmp_path / "clone"
    assert (
        _git(
            "clone", f"{url}/git/environments/1.git", str(clone), cwd=tmp_path, home=tmp_path
        ).returncode
        == 0
    )
    for name, value in (("user.name", "Pusher"), ("user.email", "p@example.com")):
        _git("config", name, value, cwd=clone, home=tmp_path)
    target = clone / "global" / "values" / "astute.yaml"
    target.write_text(target.read_text() + "pushed_value: 1\n")
    _git("commit", "-qam", "a good change", cwd=clone, home=tmp_path)
    pushed = _git("push", "origin", "HEAD:main", cwd=clone, home=tmp_path)
    assert pushed.returncode == 0, pushed.stderr
    pushed_commit = _git("rev-parse", "HEAD", cwd=clone, home=tmp_path).stdout
    (clone / "global" / "values" / "astute.yaml").write_text("- not a mapping\n")
    _git("commit", "-qam", "a bad change", cwd=clone, home=tmp_path)
    refused = _git("push", "origin", "HEAD:main", cwd=clone, home=tmp_path)
    assert refused.returncode != 0 and "refused" in refused.stderr
    after = _scrape(served["url"])
    pushed = _value(after, "gitstore_commits_total", source="push")
    assert pushed == _value(before, "gitstore_commits_total", source="push") + 1
    refusals = _value(after, "gitstore_gate_refusals_total", rule="valid_tree")
    assert refusals == _value(before, "gitstore_gate_refusals_total", rule="valid_tree") + 1
    # the gate runs in git's process, yet its lines reach the server's log, with the request id
    lines = _log_lines(served)
    refusal = next(line for line in lines if line.get("event") == "refusal")
    assert refusal["rule"] == "valid_tree" and refusal["repository"] == "environments/1.git"
    push = next(line for line in lines if line.get("event") == "push")
    assert push["commit"] in pushed_commit
    assert any(
        line.get("request_id") == refusal["request_id"] and line["logger"] == "gitstore.requests"
        for line in lines
    )


def test_no_secret_password_or_token_reaches_the_logs(served):
    url, token = served["url"], served["token"]
    write = requests.put(
        url + KEYS_SET, json=[["nova", "db_password", SECRET]], auth=_auth(), timeout=10
    )
    assert write.status_code == 204
    shown = requests.get(
        url + VALUES,
        params={"reveal": "1"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert shown.status_code == 200 and shown.json()["nova"]["db_password"] == SECRET
    requests.get(url + VALUES, headers={"Authorization": "Bearer gst_nope_notatoken"}, timeout=10)
    requests.get(url + VALUES, auth=(USER, "Wrong-" + PASSWORD), timeout=10)
    samples = _scrape(url)
    assert _value(samples, "gitstore_secret_reveals_total") >= 1
    log = served["log"].read_text()
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    for needle in (SECRET, PASSWORD, token, basic, "notatoken", "Wrong-"):
        assert needle not in log, f"{needle!r} reached the log"


def test_readiness_fails_on_a_corrupt_ref_and_recovers(served):
    url, root = served["url"], served["root"]
    ready = requests.get(url + "/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert ready.headers["Cache-Control"] == "no-store"
    ref = root / "environments" / "1.git" / "refs" / "heads" / "main"
    good = ref.read_text()
    ref.write_text("0123456789abcdef0123456789abcdef01234567\n")  # names no object
    try:
        for _ in range(4):  # every worker sees it
            broken = requests.get(url + "/readyz", timeout=10)
            assert broken.status_code == 503
            failed = [c for c in broken.json()["checks"] if not c["ok"]]
            assert [c["name"] for c in failed] == ["repository environments/1.git"]
            assert "not a commit" in failed[0]["message"]
    finally:
        ref.write_text(good)
    for _ in range(4):
        assert requests.get(url + "/readyz", timeout=10).status_code == 200
