"""Benchmark: 200 Hiera keys of one node in one compile, YAML files against the gitstore backend.

(a) Hiera's own `yaml_data` backend reads the node's data exported to files, one file per level;
(b) `gitstore::data_hash` reads the same data from the real server (gunicorn, 2 gevent workers
as `gitstore serve` runs them) with one request per compile. Both use the Fuel hierarchy of
`puppet/examples/hiera.yaml` and Fuel's astute.yaml of a compute node (tests/data/fuel), so
every key walks the same levels.

Two measurements, five runs each after a warm-up, medians, ratio (b)/(a):
- the `puppet lookup --compile` command (a process per compile: what an operator runs);
- warm compiles in one Ruby process (`bench/hiera_compile.rb`: what a Puppet master does).

Usage: .venv/bin/python bench/hiera.py [--runs N] [--smoke] [--serve] [--floor]
`--smoke` (for CI) makes one warm compile per backend, checks that both backends return the
same 200 values, and skips the command-line part: a few seconds.
`--floor` adds (c), the floor of any HTTP backend on this server stack: the same module reading
the same document's bytes from a bare WSGI app (`bench/bare_wsgi.py`: no Flask, the bytes and
their ETag kept, a 304 to a matching `If-None-Match`) on the same gunicorn, interleaved with
(a) and (b) in the same Ruby process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from gitstore import Store  # noqa: E402 - after the path set-up for running as a script
from gitstore.backend.changes import ChangeSet  # noqa: E402
from gitstore.backend.repository import Author  # noqa: E402

FUEL_DATA = PROJECT / "tests" / "data" / "fuel"
EXAMPLE_HIERA = PROJECT / "puppet" / "examples" / "hiera.yaml"
WARM_SCRIPT = PROJECT / "bench" / "hiera_compile.rb"
NODE, FQDN = "127", "node-127.test.domain.local"
KEYS = 200
AUTHOR = Author("bench", "bench@example.com")
MISSING = "__missing__"
ACCESS_LOG = "access.log"
PLUGIN_KEYS = {
    "lma_collector": {"enabled": True},
    "elasticsearch_kibana": {"enabled": False},
    "influxdb_grafana": {"enabled": True},
    "zabbix_monitoring": {"enabled": False},
    "contrail": {"enabled": False},
}


# -- data ------------------------------------------------------------------------------------
def fuel_documents() -> dict[tuple, dict]:
    """Node 127's levels: astute as uploaded, globals derived from it, plugin and node data."""
    astute = yaml.safe_load((FUEL_DATA / "astute" / "compute.yaml").read_text())
    globals_ = {
        f"{key}_{sub}": value
        for key, section in astute.items()
        if isinstance(section, dict)
        for sub, value in section.items()
    }
    node = (("nodes", NODE),)
    override = lambda name: yaml.safe_load((FUEL_DATA / "hiera-override" / name).read_text())  # noqa: E731
    return {
        (node, "astute", "values"): astute,
        (node, "globals", "values"): {
            **globals_,
            "lookup_options": {"configuration": {"merge": "deep"}},
        },
        ((), "override/plugins", "values"): {
            **PLUGIN_KEYS,
            "debug": True,
            **override("openstack-network-plugins-ml2.yaml"),
        },
        (node, "override/node", "values"): {"libvirt_type": "kvm", "debug": False},
        ((), "override/configuration/cluster", "values"): override("keystone-keystone.yaml"),
        (node, "override/configuration/role", "values"): override(
            "openstack-network-server-config.yaml"
        ),
        (node, "override/configuration/node", "values"): override(
            "openstack-network-agents-dhcp.yaml"
        ),
    }


def build_store(root: Path) -> Store:
    store = Store.init(root)
    levels = [entry["uri"] for entry in yaml.safe_load(EXAMPLE_HIERA.read_text())["hierarchy"]]
    store.components.create({"name": "fuel", "resource_definitions": [{"name": n} for n in levels]})
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    store.config.write_many(1, fuel_documents(), "bench: Fuel data of node 127", AUTHOR)

    def inventory(snapshot):
        changes = ChangeSet("inventory: node 127")
        changes.put(f"inventory/nodes/{NODE}.yaml", f"id: {NODE}\nfqdn: {FQDN}\n".encode())
        return changes

    store.environment_repo(1).update(inventory, AUTHOR)
    return store


def bench_keys(document: dict) -> list[str]:
    """200 keys found at different levels: astute's, the derived globals, the plugins'."""
    resources = document["resources"]
    keys = list(resources["astute"]) + list(PLUGIN_KEYS)
    keys += [k for k in resources["globals"] if k != "lookup_options"]
    return list(dict.fromkeys(keys))[:KEYS]


