"""Fixtures of the Hiera tests: a Fuel store, the real server under gunicorn, confined Puppet.

The store holds environment 1 built through the facade from the real Fuel data in
`tests/data/fuel` (astute.yaml of a compute and a primary-controller node, openstack-config
override documents), with an inventory carrying fqdns so Puppet can name nodes by certname.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from fuel_data import FUEL, newton_release
from live_server import (
    GUNICORN,
    free_port,
    self_signed_certificate,
    stop_process,
    wait_until_answers,
)

from gitstore import Store
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

PROJECT = Path(__file__).resolve().parents[2]
FUEL_DATA = FUEL
MODULE = PROJECT / "puppet"
EXAMPLE_HIERA = MODULE / "examples" / "hiera.yaml"
PROBE_MODULE = Path(__file__).resolve().parent / "puppet_modules" / "probe"

COMPUTE, CONTROLLER = "127", "125"
FQDN = {COMPUTE: "node-127.test.domain.local", CONTROLLER: "node-125.test.domain.local"}
AUTHOR = Author("hiera tests", "hiera@example.com")

FUEL_RESOURCES = ["astute", "globals", "override/plugins", "override/node"]
CONFIG_RESOURCES = [
    "override/configuration/node",
    "override/configuration/role",
    "override/configuration/cluster",
]


def _fuel(name: str) -> dict:
    return yaml.safe_load((FUEL_DATA / name).read_text())


def build_fuel_store(root: Path) -> Store:
    """Environment 1, hierarchy [nodes], Fuel data at the levels Fuel's hierarchy reads."""
    store = Store.init(root)
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in FUEL_RESOURCES]}
    )
    store.components.create(
        {
            "name": "openstack-config",
            "resource_definitions": [{"name": n} for n in CONFIG_RESOURCES],
        }
    )
    store.environments.create(
        {"id": 1, "components": ["fuel", "openstack-config"], "hierarchy_levels": ["nodes"]}
    )
    node = [("nodes", COMPUTE)]
    documents = {
        (tuple(node), "astute", "values"): _fuel("astute/compute.yaml"),
        ((("nodes", CONTROLLER),), "astute", "values"): _fuel("astute/primary-controller.yaml"),
        ((), "globals", "values"): {
            "management_vip": "10.109.1.2",
            "debug": False,
            "syslog_log_facility_nova": "LOG_LOCAL6",
            "lookup_options": {"configuration": {"merge": "deep"}},
        },
        ((), "override/plugins", "values"): {
            "debug": True,
            "libvirt_type": "kvm",
            **_fuel("hiera-override/openstack-network-plugins-ml2.yaml"),
        },
        (tuple(node), "override/node", "values"): {"libvirt_type": "lxc"},
        ((), "override/configuration/cluster", "values"): _fuel(
            "hiera-override/keystone-keystone.yaml"
        ),
        (tuple(node), "override/configuration/role", "values"): _fuel(
            "hiera-override/openstack-network-server-config.yaml"
        ),
        (tuple(node), "override/configuration/node", "values"): {
            "configuration": {
                **_fuel("hiera-override/openstack-network-agents-dhcp.yaml")["configuration"],
                "keystone_config": {"DEFAULT/crypt_strength": {"value": 7000}},
            },
        },
    }
    store.config.write_many(1, documents, "hiera tests: Fuel data", AUTHOR)
    add_inventory(store, {COMPUTE: FQDN[COMPUTE], CONTROLLER: FQDN[CONTROLLER]})
    return store


def add_inventory(store: Store, nodes: dict[str, str]) -> None:
    """`inventory/nodes/<id>.yaml` with an fqdn for each node, in one real commit."""

    def operation(snapshot):
        changes = ChangeSet("inventory: add nodes")
        for node_id, fqdn in nodes.items():
            record = {"id": int(node_id), "fqdn": fqdn, "roles": ["compute"]}
            changes.put(f"inventory/nodes/{node_id}.yaml", yaml.safe_dump(record).encode())
        return changes

    store.environment_repo(1).update(operation, AUTHOR)


def attach_newton(store: Store) -> None:
    """Fuel's Newton release (roles with tags) for environment 1; node 125 becomes a controller.

    Then the nodes can carry instance tags of the release's tags (`database:1`).
    """
    release = store.releases.create(newton_release(), AUTHOR)
    store.environments.update(1, {"release": release.data["id"]}, AUTHOR)
    store.nodes.update(1, CONTROLLER, {"roles": ["controller"]}, AUTHOR)


