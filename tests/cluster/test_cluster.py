"""A real three-node cluster behind HAProxy (conftest.py): replication, reads of one's own
writes on replicas, redirects, readiness roles, environments created and archived everywhere,
fencing of a deposed primary, and a short chaos round (bench/ha.py runs the long one).

The tests share one cluster and run in file order; the chaos round is last.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from background import Background
from cluster_harness import Cluster, clean_env, http

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.cluster.follower import Follower
from gitstore.cluster.secret import HEADER, ClusterSecret
from gitstore.cluster.transfer import encode_objects
from gitstore.repositories import Repositories

VALUES = "/api/v1/config/environments/1/resources/astute/values"
ENV_REPO = "environments/1.git"
JSON = {"Content-Type": "application/json"}


def set_key(base: str, key: str, value, timeout: float = 30.0):
    body = json.dumps([[key, value]]).encode()
    return http("PUT", base + VALUES + "/keys/set", body, timeout=timeout, **JSON)


def head_of(cluster: Cluster, node: str, repo: str = ENV_REPO) -> str | None:
    """The node's main of `repo`; "-" (etcd's word for it) when the repository is archived."""
    if not (cluster.nodes[node].root / repo).exists():
        return "-"
    done = subprocess.run(
        ["git", "--git-dir", str(cluster.nodes[node].root / repo), "rev-parse", "-q", "--verify",
         "refs/heads/main"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() or None


def wait_until(condition, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout:.0f}s")


def write_through_proxy(cluster: Cluster, key: str, value) -> str:
    """Set a key through HAProxy, retrying while the cluster elects; the acknowledged commit."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            code, _, headers = set_key(cluster.url, key, value, timeout=10)
        except OSError:
            code, headers = None, {}
        if code == 204:
            return headers["X-Gitstore-Commit"]
        time.sleep(0.2)
    raise AssertionError(f"no write of {key} was acknowledged in 30s")


def roles(cluster: Cluster) -> tuple[str, str]:
    """(the primary, a replica that knows it), once there are both."""
    primary = cluster.wait_for_primary()
    found = []

    def known() -> bool:
        found[:] = [
            n for n in cluster.nodes if (cluster.status(n) or {}).get("primary") == primary != n
        ]
        return bool(found)

    wait_until(known, what="a replica that knows the primary")
    return primary, found[0]


def coordinator_pid(cluster: Cluster, node: str) -> int:
    master = cluster.nodes[node].process.pid
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    for pid in children:
        if b"import coordinate" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return int(pid)
    raise AssertionError(f"node {node} has no coordinator process")


# -- replication and reads -------------------------------------------------------------------
def test_writes_through_haproxy_reach_every_replica(cluster):
    commits = [write_through_proxy(cluster, f"basic{i}", i) for i in range(5)]
    for node in cluster.nodes:
        wait_until(lambda n=node: head_of(cluster, n) == commits[-1], what=f"{node} following")
        code, body, headers = http("GET", cluster.nodes[node].url + VALUES)
        assert code == 200 and headers["X-Gitstore-Commit"] == commits[-1]
        assert {f"basic{i}": i for i in range(5)}.items() <= json.loads(body).items()
    assert cluster.etcd_heads()[ENV_REPO] == commits[-1]


def etcd_version(cluster: Cluster, repo: str = ENV_REPO) -> int:
    """How many times etcd's key of `repo` was put since it was made."""
    key = base64.b64encode(f"/gitstore/repositories/{repo}".encode()).decode()
    url = f"http://127.0.0.1:{cluster.etcd_port}/v3/kv/range"
    _, body, _ = http("POST", url, json.dumps({"key": key}).encode())
    return int(json.loads(body)["kvs"][0]["version"])


def is_ancestor(cluster: Cluster, node: str, commit: str, of: str) -> bool:
    git_dir = str(cluster.nodes[node].root / ENV_REPO)
    command = ["git", "--git-dir", git_dir, "merge-base", "--is-ancestor", commit, of]
    return subprocess.run(command, capture_output=True, check=False).returncode == 0


