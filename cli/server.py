"""`gitstore init` (create a store, optionally with the sample) and `gitstore serve` (gunicorn).

Both take the store root as `--root` (or `GITSTORE_ROOT`, or the group's `--root`), because
they work on a folder, never through a server.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import logging
import math
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from cli.keystone_serve import keystone_options
from gitstore import (
    ACCESS_REQUIRED,
    ANONYMOUS_READ,
    CLUSTER_KEY_FILE,
    KEYSTONE,
    ROLES,
    SAMPLE_DIR,
    SERVED_HOSTS,
    AccessFile,
    ClusterSecret,
    KeystoneSettings,
    LoadReport,
    Store,
    cluster_settings,
    limits,
    logs,
    metrics,
    parse_size,
)
from gitstore.errors import GitstoreError
from gitstore.layout import CATALOG
from gitstore.ops.maintenance import start_detached
from gitstore.storeformat import hold_for_serving

#: The app's config key of a cluster member's settings (gitstore.api's CLUSTER).
CLUSTER = "GITSTORE_CLUSTER"

log = logging.getLogger("gitstore.serve")
#: The descriptor of the root's server lock, held (and inherited by the workers) while serving.
_SERVING: list[int] = []

#: gevent by default: a connection costs a green thread, never a worker thread, until its
#: request head is complete, so clients that send half a header block hold nothing others need
#: (gthread reads the head in a worker thread: 8 such clients stopped a 2x4-thread server).
#: gthread stays available behind a front proxy that buffers requests (docs/security.md).
WORKER_CLASSES = ("gevent", "gthread")
DEFAULT_THREADS = 4
#: Also the deadline of a request head under gevent (gunicorn times the head read with it).
KEEPALIVE_SECONDS = 5
#: A worker is replaced after this many requests (plus up to a tenth, so that workers do not
#: restart together): pygit2 keeps what it looked up, and a worker grew 44 MB over 160k
#: distinct URLs.
MAX_REQUESTS = 50_000
#: Seconds gunicorn's worker timeout is set above the longest deadline (limits.yaml): a request
#: is answered 503 at its deadline, so the worker is never killed for it (a worker whose loop
#: is held that long is stuck, and is replaced).
TIMEOUT_MARGIN = 30


def register(group: click.Group) -> None:
    group.add_command(init)
    group.add_command(serve)


def store_root(root_opt: str | None) -> Path:
    """The command's --root, else the group's --root; a usage error if neither was given."""
    ctx = click.get_current_context()
    root = root_opt or ctx.find_root().params.get("root")
    if not root:
        raise click.UsageError("--root (or GITSTORE_ROOT) is required", ctx=ctx)
    return Path(root).resolve()


_root_option = click.option(
    "--root",
    "root_opt",
    envvar="GITSTORE_ROOT",
    type=click.Path(file_okay=False),
    help="Store root (default: $GITSTORE_ROOT).",
)


@click.command()
@_root_option
@click.option("--sample", is_flag=True, help="Load the sample deployment (sample_repo/).")
@click.option(
    "--sample-dir",
    type=click.Path(file_okay=False, exists=True),
    help="Load this folder instead of the shipped sample (implies --sample).",
)
def init(root_opt: str | None, sample: bool, sample_dir: str | None) -> None:
    """Create a store (catalog.git and environments/) at --root; never touches existing data.

    With --sample, also load the catalog and environments of the sample deployment. Running
    it again keeps everything that exists and only adds what is missing.
    """
    root = store_root(root_opt)
    existed = (root / CATALOG).is_dir()
    store = Store.init(root)
    click.echo(
        f"gitstore already initialised at {root}; kept as it is"
        if existed
        else f"initialised gitstore at {root}"
    )
    if sample or sample_dir:
        source = Path(sample_dir) if sample_dir else SAMPLE_DIR
        if not source.is_dir():
            raise click.UsageError(f"no sample at {source}; pass --sample-dir")
        for line in _describe(store.importer.load_tree(source), source):
            click.echo(line)


def _describe(report: LoadReport, source: Path) -> list[str]:
    if not report.changed:
        return [f"{source.name} already loaded: nothing changed"]
    lines = []
    if report.catalog_added:
        lines.append(f"catalog: added {', '.join(report.catalog_added)}")
    for env_id in report.environments_created:
        lines.append(f"environment {env_id}: created from {source.name}")
    for env_id in report.environments_kept:
        lines.append(f"environment {env_id}: already exists, kept as it is")
    return lines


def _default_workers() -> int:
    return 2 * len(os.sched_getaffinity(0))


@click.command()
@_root_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--workers", type=click.IntRange(min=1), help="Worker processes (default: 2 per CPU core)."
)
@click.option(
    "--worker-class",
    type=click.Choice(WORKER_CLASSES),
    default=WORKER_CLASSES[0],
    show_default=True,
    help="gunicorn worker class: gevent (safe against slow clients on its own) or gthread "
    "(only behind a proxy that buffers whole requests).",
)
@click.option(
    "--threads",
    default=DEFAULT_THREADS,
    show_default=True,
    type=click.IntRange(min=1),
    help="Threads per worker (gthread only).",
)
@click.option(
    "--max-requests",
    default=MAX_REQUESTS,
    show_default=True,
    type=click.IntRange(min=0),
    help="Replace a worker after this many requests, plus a random tenth (0: never).",
)
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="Log each request to stderr.",
)
@click.option(
    "--open",
    "open_store",
    is_flag=True,
    help="Allow a non-loopback --host for a store without access file (an OPEN store: "
    "anyone who reaches it may read and write).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A host name an OPEN store also answers to (besides localhost, IP addresses and "
    "--host); other names get 421, against DNS rebinding. Repeatable.",
)
@click.option(
    "--allow-anonymous-read",
    is_flag=True,
    help="With an access file, let requests without credentials read.",
)
@click.option(
    "--certfile",
    type=click.Path(dir_okay=False, exists=True),
    help="TLS certificate (PEM, chain included): serve HTTPS.",
)
@click.option(
    "--keyfile",
    type=click.Path(dir_okay=False, exists=True),
    help="Private key of --certfile (PEM).",
)
@click.option(
    "--ca-certs",
    type=click.Path(dir_okay=False, exists=True),
    help="CA bundle: require client certificates signed by it (mutual TLS).",
)
@click.option(
    "--enable-local-executor",
    is_flag=True,
    help="Let graph execution use the `local` executor, which runs the graphs' shell "
    "tasks on this host as the server's user, for any store-wide writer.",
)
@click.option(
    "--log-format",
    type=click.Choice(logs.FORMATS),
    help="Log lines as JSON objects or as text (default: text on a terminal, else json).",
)
@click.option(
    "--min-free-disk",
    default="1GiB",
    show_default=True,
    callback=lambda ctx, param, value: _size(value, param),
    help="Below this much free disk under --root, /readyz answers 503 (bytes, or K, M, G, "
    "KiB, MiB, GiB).",
)
@click.option(
    "--metrics-role",
    type=click.Choice(ROLES),
    help="Make GET /metrics require this role (store-wide); open by default, as scrapers expect.",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=1),
    default=None,
    help="Fetch every mirror (gitstore mirror add) every SECONDS, for forges that "
    "cannot reach this server with webhooks.",
)
@click.option(
    "--maintenance/--no-maintenance",
    default=True,
    show_default=True,
    help="Pack each repository's loose objects and keep its commit-graph in a background "
    "process (docs/operations.md).",
)
@keystone_options
@click.option(
    "--cluster",
    metavar="etcd://HOST:PORT",
    help="Join a cluster coordinated by the etcd at this address (docs/ha.md): a primary "
    "takes writes, replicas follow it. Needs --node-name and --peers.",
)
@click.option("--node-name", help="This member's name in --peers (with --cluster).")
@click.option(
    "--peers",
    metavar="NAME=URL,...",
    help="Every member's name and base URL, this node's included (with --cluster).",
)
@click.option(
    "--min-replicas",
    type=click.IntRange(min=0),
    help="Members besides the primary that must hold a commit before it is acknowledged "
    "(with --cluster; default 1, or 0 for a cluster of one).",
)
@click.option(
    "--cluster-secret-file",
    type=click.Path(dir_okay=False),
    help="The cluster secret members sign their calls with (with --cluster; default "
    "<root>/cluster.key, made by `gitstore cluster key`; the same file on every member).",
)
def serve(
    root_opt: str | None,
    host: str,
    port: int,
    workers: int | None,
    worker_class: str,
    threads: int,
    max_requests: int,
    access_log: bool,
    open_store: bool,
    allowed_hosts: tuple[str, ...],
    allow_anonymous_read: bool,
    certfile: str | None,
    keyfile: str | None,
    ca_certs: str | None,
    enable_local_executor: bool,
    log_format: str | None,
    min_free_disk: int,
    metrics_role: str | None,
    poll: float | None,
    maintenance: bool,
    keystone: KeystoneSettings | None,
    cluster: str | None = None,
    node_name: str | None = None,
    peers: str | None = None,
    min_replicas: int | None = None,
    cluster_secret_file: str | None = None,
) -> None:
    """Serve the REST API of the store at --root under gunicorn.

    Equivalent to `GITSTORE_ROOT=<root> gunicorn -k gevent 'gitstore.api:create_app()'`.
    Without an access file (`gitstore user add` makes one) the store is open and the server
    listens on loopback addresses only, unless --open is given.
    """
    root = store_root(root_opt)
    secret_file = cluster_secret_file or (
        str(root / CLUSTER_KEY_FILE) if cluster is not None else None
    )
    membership = _cluster_settings(cluster, node_name, peers, min_replicas, secret_file)
    if membership and poll:
        raise click.UsageError("--poll is not available with --cluster yet (docs/ha.md)")
    log_format = log_format or logs.default_format()
    logs.configure(log_format)
    logs.export_to_children(log_format)
    store = Store(root)  # a store of a newer format fails here with one line
    store.check()  # as does a root without a store, not in every worker
    if not store.format.writable:
        log.warning(
            f"{root} has format {store.format.version}, older than this gitstore's: served "
            "read-only until `gitstore migrate` (docs/operations.md)"
        )
    _SERVING.append(hold_for_serving(root))  # `gitstore migrate` names our pid
    config = _access_config(root, host, open_store, allow_anonymous_read)
    config.update(
        GITSTORE_LOCAL_EXECUTOR=enable_local_executor,
        GITSTORE_MIN_FREE_DISK=min_free_disk,
        GITSTORE_METRICS_ROLE=metrics_role,
        GITSTORE_OFFLOAD_HEAVY=True,  # heavy reads in helper processes (gitstore.api.offload)
    )
    if keystone is not None:
        config[KEYSTONE] = _keystone_checked(root, keystone)
    config[SERVED_HOSTS] = [host, *allowed_hosts]
    tls = _tls_options(certfile, keyfile, ca_certs)
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    _check_port(host, port)
    options = {
        "bind": bind,
        "workers": workers or _default_workers(),
        "worker_class": _worker_class(worker_class),
        "threads": threads,
        "keepalive": KEEPALIVE_SECONDS,
        "timeout": worker_timeout(root),
        "max_requests": max_requests,
        "max_requests_jitter": max_requests // 10,
        "accesslog": "-" if access_log else None,
        "errorlog": "-",
        "proc_name": "gitstore",
        "logconfig_dict": logs.config(log_format, access_log=access_log),
        "logger_class": _logger_class(),
        "post_fork": _post_fork_hook(),
        "worker_exit": _worker_exit_hook(),
        **_metrics_hooks(),
        **tls,
    }
    scheme = "https" if tls else "http"
    per_worker = f"{threads} threads" if worker_class == "gthread" else "gevent"
    log.info(f"serving {root} on {scheme}://{bind} ({options['workers']} workers, {per_worker})")
    if poll:
        _start_poller_process(root, poll)
        log.info(f"polling mirrors every {poll:g}s")
    if maintenance:
        _start_maintenance_process(root)
    if membership is not None:
        config[CLUSTER] = membership
        _start_coordinator_process(root, membership)
        log.info(f"cluster member {node_name} of {cluster}")
    run_server(root, options, config)


def worker_timeout(root: Path) -> int:
    """gunicorn's worker timeout for the store at `root`: above every request deadline."""
    try:
        deadlines = limits.load(root).deadlines()
    except GitstoreError as exc:
        raise click.UsageError(exc.message) from None
    return math.ceil(max(deadlines.values())) + TIMEOUT_MARGIN