@dataclass
class Server:
    """A gunicorn serving a store; `requests_to(prefix)` counts access-log lines."""

    url: str
    root: Path
    access_log: Path
    process: subprocess.Popen
    ca_file: Path | None = None

    def requests_to(self, fragment: str) -> int:
        if not self.access_log.exists():
            return 0
        return sum(fragment in line for line in self.access_log.read_text().splitlines())

    def settled_count(self, fragment: str) -> int:
        """The count once the log stops growing (gunicorn logs right after the response)."""
        count, deadline = -1, time.monotonic() + 2
        while time.monotonic() < deadline:
            now = self.requests_to(fragment)
            if now == count:
                return now
            count = now
            time.sleep(0.1)
        return count


def start_gunicorn(
    root: Path,
    logs: Path,
    *extra: str,
    scheme: str = "http",
    verify: bool | str = True,
    port: int | None = None,
) -> Server:
    port = port or free_port()
    access_log = logs / f"access-{port}.log"
    env = {"PATH": os.environ["PATH"], "HOME": str(logs), "GITSTORE_ROOT": str(root)}
    command = [
        str(GUNICORN),
        "-w",
        "2",
        "-b",
        f"127.0.0.1:{port}",
        "--access-logfile",
        str(access_log),
        *extra,
        "gitstore.api:create_app()",
    ]
    with (logs / f"gunicorn-{port}.err").open("w") as errors:
        process = subprocess.Popen(command, env=env, stdout=errors, stderr=errors, cwd=PROJECT)
    server = Server(f"{scheme}://127.0.0.1:{port}", root, access_log, process)
    try:
        wait_until_answers(process, server.url, logs / f"gunicorn-{port}.err", verify=verify)
    except BaseException:
        stop(server)
        raise
    return server


def stop(server: Server) -> None:
    stop_process(server.process)


@pytest.fixture(scope="session")
def hiera_server(tmp_path_factory):
    """The real app under gunicorn (2 workers) on a free port, serving the Fuel store."""
    base = tmp_path_factory.mktemp("hiera-server")
    build_fuel_store(base / "store")
    server = start_gunicorn(base / "store", base)
    yield server
    stop(server)