def test_concurrent_writers_share_rounds_and_every_write_reaches_every_node(cluster):
    """Writers queued on the primary's write lock are committed in rounds (one replication
    and one etcd transaction for all of them): each is acknowledged with its own commit, and
    every node then serves every write; etcd's key moved fewer times than there were writes."""
    primary = cluster.wait_for_primary()
    puts_before = etcd_version(cluster)
    acked: dict[str, str] = {}

    def write(writer: int) -> None:
        for n in range(8):
            key = f"round{writer}-{n}"
            code, body, headers = set_key(cluster.nodes[primary].url, key, n)
            assert code == 204, body
            acked[key] = headers["X-Gitstore-Commit"]

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(acked) == 64
    assert etcd_version(cluster) - puts_before < len(acked)
    final = cluster.etcd_heads()[ENV_REPO]
    for node in cluster.nodes:
        wait_until(lambda n=node: head_of(cluster, n) == final, what=f"{node} following")
        served = json.loads(http("GET", cluster.nodes[node].url + VALUES)[1])
        assert all(served[key] == int(key.split("-")[1]) for key in acked)
        assert all(is_ancestor(cluster, node, commit, final) for commit in acked.values())


def test_an_index_read_on_a_lagging_replica_waits_for_the_write(cluster):
    _, replica = roles(cluster)
    cluster.partition(replica)  # it hears nothing from etcd: its main stays behind
    try:
        commit = write_through_proxy(cluster, "own-write", "seen")
        time.sleep(0.5)
        assert head_of(cluster, replica) != commit
        threading.Timer(1.0, cluster.heal, (replica,)).start()
        url = cluster.nodes[replica].url + VALUES + f"?index={commit}&wait=1s"
        code, body, headers = http("GET", url)
    finally:
        cluster.heal(replica)
    assert code == 200, body
    assert headers["X-Gitstore-Commit"] == commit
    assert json.loads(body)["own-write"] == "seen"


def test_an_index_alone_on_a_node_that_holds_it_answers_at_once(cluster):
    commit = write_through_proxy(cluster, "reached", 1)
    for node in cluster.nodes:
        wait_until(lambda n=node: head_of(cluster, n) == commit, what=f"{node} follows")
        started = time.monotonic()
        code, body, headers = http("GET", cluster.nodes[node].url + VALUES + f"?index={commit}")
        assert code == 200, body
        assert headers["X-Gitstore-Index"] == commit
        assert time.monotonic() - started < 3, f"{node} held a bare index it had reached"


