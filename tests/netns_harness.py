"""The cluster of cluster_harness.py on hosts of its own: Linux network namespaces joined by a
bridge, a 3-member etcd cluster, 3 `gitstore serve` members on their own addresses, HAProxy in
the test's namespace. Faults are real network faults, made inside the test's namespaces only:
`iptables` DROP rules (packets vanish: no RST, as with a dead cable or a blackholed host).

    hub namespace: bridge ─┬─ veth ─ host namespace (the test, HAProxy): 10.x.y.1
                           ├─ veth ─ gs a / b / c: 10.x.y.11-13, port 8000
                           └─ veth ─ etcd e1 / e2 / e3: 10.x.y.21-23, ports 2379 and 2380

The subnet is picked unused by this machine; the only route added outside the namespaces is the
host veth's own /24 (no traffic leaves them), and `stop()` removes every namespace and link.
Member `a` talks to etcd member `e1`, `b` to `e2`, `c` to `e3` (a member names one endpoint).
Needs root, `ip` and `iptables`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

from cluster_harness import ETCD, GITSTORE, Cluster, Node, _answers, _spawn, _wait

IP = shutil.which("ip") or "/usr/sbin/ip"
MEMBER_PORT = 8000


def available() -> str | None:
    """None when this machine can run the harness, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    return None


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


class Network:
    """The namespaces, the bridge and the veth pairs; faults by host name."""

    def __init__(self, tag: str) -> None:
        self.tag = tag  # short: interface names are at most 15 characters
        self.subnet = _free_subnet()
        self.hub = f"{tag}hub"
        self.hosts: dict[str, str] = {}  # name -> address
        self._links = 0

    def address(self, last: int) -> str:
        return f"{self.subnet}.{last}"

    def namespace(self, host: str) -> str:
        return f"{self.tag}{host}"

    def start(self) -> None:
        _run(IP, "netns", "add", self.hub)
        _run(IP, "-n", self.hub, "link", "add", "br0", "type", "bridge")
        _run(IP, "-n", self.hub, "link", "set", "br0", "up")
        outer, inner = self._veth()
        _run(IP, "link", "set", outer, "netns", self.hub)
        _run(IP, "-n", self.hub, "link", "set", outer, "master", "br0", "up")
        _run(IP, "addr", "add", f"{self.address(1)}/24", "dev", inner)
        _run(IP, "link", "set", inner, "up")
        self._host_link = inner

    def add_host(self, host: str, last: int) -> str:
        namespace = self.namespace(host)
        _run(IP, "netns", "add", namespace)
        outer, inner = self._veth()
        _run(IP, "link", "set", outer, "netns", self.hub)
        _run(IP, "-n", self.hub, "link", "set", outer, "master", "br0", "up")
        _run(IP, "link", "set", inner, "netns", namespace)
        _run(IP, "-n", namespace, "link", "set", inner, "name", "eth0")
        _run(IP, "-n", namespace, "addr", "add", f"{self.address(last)}/24", "dev", "eth0")
        _run(IP, "-n", namespace, "link", "set", "eth0", "up")
        _run(IP, "-n", namespace, "link", "set", "lo", "up")
        self.hosts[host] = self.address(last)
        return namespace

    def _veth(self) -> tuple[str, str]:
        self._links += 1
        outer, inner = f"{self.tag}o{self._links}", f"{self.tag}i{self._links}"
        _run(IP, "link", "add", inner, "type", "veth", "peer", "name", outer)
        return outer, inner

    def stop(self) -> None:
        for host in list(self.hosts):
            with contextlib.suppress(subprocess.CalledProcessError):
                _run(IP, "netns", "del", self.namespace(host))
        with contextlib.suppress(subprocess.CalledProcessError, AttributeError):
            _run(IP, "link", "del", self._host_link)
        with contextlib.suppress(subprocess.CalledProcessError):
            _run(IP, "netns", "del", self.hub)

    # -- faults ----------------------------------------------------------------------------
    def drop(self, host: str, others: list[str] | None = None) -> None:
        """Drop every packet between `host` and `others` (host names; None: everyone), both
        ways, silently."""
        for address in [None] if others is None else [self.hosts[o] for o in others]:
            match = [] if address is None else ["-s", address]
            out = [] if address is None else ["-d", address]
            self._iptables(host, "-A", "INPUT", "-i", "eth0", *match, "-j", "DROP")
            self._iptables(host, "-A", "OUTPUT", "-o", "eth0", *out, "-j", "DROP")

    def heal(self, host: str) -> None:
        self._iptables(host, "-F")

    def _iptables(self, host: str, *rule: str) -> None:
        _run(IP, "netns", "exec", self.namespace(host), "iptables", "-w", *rule)


