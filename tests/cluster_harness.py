"""A gitstore cluster on loopback, all real processes: one etcd member, N `gitstore serve`
nodes (separate store roots, gunicorn each) and HAProxy in front. Used by `tests/cluster/` and
`bench/ha.py`.

Each node reaches etcd through a TCP relay of its own (`relay.py`): SIGSTOP of a node's relay
is a partition of that node from etcd (its connections stall, new ones are never answered)
while HAProxy and the peers still reach it, which is the failure fencing must survive.
SIGKILL of a node's process group (arbiter, workers, coordinator) is a crash.

Every node gets the same cluster secret (`<root>/cluster.key`, made in the seed when it has
none); `member_headers()` signs a call as a member would.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gitstore.cluster.secret import KEY_FILE as CLUSTER_KEY_FILE
from gitstore.cluster.secret import ClusterSecret
from gitstore.cluster.secret import create as create_cluster_secret

ETCD = "/usr/bin/etcd"
HAPROXY = "/usr/sbin/haproxy"
GITSTORE = str(Path(sys.executable).with_name("gitstore"))
RELAY = Path(__file__).with_name("cluster_relay.py")


@dataclass(frozen=True)
class Version:
    """The gitstore a node runs: this checkout's `gitstore` (the default), or another version's
    program. Another version runs without this process's PYTHONPATH and in its log's folder
    (`python -c` looks in the working directory first), so that it and every process it starts
    (coordinator, maintenance, git hooks) import that version's own code."""

    program: str = GITSTORE
    inherits_path: bool = True