def _cluster_settings(
    cluster: str | None,
    node: str | None,
    peers: str | None,
    min_replicas: int | None,
    secret_file: str | None,
) -> dict | None:
    """The cluster settings of `--cluster` and its companions (None: a single node)."""
    if cluster is None:
        if node or peers or min_replicas is not None or secret_file:
            raise click.UsageError(
                "--node-name, --peers, --min-replicas and --cluster-secret-file need --cluster"
            )
        return None
    if not node or not peers:
        raise click.UsageError("--cluster needs --node-name and --peers")
    assert secret_file is not None  # the caller defaults it to <root>/cluster.key
    try:
        secret_file = str(Path(secret_file).resolve())
        membership = cluster_settings(cluster, node, peers, min_replicas, secret_file)
        ClusterSecret.load(secret_file)  # fail here with one line, not in every worker
        return membership.as_dict()
    except GitstoreError as exc:
        raise click.UsageError(exc.message) from None


def _start_coordinator_process(root: Path, membership: dict) -> None:
    """The node's coordinator (it holds the leader lease and follows etcd) in its own process;
    it exits when this process (gunicorn's arbiter) is gone."""
    _start_child("coordinate", str(root), json.dumps(membership), str(os.getpid()))


def coordinate(root: str, membership: str, parent: str) -> None:
    """The coordinator process's body (`_start_child`)."""
    from gitstore import run_coordinator  # etcd's client: only in the coordinator process

    _end_with_parent()
    logs.configure(logs.default_format())
    run_coordinator(json.loads(membership), Path(root), int(parent))