def export_yaml(document: dict, datadir: Path) -> None:
    """Each resource's effective values at the node as `<datadir>/<resource>.yaml`."""
    for name, values in document["resources"].items():
        path = datadir / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(values, sort_keys=False))


# -- the server ------------------------------------------------------------------------------
def start_server(root: Path, logs: Path, serve: bool = False) -> tuple[subprocess.Popen, str]:
    """gunicorn with an access log (the requests are counted in it), or with `serve` the
    `gitstore serve` command as deployed (its workers and logger, no gunicorn access lines;
    the requests are counted in gitstore's own request log)."""
    port = _free_port()
    env = {"PATH": os.environ["PATH"], "HOME": str(logs), "GITSTORE_ROOT": str(root)}
    if serve:
        env["PYTHONPATH"] = str(PROJECT)  # this checkout's gitstore, as gunicorn's cwd gives it
        command = [_tool("gitstore"), "serve", "--root", str(root), "--port", str(port)]
        command += ["--workers", "2", "--log-format", "json"]
    else:
        command = [*_gevent_gunicorn(port, logs / ACCESS_LOG), "gitstore.api:create_app()"]
    return _started(command, env, logs / "gunicorn.log", port, "/api/v1/config/environments")


def start_floor(base: Path, url: str, access_log: bool) -> tuple[subprocess.Popen, str]:
    """gunicorn serving the node document's bytes from `bench/bare_wsgi.py`, as `start_server`
    serves gitstore (2 gevent workers, keep-alive, an access log unless `--serve`)."""
    with urllib.request.urlopen(f"{url}/api/v1/hiera/1/{FQDN}", timeout=10) as response:
        (base / "floor.json").write_bytes(response.read())
        etag = response.headers["ETag"]
    port = _free_port()
    command = _gevent_gunicorn(port, base / "floor-access.log" if access_log else None)
    command += ["--chdir", str(PROJECT / "bench"), "bare_wsgi:app"]
    env = {**os.environ, "BARE_WSGI_BODY": str(base / "floor.json"), "BARE_WSGI_ETAG": etag}
    process, floor = _started(command, env, base / "floor.log", port, "/")
    for _ in range(24):  # as node_document does: both workers booted before the CPU is read
        urllib.request.urlopen(floor, timeout=10).close()
    return process, floor


def _gevent_gunicorn(port: int, access_log: Path | None) -> list[str]:
    """What `gitstore serve` runs: 2 gevent workers that keep connections open (the backend
    keeps one per server and thread between compiles); the app is appended by the caller."""
    command = [_tool("gunicorn"), "-w", "2", "--worker-class", "gevent", "--keep-alive", "5"]
    command += ["-b", f"127.0.0.1:{port}"]
    if access_log is not None:
        command += ["--access-logfile", str(access_log)]
    return command