@dataclass
class Compile:
    """The outcome of one `puppet lookup --compile`."""

    returncode: int
    stdout: str
    stderr: str
    probe: dict | None  # the values site.pp looked up, when it printed them

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class PuppetSite:
    """Puppet confined to a temporary directory: one Puppet environment per scenario.

    Each scenario is an environment with its own hiera.yaml (the shipped example with options
    changed) and a site.pp that looks keys up and prints them as JSON through the test-only
    `probe::json` function.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        for name in ("conf", "code/environments", "code/modules", "var", "log", "run", "ssl"):
            (base / name).mkdir(parents=True, exist_ok=True)
        (base / "code/modules/gitstore").symlink_to(MODULE)
        (base / "code/modules/probe").symlink_to(PROBE_MODULE)

    def environment(
        self, name: str, options: dict, *, keys: list[str], hierarchy: list[dict] | None = None
    ) -> str:
        """Write environment `name`: example hiera.yaml with `options` merged in (None drops)."""
        config = yaml.safe_load(EXAMPLE_HIERA.read_text())
        merged = {**config["defaults"]["options"], **options}
        config["defaults"]["options"] = {k: v for k, v in merged.items() if v is not None}
        if hierarchy is not None:
            config["hierarchy"] = hierarchy
        folder = self.base / "code/environments" / name
        (folder / "manifests").mkdir(parents=True, exist_ok=True)
        (folder / "hiera.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        (folder / "manifests/site.pp").write_text(site_pp(keys))
        return name

    def lookup(
        self,
        environment: str,
        certname: str,
        key: str,
        *extra: str,
        render: str = "json",
        compile: bool = True,
        facts: dict | None = None,
    ) -> Compile:
        """`puppet lookup --compile KEY` as node `certname` (its site.pp looks up the rest).

        With `compile=False`, plain `puppet lookup KEY`: no catalog, only the key.
        """
        facts_file = self.base / f"facts-{certname}.yaml"
        host, _, domain = certname.partition(".")
        facts_file.write_text(
            yaml.safe_dump(
                {
                    "clientcert": certname,
                    "hostname": host,
                    "domain": domain,
                    "fqdn": certname,
                    **(facts or {}),
                }
            )
        )
        command = [
            "puppet",
            "lookup",
            *self._confined(),
            "--environment",
            environment,
            "--node",
            certname,
            "--facts",
            str(facts_file),
            "--facts_terminus",
            "yaml",
            "--render-as",
            render,
            *(["--compile"] if compile else []),
            *extra,
            key,
        ]
        env = {"PATH": os.environ["PATH"], "HOME": str(self.base), "LANG": "C.UTF-8"}
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        return Compile(done.returncode, done.stdout, done.stderr, _probe(done.stdout))

    def _confined(self) -> list[str]:
        dirs = {
            "confdir": "conf",
            "codedir": "code",
            "vardir": "var",
            "logdir": "log",
            "rundir": "run",
            "ssldir": "ssl",
        }
        return [f"--{opt}={self.base / sub}" for opt, sub in dirs.items()] + ["--color=false"]


MISSING = "__missing__"


def site_pp(keys: list[str]) -> str:
    """A manifest that looks every key up (MISSING when absent) and prints them as JSON."""
    listed = ", ".join(f"'{key}'" for key in keys)
    return (
        f"$keys = [{listed}]\n"
        "$found = $keys.reduce({}) |$memo, $key| {\n"
        f"  $memo + {{ $key => lookup($key, undef, undef, '{MISSING}') }}\n"
        "}\n"
        'notice("PROBE ${probe::json($found)}")\n'
    )


def _probe(stdout: str) -> dict | None:
    for line in stdout.splitlines():
        _, marker, payload = line.partition("PROBE ")
        if marker:
            return json.loads(payload)
    return None


@pytest.fixture(scope="session")
def puppet(tmp_path_factory) -> PuppetSite:
    if shutil.which("puppet") is None:
        raise RuntimeError("puppet is not installed: apt-get install -y puppet (see .ci/run)")
    return PuppetSite(tmp_path_factory.mktemp("puppet"))


@pytest.fixture(scope="module")
def tls_server(hiera_server, tmp_path_factory):
    """The same store served over HTTPS with a self-signed certificate for 127.0.0.1."""
    base = tmp_path_factory.mktemp("hiera-tls")
    cert, key = self_signed_certificate(base)
    server = start_gunicorn(
        hiera_server.root,
        base,
        "--certfile",
        str(cert),
        "--keyfile",
        str(key),
        scheme="https",
        verify=str(cert),
    )
    server.ca_file = cert
    yield server
    stop(server)


class _Unhealthy(BaseHTTPRequestHandler):
    """`/slow/...` answers 503 after SLOW seconds; `/broken/...` at once; `/masked/...` answers
    200 with a node document whose secrets the server masked (header `X-Gitstore-Masked`).

    Counts requests per prefix and keeps the `Authorization` header each one carried.
    """

    SLOW = 3.0
    counts: dict[str, int] = {}
    authorization: dict[str, str | None] = {}

    def do_GET(self):  # noqa: N802 - the name BaseHTTPRequestHandler dispatches to
        prefix = self.path.split("/")[1]
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        self.authorization[prefix] = self.headers.get("Authorization")
        if prefix == "slow":
            time.sleep(self.SLOW)
        status, headers, body = 503, {}, {"status": 503, "message": "store under maintenance"}
        if prefix == "masked":
            status, headers = 200, {"X-Gitstore-Masked": "resources.astute.access.password"}
            body = {
                "commit": "0" * 40,
                "version": 1,
                "resources": {"astute": {"access": {"password": "******"}}},
            }
        self._answer(status, headers, json.dumps(body).encode())

    def _answer(self, status: int, headers: dict, body: bytes) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting: that is what /slow is for

    def log_message(self, *args):
        pass  # keep test output clean


@pytest.fixture(scope="module")
def unhealthy():
    """A stand-in for a server in trouble (hanging or failing), counting what reaches it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unhealthy)
    server.daemon_threads = True
    _Unhealthy.counts, _Unhealthy.authorization = {}, {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()