#: Processes started next to gunicorn's arbiter (the coordinator, the poller): stopped with it.
_CHILDREN: list[subprocess.Popen] = []


def _start_child(entry: str, *args: str) -> None:
    """Run `cli.server.<entry>(*args)` in a new interpreter next to gunicorn's arbiter.

    Not `multiprocessing`: the workers are forked from the arbiter, inherit its record of the
    child and try to join it when they exit (a traceback from every worker at each stop). The
    child is stopped by the arbiter's exit hook (`_stop_children`) and, should the arbiter be
    killed, by the parent-death signal it asks for (`_end_with_parent`)."""
    code = f"import sys; from cli.server import {entry}; {entry}(*sys.argv[1:])"
    _CHILDREN.append(subprocess.Popen([sys.executable, "-c", code, *args]))


def _stop_children() -> None:
    for child in _CHILDREN:
        child.terminate()
    for child in _CHILDREN:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    _CHILDREN.clear()


def _end_with_parent() -> None:
    """SIGTERM this process when its parent dies (Linux's PR_SET_PDEATHSIG; elsewhere the
    coordinator still notices its parent is gone within a turn of its loop)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _worker_class(name: str) -> type:
    from cli.workers import BY_NAME  # imports gunicorn: only when serving

    return BY_NAME[name]


def _logger_class() -> type:
    from cli.workers import Logger  # imports gunicorn: only when serving

    return Logger


def _size(text: str, param: click.Parameter) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None


def _post_fork_hook() -> Any:
    from cli.workers import post_fork  # imports gunicorn: only when serving

    return post_fork


def _worker_exit_hook() -> Any:
    from cli.workers import worker_exit  # imports gunicorn: only when serving

    return worker_exit


def _metrics_hooks() -> dict[str, Any]:
    """A shared counter directory for the workers (`PROMETHEUS_MULTIPROC_DIR`), and gunicorn
    hooks that mark dead workers and remove a directory of our own at exit.

    An operator's directory is emptied at start (old counts would add to the new ones); without
    one, a private temporary directory is made.
    """
    given = metrics.multiprocess_dir()
    folder = given or tempfile.mkdtemp(prefix="gitstore-metrics-")
    metrics.prepare_multiprocess_dir(folder)

    def child_exit(server: Any, worker: Any) -> None:
        metrics.process_exited(worker.pid)

    def on_exit(server: Any) -> None:
        _stop_children()
        if not given:
            shutil.rmtree(folder, ignore_errors=True)

    return {"child_exit": child_exit, "on_exit": on_exit}


def _start_poller_process(root: Path, seconds: float) -> None:
    """Run the mirror poller in its own process (`_start_child`).

    Not a thread of the gunicorn arbiter: the arbiter forks workers, and a fork taken while the
    poller thread holds a lock (a cache's, logging's) would leave that lock held forever in the
    worker."""
    _start_child("poll_forever", str(root), str(seconds))


def _start_maintenance_process(root: Path) -> None:
    """Git maintenance of every repository, in one process per server (not a child of
    gunicorn's arbiter, which counts its children as workers), so workers never repack; in a
    cluster each member maintains its own copy. It ends with the server."""
    start_detached(root, os.getpid())


def poll_forever(root: str, seconds: str) -> None:
    from gitstore import start_poller

    _end_with_parent()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))  # nothing of its own to finish
    start_poller(Store(root).gitops, float(seconds)).join()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def _access_config(root: Path, host: str, open_store: bool, anonymous_read: bool) -> dict:
    """The app's access settings; says at start whether access control is on, and refuses to
    expose an open store beyond loopback unless --open was given (Redis's protected mode)."""
    access_file = AccessFile(root)
    loopback = _is_loopback(host)
    if access_file.exists():
        access_file.policy()  # a broken access file fails here, once, with its message
        log.info(
            f"access control on ({access_file.path})"
            + ("; anonymous reads allowed" if anonymous_read else "")
        )
    elif loopback:
        log.warning(
            f"no access file at {access_file.path}: the store is OPEN, so only loopback "
            "addresses are served; `gitstore user add` turns access control on"
        )
    elif not open_store:
        raise click.UsageError(
            f"refusing to listen on {host}: the store has no access file ({access_file.path}) "
            "and would be open to the network; add a user with `gitstore user add`, or pass "
            "--open to serve it open anyway"
        )
    else:
        log.warning(
            f"WARNING: serving an OPEN store on {host} (--open): anyone who can reach it "
            "may read and write"
        )
    # bound beyond loopback with access control: a deleted access file must not open the store
    required = access_file.exists() and not loopback and not open_store
    return {ACCESS_REQUIRED: required, ANONYMOUS_READ: anonymous_read}


def _keystone_checked(root: Path, keystone: KeystoneSettings) -> KeystoneSettings:
    """Keystone tokens are mapped by the access file: without one the store would be open to
    everyone, Keystone or not, which is never what --keystone-url asks for."""
    access_file = AccessFile(root)
    if not access_file.exists():
        raise click.UsageError(
            f"--keystone-url needs an access file ({access_file.path}) whose keystone rules map "
            "Keystone identities to roles (docs/security.md); without one the store is open"
        )
    if not access_file.policy().keystone:
        log.warning(
            f"{access_file.path} has no keystone rules: every Keystone token will get 403 "
            "(docs/security.md)"
        )
    log.info(f"accepting Keystone tokens validated by {keystone.auth_url or 'the config file'}")
    return keystone


def _check_port(host: str, port: int) -> None:
    """Fail at once, naming the port and `--port`, when the address cannot be listened on.

    gunicorn retries a busy address every second, forever, logging an error each time. The
    probe binds as gunicorn does (the family by the address, SO_REUSEADDR, so a port left in
    TIME_WAIT passes) and lets go at once; port 0 (any free port) needs no probe.
    """
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(_unusable(host, port, exc)) from None


def _unusable(host: str, port: int, exc: OSError) -> str:
    """Why gitstore cannot listen on host:port, and which option to change."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: {exc.strerror}; check --host"
    taken = "is already in use" if exc.errno == errno.EADDRINUSE else f"is refused ({exc.strerror})"
    other = port + 1 if port < 65535 else 8000
    return f"port {port} on {host} {taken}; choose another with --port, e.g. --port {other}"


def _tls_options(certfile: str | None, keyfile: str | None, ca_certs: str | None) -> dict:
    if bool(certfile) != bool(keyfile):
        raise click.UsageError("--certfile and --keyfile go together")
    if ca_certs and not certfile:
        raise click.UsageError(
            "--ca-certs needs --certfile and --keyfile (it verifies clients of an HTTPS server)"
        )
    if not certfile or not keyfile:  # (both or neither, checked above)
        return {}
    tls: dict[str, Any] = {
        "certfile": str(Path(certfile).resolve()),
        "keyfile": str(Path(keyfile).resolve()),
    }
    if ca_certs:
        tls.update(ca_certs=str(Path(ca_certs).resolve()), cert_reqs=ssl.CERT_REQUIRED)
    return tls


def run_server(root: Path, options: dict[str, Any], config: dict[str, Any] | None = None) -> None:
    """Run gunicorn with `options`; each worker builds its own app and store after the fork.

    Building the store after the fork matters: pygit2 handles must not cross processes. gunicorn
    sets TCP_NODELAY on its listening socket, so keep-alive responses do not stall. gunicorn is
    imported here, not at the top, so that other commands do not pay for it.
    """
    from gunicorn.app.base import BaseApplication

    class Server(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)
            if "control_socket_disable" in self.cfg.settings:
                # gunicorn >= 25.1 opens one control socket per user at a fixed path: a second
                # server (a test next to the demo) would take it over. We do not use it.
                self.cfg.set("control_socket_disable", True)

        def load(self):
            from gitstore.api import create_app

            return create_app({"GITSTORE_ROOT": str(root), **(config or {})})

    Server().run()