def _started(
    command: list[str], env: dict[str, str], log_path: Path, port: int, probe: str
) -> tuple[subprocess.Popen, str]:
    """`command` started (output to `log_path`) and answering `probe`; its process and URL."""
    with log_path.open("w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, cwd=PROJECT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + probe, timeout=5).close()
            return process, url
        except (urllib.error.URLError, OSError):
            if process.poll() is not None:
                break
            time.sleep(0.1)
    process.terminate()
    raise SystemExit(f"{command[0]} did not start: {log_path.read_text()[-2000:]}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tool(name: str) -> str:
    """A command of this virtualenv (next to its Python)."""
    return str(Path(sys.executable).parent / name)


def node_document(url: str) -> dict:
    """The node document, fetched often enough that both workers have warmed their caches
    (each fetch is a new connection, which either worker may accept: a cold worker's first
    document, ~0.1-0.3 s of CPU, would otherwise be counted in the warm compiles' CPU)."""
    for _ in range(24):
        with urllib.request.urlopen(f"{url}/api/v1/hiera/1/{FQDN}", timeout=10) as response:
            document = json.load(response)
    return document


def hiera_requests(logs: Path) -> int:
    """How many node documents the server has served (gunicorn's access log, or the request
    lines of `gitstore serve`, whose route names the node document's rule)."""
    path = logs / ACCESS_LOG
    if path.exists():
        return sum("/api/v1/hiera/" in line for line in path.read_text().splitlines())
    lines = (logs / "gunicorn.log").read_text().splitlines()
    return sum('"/api/v1/hiera/<int:env_id>/<node>"' in line for line in lines)


# -- Puppet ----------------------------------------------------------------------------------
class Site:
    """Puppet confined to one folder, with environments `yaml_files` and `gitstore`."""

    FOLDERS = {
        "confdir": "conf",
        "codedir": "code",
        "vardir": "var",
        "logdir": "log",
        "rundir": "run",
        "ssldir": "ssl",
    }

    def __init__(
        self, base: Path, url: str, keys: list[str], document: dict, floor: str | None = None
    ) -> None:
        self.base = base
        for sub in self.FOLDERS.values():
            (base / sub).mkdir(parents=True, exist_ok=True)
        (base / "code/modules").mkdir()
        (base / "code/modules/gitstore").symlink_to(PROJECT / "puppet")
        example = yaml.safe_load(EXAMPLE_HIERA.read_text())
        gitstore = {
            **example,
            "defaults": {
                "data_hash": "gitstore::data_hash",
                # No `node`: the backend asks for the compiling node's certname (the
                # example's default; an interpolated option costs Hiera ~1 ms per compile).
                "options": {"url": url, "environment": 1},
            },
        }
        files = {
            "version": 5,
            "defaults": {"data_hash": "yaml_data", "datadir": "data"},
            "hierarchy": [
                {"name": e["name"], "path": f"{e['uri']}.yaml"} for e in example["hierarchy"]
            ],
        }
        self._environment("gitstore", gitstore, keys)
        self._environment("yaml_files", files, keys)
        self.environments = ["yaml_files", "gitstore"]
        if floor is not None:
            options = {**gitstore["defaults"]["options"], "url": floor}
            self._environment(
                "floor",
                {**gitstore, "defaults": {**gitstore["defaults"], "options": options}},
                keys,
            )
            self.environments.append("floor")
        export_yaml(document, base / "code/environments/yaml_files/data")
        self.facts = {
            "clientcert": FQDN,
            "hostname": FQDN.split(".")[0],
            "domain": FQDN.split(".", 1)[1],
            "fqdn": FQDN,
        }
        (base / "facts.yaml").write_text(yaml.safe_dump(self.facts))

    def _environment(self, name: str, hiera: dict, keys: list[str]) -> None:
        folder = self.base / "code/environments" / name
        (folder / "manifests").mkdir(parents=True)
        (folder / "hiera.yaml").write_text(yaml.safe_dump(hiera, sort_keys=False))
        listed = ",\n  ".join(f"'{key}'" for key in keys)
        (folder / "manifests/site.pp").write_text(
            f"$keys = [\n  {listed},\n]\n"
            f"$values = Hash($keys.map |$key| {{ [$key, lookup($key, undef, undef, "
            f"'{MISSING}')] }})\n"
        )

    def args(self) -> list[str]:
        return [f"--{opt}={self.base / sub}" for opt, sub in self.FOLDERS.items()]

    def lookup_command(self, environment: str, key: str) -> list[str]:
        return [
            "puppet",
            "lookup",
            *self.args(),
            "--environment",
            environment,
            "--node",
            FQDN,
            "--facts",
            str(self.base / "facts.yaml"),
            "--facts_terminus",
            "yaml",
            "--compile",
            key,
        ]

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ["PATH"], "HOME": str(self.base), "LANG": "C.UTF-8"}


def server_cpu(master: int) -> float:
    """CPU seconds used so far by gunicorn's master `master` and its workers (from /proc)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # a process that ended while we looked
        if int(stat.parent.name) == master or int(fields[1]) == master:
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def cli_times(site: Site, key: str, runs: int, master: int) -> dict[str, dict[str, list]]:
    """`puppet lookup --compile` per backend, interleaved, after one warm-up of each.

    For each run: wall time, and CPU time of the command plus (for gitstore) the server's.
    """
    results = {env: {"times": [], "cpu": []} for env in ("yaml_files", "gitstore")}
    for attempt in range(runs + 1):
        for environment, result in results.items():
            started, cpu, served = time.perf_counter(), _children_cpu(), server_cpu(master)
            subprocess.run(
                site.lookup_command(environment, key),
                env=site.env(),
                check=True,
                capture_output=True,
            )
            if attempt:
                result["times"].append(time.perf_counter() - started)
                result["cpu"].append(_children_cpu() - cpu + server_cpu(master) - served)
    return results


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def warm_results(site: Site, runs: int, warmups: int, masters: dict[str, int]) -> dict:
    """Per-backend compile times and looked-up values from one Ruby process.

    The CPU of each server (`masters`: backend -> its gunicorn master) during the run, spread
    over that backend's compiles (warm-ups included, so slightly high), is added to each of
    its compiles' CPU time.
    """
    settings = site.base / "warm.json"
    settings.write_text(
        json.dumps(
            {
                "puppet_args": site.args(),
                "certname": FQDN,
                "facts": site.facts,
                "environments": site.environments,
                "runs": runs,
                "warmups": warmups,
            }
        )
    )
    served = {backend: server_cpu(master) for backend, master in masters.items()}
    requests = hiera_requests(site.base.parent)
    done = subprocess.run(
        ["ruby", str(WARM_SCRIPT), str(settings)], env=site.env(), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"warm compiles failed:\n{done.stderr[-3000:]}")
    time.sleep(0.2)  # gunicorn writes the access log line after the response
    made = hiera_requests(site.base.parent) - requests
    if made != runs + warmups:
        raise SystemExit(f"{runs + warmups} gitstore compiles made {made} requests, not one each")
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for backend, master in masters.items():
        per_compile = (server_cpu(master) - served[backend]) / (runs + warmups)
        results[backend]["cpu"] = [cpu + per_compile for cpu in results[backend]["cpu"]]
    return results


def check_same_values(results: dict, keys: list[str]) -> None:
    """Every backend must return the same value for every key, and find every key."""
    files = results["yaml_files"]["values"]
    for backend in results.keys() - {"yaml_files"}:
        values = results[backend]["values"]
        missing = [key for key in keys if values.get(key) == MISSING]
        different = [key for key in keys if files.get(key) != values.get(key)]
        if missing or different or len(values) != len(keys):
            raise SystemExit(
                f"{backend} and yaml files disagree: missing {missing[:5]}, "
                f"different {different[:5]}"
            )


# -- report ----------------------------------------------------------------------------------
def report(title: str, results: dict[str, dict[str, list]], backend: str = "gitstore") -> float:
    """Print wall and CPU medians of yaml files and `backend`; return the wall-time ratio
    backend/yaml."""
    ratios = {}
    for measure in ("times", "cpu"):
        files = statistics.median(results["yaml_files"][measure])
        other = statistics.median(results[backend][measure])
        ratios[measure] = other / files
        label = "wall" if measure == "times" else "cpu (client + server)"
        print(
            f"{title}, {label}: yaml files {files * 1000:.1f} ms, {backend} "
            f"{other * 1000:.1f} ms (medians of {len(results[backend][measure])}); "
            f"ratio {ratios[measure]:.3f}"
        )
    return ratios["times"]


def report_floor(results: dict[str, dict[str, list]]) -> None:
    """The floor's ratios, and gitstore's wall time against it."""
    floor_ratio = report("warm compile, floor (bare WSGI app)", results, "floor")
    gitstore = statistics.median(results["gitstore"]["times"])
    floor = statistics.median(results["floor"]["times"])
    print(
        f"floor: any HTTP backend on this server stack {floor_ratio:.3f}x yaml files; gitstore "
        f"{gitstore / floor:.3f}x the floor ({(gitstore - floor) * 1000:.2f} ms per compile)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs per backend")
    parser.add_argument("--smoke", action="store_true", help="quick correctness run for CI")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve with `gitstore serve` as deployed (no gunicorn access log)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also compile against the same bytes from a bare WSGI app on the same gunicorn",
    )
    options = parser.parse_args(argv)
    if shutil.which("puppet") is None:
        raise SystemExit("puppet is not installed (apt-get install -y puppet)")
    base = Path(tempfile.mkdtemp(prefix="gitstore-bench-hiera-"))
    server = floor = None
    try:
        store = build_store(base / "store")
        server, url = start_server(store.root, base, options.serve)
        document = node_document(url)
        keys = bench_keys(document)
        masters = {"gitstore": server.pid}
        if options.floor:
            floor, floor_url = start_floor(base, url, access_log=not options.serve)
            masters["floor"] = floor.pid
        site = Site(base / "puppet", url, keys, document, floor_url if floor else None)
        warm = warm_results(site, 1 if options.smoke else options.runs, 1, masters)
        check_same_values(warm, keys)
        print(
            f"{len(keys)} keys, node {FQDN}, {len(document['resources'])} hierarchy levels; "
            "every backend returns the same values; one request per gitstore compile"
        )
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        warm_ratio = report("warm compile (one Ruby process)", warm)
        if floor is not None:
            report_floor(warm)
        if options.smoke:
            return 0
        cli = cli_times(site, keys[0], options.runs, server.pid)
        cli_ratio = report("puppet lookup --compile (command)", cli)
        print(
            f"targets: warm <= 1.05 ({'met' if warm_ratio <= 1.05 else 'MISSED'}), "
            f"command <= 1.0 ({'met' if cli_ratio <= 1.0 else 'MISSED'})"
        )
        return 0
    finally:
        for process in (server, floor):
            if process is not None:
                process.terminate()
                process.wait(timeout=10)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