def test_a_new_environment_read_on_a_lagging_replica_waits_for_it(cluster):
    _, replica = roles(cluster)
    cluster.partition(replica)  # the environment cannot reach it until healed
    try:
        body = json.dumps({"id": 7, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
        code, answer, headers = http(
            "POST", cluster.url + "/api/v1/config/environments", body.encode(), **JSON
        )
        assert code == 201, answer
        commit = headers["X-Gitstore-Commit"]
        assert not (cluster.nodes[replica].root / "environments/7.git").exists()
        threading.Timer(1.0, cluster.heal, (replica,)).start()
        url = cluster.nodes[replica].url + f"/api/v1/config/environments/7?index={commit}"
        code, answer, headers = http("GET", url)
    finally:
        cluster.heal(replica)
    assert code == 200, answer
    assert headers["X-Gitstore-Commit"] == commit


def test_a_write_that_reaches_a_replica_is_redirected_to_the_primary(cluster):
    primary, replica = roles(cluster)
    before = cluster.etcd_heads()[ENV_REPO]
    code, _, headers = set_key(cluster.nodes[replica].url, "redirected", 1)
    assert code == 307
    assert headers["Location"] == cluster.nodes[primary].url + VALUES + "/keys/set"
    assert cluster.etcd_heads()[ENV_REPO] == before
    push_ad = "/git/environments/1.git/info/refs?service=git-receive-pack"
    assert http("GET", cluster.nodes[replica].url + push_ad)[0] == 307
    fetch_ad = "/git/environments/1.git/info/refs?service=git-upload-pack"
    assert http("GET", cluster.nodes[replica].url + fetch_ad)[0] == 200


# -- labels ------------------------------------------------------------------------------------
LABELS = "/api/v1/config/environments/1/labels"
LABEL = "replicated-label"


def tag_of(cluster: Cluster, node: str, label: str = LABEL) -> str | None:
    """The tag object the node's `refs/tags/<label>` names, None without one."""
    done = subprocess.run(
        ["git", "--git-dir", str(cluster.nodes[node].root / ENV_REPO), "rev-parse", "-q",
         "--verify", f"refs/tags/{label}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() or None


def read_label(cluster: Cluster, node: str, label: str = LABEL) -> tuple[int, str]:
    code, body, _ = http("GET", f"{cluster.nodes[node].url}{VALUES}?version={label}")
    return code, body.decode() if isinstance(body, bytes) else body


def test_a_label_is_on_every_replica_and_one_made_on_a_replica_is_redirected(cluster):
    write_through_proxy(cluster, "labelled", "yes")
    body = json.dumps({"name": LABEL}).encode()
    code, answer, _ = http("POST", cluster.url + LABELS, body, **JSON)
    assert code == 201, answer
    primary, replica = roles(cluster)
    tag = tag_of(cluster, primary)
    assert tag
    # acknowledged: on the primary and --min-replicas peers at once; the rest follow
    assert sum(tag_of(cluster, n) == tag for n in cluster.nodes) >= 2
    for node in cluster.nodes:
        wait_until(lambda n=node: tag_of(cluster, n) == tag, what=f"the label on {node}")
        code, answer = read_label(cluster, node)
        assert code == 200, (node, answer)
        assert "labelled" in answer
    code, _, headers = http("POST", cluster.nodes[replica].url + LABELS, b'{"name": "x"}', **JSON)
    assert code == 307
    assert headers["Location"] == cluster.nodes[primary].url + LABELS
    assert tag_of(cluster, replica, "x") is None


def labelled(cluster: Cluster) -> str:
    """The tag of `LABEL`, made through the proxy unless an earlier test made it, once it is on
    every member (so that a test that needs it runs alone too)."""
    primary, _ = roles(cluster)
    if tag_of(cluster, primary) is None:
        body = json.dumps({"name": LABEL}).encode()
        code, answer, _ = http("POST", cluster.url + LABELS, body, **JSON)
        assert code == 201, answer
    tag = tag_of(cluster, primary)
    assert tag
    for node in cluster.nodes:
        wait_until(lambda n=node: tag_of(cluster, n) == tag, what=f"the label on {node}")
    return tag


def test_a_restarted_member_fetches_the_labels_it_lacks(cluster):
    _, replica = roles(cluster)
    tag = labelled(cluster)
    cluster.kill(replica)
    (cluster.nodes[replica].root / ENV_REPO / "refs/tags" / LABEL).unlink()  # as if it was down
    cluster.start_node(replica)
    wait_until(lambda: tag_of(cluster, replica) == tag, what="the label back on the member")
    roles(cluster)


def git_requests_since(log: Path, offset: int) -> list[str]:
    """The `/git/` requests a member logged after `offset` bytes of its log."""
    with log.open("rb") as lines:
        lines.seek(offset)
        found = [json.loads(line) for line in lines if b'"gitstore.requests"' in line]
    return [line["message"] for line in found if " /git/" in line["message"]]


def copy_live(source: Path, target: Path, attempts: int = 10) -> None:
    """Copy a running member's directory. Its maintenance may remove a pack or a temporary
    file between copytree's listing and its copy; a copy that met one is made again."""
    for _ in range(attempts - 1):
        try:
            shutil.copytree(source, target, symlinks=True)
            return
        except shutil.Error:
            shutil.rmtree(target, ignore_errors=True)
            time.sleep(0.2)
    shutil.copytree(source, target, symlinks=True)


def test_gathering_labels_fetches_only_where_the_label_digests_differ(cluster, tmp_path):
    """A member gathering a peer's labels (a new primary, a member that starts) first asks it
    for the digests of its labels, in one call, and fetches only the repositories where they
    differ: a fetch per repository made a takeover in a store of many environments slow."""
    labelled(cluster)
    primary, replica = roles(cluster)
    root = tmp_path / "copy"  # the replica's repositories, labels included
    copy_live(cluster.nodes[replica].root, root)
    follower = Follower(Repositories(root), cluster.secret, timeout=5.0)
    source = cluster.nodes[primary]
    before = source.log.stat().st_size
    assert follower.gather_labels([source.url]) == [source.url]
    assert git_requests_since(source.log, before) == []
    (root / ENV_REPO / "refs/tags" / LABEL).unlink()
    assert follower.gather_labels([source.url]) == [source.url]
    fetched = git_requests_since(source.log, before)
    # one fetch (one ref advertisement), of the environment's repository, not of the catalog's
    assert [line for line in fetched if line.startswith("GET")] == ["GET /git/<path:subpath> 200"]
    assert (root / ENV_REPO / "refs/tags" / LABEL).read_text().strip() == tag_of(cluster, primary)


# -- member authentication -------------------------------------------------------------------
def has_object(repo: Path, oid: str) -> bool:
    done = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "-e", oid], check=False)
    return done.returncode == 0


def test_member_calls_without_the_cluster_secret_are_refused_and_write_nothing(cluster):
    primary, replica = roles(cluster)
    node = cluster.nodes[replica]
    head = head_of(cluster, replica)
    blob = b"planted by a stranger\n"
    blob_id = hashlib.sha1(b"blob %d\0" % len(blob) + blob).hexdigest()
    objects = f"/cluster/v1/objects?repository={ENV_REPO}&commit={'1' * 40}&parent={head}"
    offer = json.dumps({"repository": ENV_REPO, "commit": head, "source": primary}).encode()
    strangers = [
        {},
        {HEADER: ClusterSecret(b"s" * 64).header_value()},  # another cluster's secret
        {HEADER: cluster.secret.header_value(time.time() - 3600)},  # a replayed old header
        {HEADER: "not-a-signature"},
    ]
    for headers in strangers:
        body = encode_objects([(3, blob)])
        code, answer, _ = http("POST", node.url + objects, body, **headers)
        assert code == 401, answer
        assert json.loads(answer)["status"] == 401 and HEADER in json.loads(answer)["message"]
        code, answer, _ = http("POST", node.url + "/cluster/v1/replicate", offer, **JSON, **headers)
        assert code == 401, answer
        assert http("GET", node.url + "/cluster/v1/status", **headers)[0] == 401
    assert not has_object(node.root / ENV_REPO, blob_id)
    assert head_of(cluster, replica) == head
    code, answer, _ = http("GET", node.url + "/cluster/v1/status", **cluster.member_headers())
    assert code == 200 and json.loads(answer)["node"] == replica


def test_a_cluster_with_an_access_file_and_no_anonymous_reads_replicates(cluster, tmp_path):
    """Members fetch commits from each other over /git/, which the access file guards: their
    signature lets them read, and new environments and key sets reach every node."""
    access = AccessFile(tmp_path)
    access.add_user("operator", parse_grants(["admin"]), "operator-pw")
    auth = {"Authorization": f"Bearer {access.create_token('operator', 'tests')[1]}"}
    for node in cluster.nodes.values():
        shutil.copy2(tmp_path / "access.yaml", node.root / "access.yaml")
    try:
        assert http("GET", cluster.url + VALUES)[0] == 401  # no anonymous reads
        body = json.dumps({"id": 3, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
        url = cluster.url + "/api/v1/config/environments"
        code, answer, _ = http("POST", url, body.encode(), **JSON, **auth)
        assert code == 201, answer
        created = cluster.etcd_heads()["environments/3.git"]
        code, _, headers = http(
            "PUT", cluster.url + VALUES + "/keys/set", b'[["guarded", 1]]', **JSON, **auth
        )
        assert code == 204
        for name, node in cluster.nodes.items():
            wait_until(lambda n=name: head_of(cluster, n, "environments/3.git") == created)
            wait_until(lambda n=name: head_of(cluster, n) == headers["X-Gitstore-Commit"])
            fetch_ad = node.url + "/git/environments/1.git/info/refs?service=git-upload-pack"
            assert http("GET", fetch_ad)[0] == 401  # a stranger's fetch
            assert http("GET", fetch_ad, **cluster.member_headers())[0] == 200
        push_ad = "/git/environments/1.git/info/refs?service=git-receive-pack"
        primary = cluster.nodes[cluster.wait_for_primary()]
        assert http("GET", primary.url + push_ad, **cluster.member_headers())[0] == 401
        code, _, _ = http("DELETE", cluster.url + "/api/v1/config/environments/3", **auth)
        assert code == 204
    finally:
        for node in cluster.nodes.values():
            (node.root / "access.yaml").unlink()


def test_readiness_names_the_role(cluster):
    primary, replica = roles(cluster)
    ready = {
        (node, role): http("GET", cluster.nodes[node].url + f"/readyz?role={role}")[0]
        for node in (primary, replica)
        for role in ("primary", "replica")
    }
    assert ready == {
        (primary, "primary"): 200,
        (primary, "replica"): 503,
        (replica, "primary"): 503,
        (replica, "replica"): 200,
    }
    code, body, _ = http("GET", cluster.nodes[replica].url + "/readyz?role=leader")
    assert code == 400 and "role" in json.loads(body)["message"]
    code, body, _ = http("GET", cluster.nodes[replica].url + "/readyz?role=replica")
    assert json.loads(body)["cluster"]["primary"] == primary


def test_environments_created_and_deleted_on_the_primary_are_on_every_node(cluster):
    body = json.dumps({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    url = cluster.url + "/api/v1/config/environments"
    code, answer, _ = http("POST", url, body.encode(), **JSON)
    assert code == 201, answer
    commit = cluster.etcd_heads()["environments/2.git"]
    for node in cluster.nodes:
        wait_until(lambda n=node: head_of(cluster, n, "environments/2.git") == commit)
    assert http("DELETE", cluster.url + "/api/v1/config/environments/2")[0] == 204
    for node in cluster.nodes:
        path = cluster.nodes[node].root / "environments/2.git"
        wait_until(lambda p=path: not p.exists(), what=f"archive on {node}")
        assert list((cluster.nodes[node].root / "archive/environments").glob("2-*.git"))


# -- fencing -----------------------------------------------------------------------------------
def test_a_deposed_primary_cannot_commit(cluster):
    """The old primary still believes it leads (its coordinator is frozen and its word says
    primary), yet etcd refuses its transaction: every write is refused (writers sent at once,
    so that rounds of several are refused whole) and nothing moves."""
    old = cluster.wait_for_primary()
    node = cluster.nodes[old]
    state_file = node.root / ".cluster/state.json"
    word = json.loads(state_file.read_text())
    coordinator = coordinator_pid(cluster, old)
    os.kill(coordinator, signal.SIGSTOP)  # no keep-alive: its lease expires
    try:
        new = cluster.wait_for_primary(other_than=old)
        before = cluster.etcd_heads()[ENV_REPO]
        local = head_of(cluster, old)
        word.update(updated=time.time(), primary_until=time.time() + 60)
        state_file.write_text(json.dumps(word))
        answers: list[tuple[int, bytes]] = []

        def write(i: int) -> None:
            answers.append(set_key(node.url, f"deposed{i}", i)[:2])

        # at once: queued writers go in rounds, and a refused round refuses every writer in it
        writers = [threading.Thread(target=write, args=(i,)) for i in range(6)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        assert len(answers) == 6
        for code, body in answers:
            assert code == 503, body
            assert "lost the leader lease" in json.loads(body)["message"]
        assert cluster.etcd_heads()[ENV_REPO] == before
        assert head_of(cluster, old) == local
    finally:
        os.kill(coordinator, signal.SIGCONT)
    wait_until(lambda: (cluster.status(old) or {}).get("role") == "replica")
    assert cluster.primary() == new


def test_the_new_primary_of_a_failover_serves_the_labels(cluster):
    primary, _ = roles(cluster)  # another node than the label's (the fencing test deposed it)
    code, answer = read_label(cluster, primary)
    assert code == 200, answer
    code, answer, _ = http("GET", f"{cluster.url}{LABELS}")
    assert code == 200 and LABEL in (answer.decode() if isinstance(answer, bytes) else answer)


def test_a_write_no_replica_can_take_is_refused_and_not_committed(cluster):
    primary, _ = roles(cluster)
    others = [n for n in cluster.nodes if n != primary]
    before, local = cluster.etcd_heads()[ENV_REPO], head_of(cluster, primary)
    for name in others:
        cluster.kill(name)
    try:
        code, body, _ = set_key(cluster.nodes[primary].url, "unreplicated", 1)
        assert code == 503, body
        assert "replicas needed" in json.loads(body)["message"]
        assert cluster.etcd_heads()[ENV_REPO] == before
        assert head_of(cluster, primary) == local
    finally:
        for name in others:
            cluster.start_node(name)
    roles(cluster)


# -- chaos -------------------------------------------------------------------------------------
class Writers(Background):
    """REST writers (a key each) and git pushers (a file each) through HAProxy; they remember
    what was acknowledged."""

    def __init__(self, cluster: Cluster, workdir: Path, rest: int = 6, pushers: int = 2) -> None:
        super().__init__()
        self.cluster = cluster
        self.workdir = workdir
        self.keys: dict[str, int] = {}
        self.pushed: list[str] = []
        self.errors = 0
        self.codes: dict = {}
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._rest, args=(i,)) for i in range(rest)]
        self.threads += [threading.Thread(target=self._push, args=(i,)) for i in range(pushers)]

    def _rest(self, writer: int) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            key = f"chaos-{writer}-{n}"
            try:
                code, _, _ = set_key(self.cluster.url, key, n, timeout=15)
            except OSError:
                code = None
            with self._lock:
                if code == 204:
                    self.keys[key] = n
                else:
                    self.errors += 1
                    self.codes[code] = self.codes.get(code, 0) + 1
            if code != 204:
                time.sleep(0.1)

    def _push(self, pusher: int) -> None:
        clone = self.workdir / f"pusher-{pusher}"
        env = clean_env(self.workdir / "home")
        git = ["git", "-C", str(clone), "-c", "user.name=p", "-c", "user.email=p@example.com"]
        url = self.cluster.url + "/git/environments/1.git"
        while not self.stop.is_set() and not (clone / ".git").exists():
            _quiet(["git", "clone", "-q", url, str(clone)], env)
        n = 0
        while not self.stop.is_set():
            n += 1
            _quiet([*git, "pull", "-q", "--rebase"], env)
            folder = clone / f"nodes/{100 + pusher}/values"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "astute.yaml").write_text(f"pushed: {n}\n")
            _quiet([*git, "add", "-A"], env)
            _quiet([*git, "commit", "-qm", f"push {n}"], env)
            sha = subprocess.run(
                [*git, "rev-parse", "HEAD"], env=env, capture_output=True, text=True
            ).stdout.strip()
            done = subprocess.run([*git, "push", "-q", "origin", "HEAD:main"], env=env,
                                  capture_output=True, check=False, timeout=60)  # fmt: skip
            if done.returncode == 0:
                with self._lock:
                    self.pushed.append(sha)
            else:
                time.sleep(0.3)


def _quiet(command: list[str], env: dict[str, str]) -> None:
    subprocess.run(command, env=env, capture_output=True, check=False, timeout=60)


def test_chaos_no_acknowledged_write_is_lost(cluster, tmp_path):
    kills = 3  # the third round also cuts a primary off (bench/ha.py runs the long chaos)
    started = time.monotonic()
    with Writers(cluster, tmp_path) as writers:
        for round_ in range(kills):
            print("round", round_, time.monotonic() - started, len(writers.keys), writers.codes)
            time.sleep(1.5)
            primary = cluster.wait_for_primary()
            cluster.kill(primary)
            cluster.wait_for_primary(other_than=primary)
            cluster.start_node(primary)
            if round_ == 2:
                cut = cluster.wait_for_primary()
                cluster.partition(cut)
                cluster.wait_for_primary(other_than=cut)
                time.sleep(1.0)
                cluster.heal(cut)
        time.sleep(1.5)
    print(f"chaos: {len(writers.keys)} writes, {len(writers.pushed)} pushes acknowledged, "
          f"{writers.errors} refused or failed {writers.codes}")  # fmt: skip
    assert len(writers.keys) > 20 and writers.pushed, "the writers made no progress"
    _settled(cluster)
    etcd = cluster.etcd_heads()
    # An environment archived earlier in the module (etcd's "-") must be archived on every node
    # too: the loop compares it as it compares commits (run alone, there is none to compare).
    for name in cluster.nodes:
        for repo, commit in etcd.items():
            assert head_of(cluster, name, repo) == commit, f"{name}: {repo} is not etcd's"
        code, body, headers = http("GET", cluster.nodes[name].url + VALUES)
        assert code == 200 and headers["X-Gitstore-Commit"] == etcd[ENV_REPO]
        document = json.loads(body)
        lost = {k: v for k, v in writers.keys.items() if document.get(k) != v}
        assert lost == {}, f"{name} lost acknowledged writes"
        git_dir = str(cluster.nodes[name].root / ENV_REPO)
        for sha in writers.pushed:
            ancestor = ["git", "--git-dir", git_dir, "merge-base", "--is-ancestor", sha, "main"]
            assert subprocess.run(ancestor, check=False).returncode == 0, f"{name} lost {sha}"
        for repo in (r for r, commit in etcd.items() if commit != "-"):
            fsck = ["git", "--git-dir", str(cluster.nodes[name].root / repo), "fsck", "--strict"]
            done = subprocess.run(fsck, capture_output=True, text=True, check=False)
            assert done.returncode == 0, f"{name} {repo}: {done.stdout}{done.stderr}"


def _settled(cluster: Cluster) -> None:
    """Every node alive and following etcd's heads."""
    cluster.wait_for_primary()

    def following() -> bool:
        etcd = cluster.etcd_heads()
        return all(
            head_of(cluster, n, repo) == commit
            for n in cluster.nodes
            for repo, commit in etcd.items()
        )

    try:
        wait_until(following, timeout=30, what="every node following etcd")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_diagnosis(cluster)}") from None


def _diagnosis(cluster: Cluster) -> str:
    """What each node says and logged of note: for a failure that is gone with its folder."""
    lines = [f"etcd: {cluster.etcd_heads()}"]
    for name, node in cluster.nodes.items():
        heads = {repo: head_of(cluster, name, repo) for repo in cluster.etcd_heads()}
        lines.append(f"{name}: alive={node.alive()} status={cluster.status(name)} heads={heads}")
        logged = node.log.read_text(errors="replace").splitlines()
        lines += [line[:300] for line in logged if '"level": "info"' not in line][-15:]
    return "\n".join(lines)