THIS_VERSION = Version()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(method: str, url: str, body: bytes | None = None, timeout: float = 30.0, **headers):
    """(status, body, headers) of one request (headers: case-insensitive); redirects are not
    followed."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as answer:
            return answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Node:
    """One member: its store root, port, relay to etcd and `gitstore serve` process group."""

    def __init__(self, name: str, root: Path, log: Path, version: Version) -> None:
        self.name = name
        self.root = root
        self.log = log
        self.version = version  # what start_node runs; an upgrade changes it
        self.host = "127.0.0.1"
        self.port = free_port()
        self.relay_port = free_port()
        self.url = f"http://{self.host}:{self.port}"
        self.process: subprocess.Popen | None = None
        self.relay: subprocess.Popen | None = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Cluster:
    """Start with `start()`, stop with `stop()` (or use it as a context manager)."""

    def __init__(
        self,
        workdir: Path,
        seed: Path,
        nodes: int = 3,
        workers: int = 2,
        version: Version = THIS_VERSION,
        primary_timeout: float = 30.0,
    ) -> None:
        self.workdir = Path(workdir)
        self.primary_timeout = primary_timeout  # a store of many repositories takes longer
        self.seed = seed
        self.workers = workers
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        self.proxy_port = free_port()
        self.url = f"http://127.0.0.1:{self.proxy_port}"
        names = [chr(ord("a") + i) for i in range(nodes)]
        self.nodes = {
            n: Node(n, self.workdir / n, self.workdir / f"{n}.log", version) for n in names
        }
        self._etcd: subprocess.Popen | None = None
        self._haproxy: subprocess.Popen | None = None
        self.secret: ClusterSecret | None = None  # made or read by start()

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- start and stop --------------------------------------------------------------------
    def start(self) -> None:
        key = self.seed / CLUSTER_KEY_FILE
        if not key.exists():
            create_cluster_secret(key)
        self.secret = ClusterSecret.load(key)
        self._start_etcd()
        for node in self.nodes.values():
            shutil.copytree(self.seed, node.root, symlinks=True)
            self._start_relay(node)
            self._launch(node)
        for node in self.nodes.values():  # the nodes boot side by side: seconds each
            self._wait_serving(node)
        self._start_haproxy()
        self.wait_for_primary(timeout=self.primary_timeout)

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.alive():
                self.kill(node.name)
        procs = [n.process for n in self.nodes.values()] + [n.relay for n in self.nodes.values()]
        for proc in [*procs, self._haproxy, self._etcd]:
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def _start_etcd(self) -> None:
        data = self.workdir / "etcd"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        self._etcd = _spawn(
            [ETCD, "--data-dir", str(data), "--name", "e1",
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"e1={peer}", "--log-level", "warn"],
            self.workdir / "etcd.log",
        )  # fmt: skip
        _wait(lambda: _answers(client + "/health"), "etcd", self.workdir / "etcd.log")

    def _start_relay(self, node: Node) -> None:
        node.relay = _spawn(
            [sys.executable, str(RELAY), str(node.relay_port), str(self.etcd_port)],
            self.workdir / f"{node.name}-relay.log",
        )

    def start_node(self, name: str) -> None:
        node = self.nodes[name]
        self._launch(node)
        self._wait_serving(node)

    def _launch(self, node: Node) -> None:
        peers = ",".join(f"{n.name}={n.url}" for n in self.nodes.values())
        node.process = _spawn(
            [node.version.program, "serve", "--root", str(node.root), "--port", str(node.port),
             "--workers", str(self.workers), "--min-free-disk", "0",
             "--cluster", f"etcd://127.0.0.1:{node.relay_port}", "--node-name", node.name,
             "--peers", peers],
            node.log,
            append=True,
            inherits_path=node.version.inherits_path,
        )  # fmt: skip

    def _wait_serving(self, node: Node) -> None:
        _wait(lambda: _answers(node.url + "/healthz"), f"node {node.name}", node.log)

    def _start_haproxy(self) -> None:
        config = self.workdir / "haproxy.cfg"
        config.write_text(haproxy_config(self.proxy_port, self.nodes.values()))
        self._haproxy = _spawn([HAPROXY, "-db", "-f", str(config)], self.workdir / "haproxy.log")
        _wait(lambda: _port_open(self.proxy_port), "haproxy")

    # -- faults ----------------------------------------------------------------------------
    def kill(self, name: str) -> None:
        """SIGKILL every process of the node (a crash of its machine, as far as it knows)."""
        node = self.nodes[name]
        os.killpg(node.process.pid, signal.SIGKILL)
        node.process.wait()
        for pid in _pids_of_root(node.root):  # git processes in sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def terminate(self, name: str, wait: bool = True) -> None:
        """Stop the node as an init system does: SIGTERM to every process of it. Its coordinator
        revokes the lease at once while the workers finish the requests they hold (`wait` for
        them: seconds, as idle keep-alive connections close)."""
        node = self.nodes[name]
        os.killpg(node.process.pid, signal.SIGTERM)
        if wait:
            node.process.wait(timeout=30)

    def partition(self, name: str) -> None:
        """Cut the node off etcd (its relay stops moving bytes); peers still reach it."""
        os.kill(self.nodes[name].relay.pid, signal.SIGSTOP)

    def heal(self, name: str) -> None:
        os.kill(self.nodes[name].relay.pid, signal.SIGCONT)

    # -- looking -------------------------------------------------------------------------
    def status(self, name: str) -> dict | None:
        try:
            url = self.nodes[name].url + "/cluster/v1/status"
            code, body, _ = http("GET", url, timeout=2, **self.member_headers())
        except OSError:
            return None
        return json.loads(body) if code == 200 else None

    def member_headers(self) -> dict[str, str]:
        """What a member's call carries: a signature made with the cluster secret."""
        return self.secret.headers()

    def primary(self) -> str | None:
        """The node that says it is primary and that HAProxy-style checks accept."""
        for name, node in self.nodes.items():
            if not node.alive():
                continue
            try:
                code, _, _ = http("GET", node.url + "/readyz?role=primary", timeout=2)
            except OSError:
                continue
            if code == 200:
                return name
        return None

    def wait_for_primary(self, timeout: float = 30.0, other_than: str | None = None) -> str:
        found: list[str] = []

        def elected() -> bool:
            name = self.primary()
            if name and name != other_than:
                found.append(name)
                return True
            return False

        _wait(elected, "a primary", timeout=timeout)
        return found[-1]

    def etcd_heads(self) -> dict[str, str]:
        """{repository: commit} as etcd holds them."""
        import base64

        prefix = "/gitstore/repositories/"
        request = {
            "key": base64.b64encode(prefix.encode()).decode(),
            "range_end": base64.b64encode(prefix[:-1].encode() + b"0").decode(),
        }
        _, body, _ = http(
            "POST",
            f"{self.etcd_url}/v3/kv/range",
            json.dumps(request).encode(),
        )
        kvs = json.loads(body).get("kvs", [])
        return {
            base64.b64decode(kv["key"]).decode()[len(prefix) :]: base64.b64decode(
                kv["value"]
            ).decode()
            for kv in kvs
        }