def _free_subnet() -> str:
    """A 10.231.N /24 no interface of this machine uses."""
    used = subprocess.run([IP, "-4", "addr"], capture_output=True, text=True).stdout
    routes = subprocess.run([IP, "-4", "route"], capture_output=True, text=True).stdout
    for n in range(os.getpid() % 200 + 20, 255):
        subnet = f"10.231.{n}"
        if f"{subnet}." not in used and f"{subnet}." not in routes:
            return subnet
    raise RuntimeError("no free 10.231.N.0/24 subnet")


class NetnsCluster(Cluster):
    """`Cluster` with each member and each etcd member on a host of its own."""

    ETCD_MEMBERS = ("e1", "e2", "e3")

    def __init__(self, workdir: Path, seed: Path, workers: int = 2) -> None:
        super().__init__(workdir, seed, nodes=3, workers=workers)
        self.network = Network(f"gh{os.getpid() % 10000}")
        for i, node in enumerate(self.nodes.values()):
            node.host = self.network.address(11 + i)
            node.port = MEMBER_PORT
            node.url = f"http://{node.host}:{node.port}"
        self.etcd_hosts = {e: self.network.address(21 + i) for i, e in enumerate(self.ETCD_MEMBERS)}
        self.etcds: dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        self.network.start()
        try:
            for node in self.nodes.values():
                self.network.add_host(node.name, int(node.host.rsplit(".", 1)[1]))
            for name, address in self.etcd_hosts.items():
                self.network.add_host(name, int(address.rsplit(".", 1)[1]))
            super().start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        super().stop()
        for process in self.etcds.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.network.stop()

    # -- etcd, three members ---------------------------------------------------------------
    def _start_etcd(self) -> None:
        for name in self.ETCD_MEMBERS:
            self.start_etcd(name)
        for name in self.ETCD_MEMBERS:
            url = f"http://{self.etcd_hosts[name]}:2379/health"
            _wait(lambda u=url: _answers(u), f"etcd {name}", self.workdir / f"{name}.log")
        self.etcd_port = 2379

    def start_etcd(self, name: str) -> None:
        address = self.etcd_hosts[name]
        peers = ",".join(f"{e}=http://{a}:2380" for e, a in self.etcd_hosts.items())
        self.etcds[name] = _spawn(
            [IP, "netns", "exec", self.network.namespace(name), ETCD,
             "--name", name, "--data-dir", str(self.workdir / f"{name}.etcd"),
             "--listen-client-urls", f"http://{address}:2379",
             "--advertise-client-urls", f"http://{address}:2379",
             "--listen-peer-urls", f"http://{address}:2380",
             "--initial-advertise-peer-urls", f"http://{address}:2380",
             "--initial-cluster", peers, "--initial-cluster-token", self.network.tag,
             "--heartbeat-interval", "100", "--election-timeout", "1000",
             "--log-level", "warn"],
            self.workdir / f"{name}.log",
            append=True,
        )  # fmt: skip

    def kill_etcd(self, name: str) -> None:
        process = self.etcds[name]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def etcd_of(self, node: str) -> str:
        return self.ETCD_MEMBERS[list(self.nodes).index(node)]

    def etcd_heads(self) -> dict[str, str]:
        for name, process in self.etcds.items():
            if process.poll() is None:
                self.etcd_url = f"http://{self.etcd_hosts[name]}:2379"
                return super().etcd_heads()
        raise RuntimeError("no etcd member runs")

    # -- members ---------------------------------------------------------------------------
    def _start_relay(self, node: Node) -> None:
        """No relay: partitions are made with the network."""

    def _launch(self, node: Node) -> None:
        peers = ",".join(f"{n.name}={n.url}" for n in self.nodes.values())
        etcd = self.etcd_hosts[self.etcd_of(node.name)]
        node.process = _spawn(
            [IP, "netns", "exec", self.network.namespace(node.name), GITSTORE, "serve",
             "--root", str(node.root), "--host", node.host, "--port", str(node.port), "--open",
             "--workers", str(self.workers), "--min-free-disk", "0",
             "--cluster", f"etcd://{etcd}:2379", "--node-name", node.name, "--peers", peers],
            node.log,
            append=True,
        )  # fmt: skip

    def partition(self, name: str) -> None:
        """Cut member `name` off its etcd member (and every other): peers still reach it."""
        self.network.drop(name, list(self.ETCD_MEMBERS))

    def heal(self, name: str) -> None:
        self.network.heal(name)
