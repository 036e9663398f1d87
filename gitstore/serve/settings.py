"""What `gitstore serve` is asked for (`Settings`), and the check that it can work (`check`).

`check` finds, before anything starts, the settings that cannot work together: options that go
in pairs, a bad `--cluster`, a `limits.yaml` that does not load, an open store offered to the
network, Keystone without an access file. Each raises `InvalidInput` naming the option, which
the command line shows as a usage error.
"""

from __future__ import annotations

import ipaddress
import math
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitstore import limits
from gitstore.access.keystone import KeystoneSettings
from gitstore.access.policy import AccessFile
from gitstore.cluster.secret import KEY_FILE as CLUSTER_KEY_FILE
from gitstore.cluster.secret import ClusterSecret
from gitstore.cluster.settings import settings as cluster_settings
from gitstore.errors import GitstoreError, InvalidInput

#: gevent by default: a connection costs a green thread, never a worker thread, until its
#: request head is complete, so clients that send half a header block hold nothing others need
#: (gthread reads the head in a worker thread: as many such clients as threads stop a server).
#: gthread stays available behind a front proxy that buffers requests (docs/security.md).
WORKER_CLASSES = ("gevent", "gthread")
DEFAULT_THREADS = 4
#: Also the deadline of a request head under gevent (gunicorn times the head read with it).
KEEPALIVE_SECONDS = 5
#: A worker is replaced after this many requests (plus up to a tenth, so that workers do not
#: restart together): pygit2 keeps what it looked up, so a worker serving many distinct URLs
#: grows.
MAX_REQUESTS = 50_000
#: Seconds gunicorn's worker timeout is set above the longest deadline (limits.yaml): a request
#: is answered 503 at its deadline, so the worker is never killed for it (a worker whose loop
#: is held that long is stuck, and is replaced).
TIMEOUT_MARGIN = 30


@dataclass(frozen=True)
class Settings:
    """Every setting of `gitstore serve`, one field per option (docs/cli.md)."""

    root: Path
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int | None = None
    worker_class: str = WORKER_CLASSES[0]
    threads: int = DEFAULT_THREADS
    max_requests: int = MAX_REQUESTS
    access_log: bool = False
    open_store: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allow_anonymous_read: bool = False
    certfile: str | None = None
    keyfile: str | None = None
    ca_certs: str | None = None
    enable_local_executor: bool = False
    log_format: str | None = None
    min_free_disk: int = 1 << 30
    metrics_role: str | None = None
    poll: float | None = None
    maintenance: bool = True
    keystone: KeystoneSettings | None = None
    cluster: str | None = None
    node_name: str | None = None
    peers: str | None = None
    min_replicas: int | None = None
    cluster_secret_file: str | None = None


@dataclass(frozen=True)
class Checked:
    """Settings that `check` passed, with what it derived from them."""

    settings: Settings
    #: `ClusterSettings.as_dict()` of a cluster member; None for a single node.
    membership: dict[str, Any] | None
    #: gunicorn's worker timeout: above every request deadline of the store.
    timeout: int
    #: gunicorn's TLS options (empty: plain HTTP).
    tls: dict[str, Any]
    #: Whether the app must refuse every request when the access file disappears.
    access_required: bool


def check(settings: Settings) -> Checked:
    """`settings` with what they imply; `InvalidInput` naming the option that cannot work."""
    membership = _cluster_membership(settings)
    if membership and settings.poll:
        raise InvalidInput("--poll is not available with --cluster yet (docs/ha.md)")
    tls = _tls_options(settings.certfile, settings.keyfile, settings.ca_certs)
    access_required = _exposure(settings)
    if settings.keystone is not None:
        _check_keystone(settings.root)
    return Checked(settings, membership, worker_timeout(settings.root), tls, access_required)


def default_workers() -> int:
    return 2 * len(os.sched_getaffinity(0))


def worker_timeout(root: Path) -> int:
    """gunicorn's worker timeout for the store at `root`: above every request deadline."""
    try:
        deadlines = limits.load(root).deadlines()
    except GitstoreError as exc:
        raise InvalidInput(exc.message) from None
    return math.ceil(max(deadlines.values())) + TIMEOUT_MARGIN


def _cluster_membership(settings: Settings) -> dict[str, Any] | None:
    """The cluster settings of `--cluster` and its companions (None: a single node)."""
    if settings.cluster is None:
        companions = (settings.node_name, settings.peers, settings.cluster_secret_file)
        if any(companions) or settings.min_replicas is not None:
            raise InvalidInput(
                "--node-name, --peers, --min-replicas and --cluster-secret-file need --cluster"
            )
        return None
    if not settings.node_name or not settings.peers:
        raise InvalidInput("--cluster needs --node-name and --peers")
    secret_file = settings.cluster_secret_file or str(settings.root / CLUSTER_KEY_FILE)
    try:
        secret_file = str(Path(secret_file).resolve())
        membership = cluster_settings(
            settings.cluster,
            settings.node_name,
            settings.peers,
            settings.min_replicas,
            secret_file,
        )
        ClusterSecret.load(secret_file)  # fail here with one line, not in every worker
    except GitstoreError as exc:
        raise InvalidInput(exc.message) from None
    return membership.as_dict()


def _tls_options(certfile: str | None, keyfile: str | None, ca_certs: str | None) -> dict:
    if bool(certfile) != bool(keyfile):
        raise InvalidInput("--certfile and --keyfile go together")
    if ca_certs and not certfile:
        raise InvalidInput(
            "--ca-certs needs --certfile and --keyfile (it verifies clients of an HTTPS server)"
        )
    if not certfile or not keyfile:
        return {}
    tls: dict[str, Any] = {
        "certfile": str(Path(certfile).resolve()),
        "keyfile": str(Path(keyfile).resolve()),
    }
    if ca_certs:
        tls.update(ca_certs=str(Path(ca_certs).resolve()), cert_reqs=ssl.CERT_REQUIRED)
    return tls


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def _exposure(settings: Settings) -> bool:
    """Refuse to expose an open store beyond loopback unless --open was given (Redis's
    protected mode); whether the app must require the access file to stay."""
    exists = AccessFile(settings.root).exists()
    loopback = is_loopback(settings.host)
    if not exists and not loopback and not settings.open_store:
        raise InvalidInput(
            f"refusing to listen on {settings.host}: the store has no access file "
            f"({AccessFile(settings.root).path}) and would be open to the network; add a user "
            "with `gitstore user add`, or pass --open to serve it open anyway"
        )
    # bound beyond loopback with access control: a deleted access file must not open the store
    return exists and not loopback and not settings.open_store


def _check_keystone(root: Path) -> None:
    """Keystone tokens are mapped by the access file: without one the store would be open to
    everyone, Keystone or not, which is never what --keystone-url asks for."""
    access_file = AccessFile(root)
    if not access_file.exists():
        raise InvalidInput(
            f"--keystone-url needs an access file ({access_file.path}) whose keystone rules map "
            "Keystone identities to roles (docs/security.md); without one the store is open"
        )