class PrimarySampler:
    """Asks every member `/readyz?role=primary` at once every 100 ms; records the most that
    answered 200 in one round."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.most = 0
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._pool = ThreadPoolExecutor(max_workers=len(cluster.nodes))

    def __enter__(self) -> PrimarySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._pool.shutdown()

    def _ready(self, url: str) -> bool:
        try:
            return http("GET", url + "/readyz?role=primary", timeout=0.5)[0] == 200
        except OSError:
            return False

    def _run(self) -> None:
        urls = [node.url for node in self.cluster.nodes.values()]
        while not self._stop.wait(0.1):
            ready = sum(self._pool.map(self._ready, urls))
            self.most = max(self.most, ready)
            self.rounds += 1


def haproxy_config(port: int, nodes) -> str:
    """Writes (and every part of a git push) to the primary, reads to every ready member."""
    servers = "\n".join(f"    server {n.name} {n.host}:{n.port} check" for n in nodes)
    return f"""global
    maxconn 2000

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    option redispatch
    retries 3

frontend gitstore
    bind 127.0.0.1:{port}
    http-request deny if {{ path_beg /cluster/ }}
    acl reading method GET HEAD
    acl fetching path_end /git-upload-pack
    acl pushing path_end /git-receive-pack
    acl pushing url_param(service) -m str git-receive-pack
    use_backend primary if pushing
    use_backend members if reading or fetching
    default_backend primary

backend primary
    option httpchk GET /readyz?role=primary
    http-check expect status 200
    default-server inter 250ms fall 1 rise 1
{servers}

backend members
    option httpchk GET /readyz
    http-check expect status 200
    retry-on conn-failure empty-response response-timeout 503
    default-server inter 500ms fall 2 rise 1
{servers}
"""


def clean_env(home: Path) -> dict[str, str]:
    """The environment of every process started here: no git or gitstore settings of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSTORE_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1")
    return env


def _spawn(
    args: list[str], log: Path, append: bool = False, inherits_path: bool = True
) -> subprocess.Popen:
    env = clean_env(log.parent / "home")
    if not inherits_path:
        env.pop("PYTHONPATH", None)
    cwd = None if inherits_path else log.parent
    with log.open("a" if append else "w") as out:
        return subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=cwd
        )


def _wait(ready, what: str, log: Path | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.1)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} not ready after {timeout:.0f}s\n{tail}")


def _answers(url: str) -> bool:
    try:
        return http("GET", url, timeout=2)[0] == 200
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _pids_of_root(root: Path) -> list[int]:
    """Processes that work on `root`: named on their command line, run inside it, or given it
    as git's project root (a `git http-backend` of a killed worker runs in a session of its
    own and outlives the node's process group)."""
    found = []
    mark = str(root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd").encode()
            if (
                mark in (entry / "cmdline").read_bytes()
                or cwd.startswith(mark)
                or (b"GIT_PROJECT_ROOT=" + mark + b"\0" in (entry / "environ").read_bytes())
            ):
                found.append(int(entry.name))
        except OSError:
            pass
    return found
