"""Serve a store under gunicorn: what `gitstore serve` runs once its options are checked.

`serve` opens the store once in the arbiter (a store of a newer format, or a root without a
store, fails here with one line, not in every worker), holds the root's server lock, builds the
app's config, starts the processes that run beside the arbiter (`children`), and runs gunicorn;
each worker builds its own app and store after the fork.
"""

from __future__ import annotations

import errno
import functools
import logging
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from gitstore import Store, logs, metrics
from gitstore.access.keystone import KEYSTONE, KeystoneSettings
from gitstore.access.policy import ACCESS_REQUIRED, ANONYMOUS_READ, SERVED_HOSTS, AccessFile
from gitstore.errors import Unavailable
from gitstore.serve import children
from gitstore.serve.activity import Activity
from gitstore.serve.settings import KEEPALIVE_SECONDS, Checked, default_workers, is_loopback
from gitstore.storeformat import hold_for_serving

#: The app's config key of a cluster member's settings (gitstore.api's CLUSTER; not imported
#: from there, which would import flask into the arbiter).
CLUSTER = "GITSTORE_CLUSTER"

log = logging.getLogger("gitstore.serve")
#: The descriptor of the root's server lock, held (and inherited by the workers) while serving.
_SERVING: list[int] = []


def serve(checked: Checked) -> None:
    """Serve the store of `checked.settings.root` until gunicorn's arbiter stops."""
    settings = checked.settings
    root = settings.root
    log_format = settings.log_format or logs.default_format()
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
    # A hook names the interpreter that wrote it: after an upgrade into another installation
    # the repositories would still run the previous version's push gate (or none, once it is
    # removed), so every start writes them for this one.
    store.install_hooks()
    config = app_config(checked)
    host, port = settings.host, settings.port
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    check_port(host, port)
    options = _gunicorn_options(checked, bind, log_format)
    scheme = "https" if checked.tls else "http"
    per_worker = f"{settings.threads} threads" if settings.worker_class == "gthread" else "gevent"
    log.info(f"serving {root} on {scheme}://{bind} ({options['workers']} workers, {per_worker})")
    if settings.poll:
        children.start_poller(root, settings.poll)
        log.info(f"polling mirrors every {settings.poll:g}s")
    if settings.maintenance:
        children.start_maintenance(root)
    if checked.membership is not None:
        config[CLUSTER] = checked.membership
        children.start_coordinator(root, checked.membership)
        log.info(f"cluster member {settings.node_name} of {settings.cluster}")
    run_server(root, options, config)


def app_config(checked: Checked) -> dict[str, Any]:
    """The app's config of a served store; says at start whether access control is on."""
    settings = checked.settings
    _announce_access(settings.root, settings.host, settings.allow_anonymous_read)
    config: dict[str, Any] = {
        ACCESS_REQUIRED: checked.access_required,
        ANONYMOUS_READ: settings.allow_anonymous_read,
        "GITSTORE_LOCAL_EXECUTOR": settings.enable_local_executor,
        "GITSTORE_MIN_FREE_DISK": settings.min_free_disk,
        "GITSTORE_METRICS_ROLE": settings.metrics_role,
        "GITSTORE_OFFLOAD_HEAVY": True,  # heavy reads in helper processes (gitstore.api.offload)
    }
    if settings.keystone is not None:
        config[KEYSTONE] = _announce_keystone(settings.root, settings.keystone)
    config[SERVED_HOSTS] = [settings.host, *settings.allowed_hosts]
    return config


def _announce_access(root: Path, host: str, anonymous_read: bool) -> None:
    access_file = AccessFile(root)
    if access_file.exists():
        access_file.policy()  # a broken access file fails here, once, with its message
        log.info(
            f"access control on ({access_file.path})"
            + ("; anonymous reads allowed" if anonymous_read else "")
        )
    elif is_loopback(host):
        log.warning(
            f"no access file at {access_file.path}: the store is OPEN, so only loopback "
            "addresses are served; `gitstore user add` turns access control on"
        )
    else:  # `settings.check` let it through: --open was given
        log.warning(
            f"WARNING: serving an OPEN store on {host} (--open): anyone who can reach it "
            "may read and write"
        )


def _announce_keystone(root: Path, keystone: KeystoneSettings) -> KeystoneSettings:
    policy = AccessFile(root).policy()
    if policy is not None and not policy.keystone:
        log.warning(
            f"{AccessFile(root).path} has no keystone rules: every Keystone token will get 403 "
            "(docs/security.md)"
        )
    log.info(f"accepting Keystone tokens validated by {keystone.auth_url or 'the config file'}")
    return keystone


def _gunicorn_options(checked: Checked, bind: str, log_format: str) -> dict[str, Any]:
    settings = checked.settings
    return {
        "bind": bind,
        "workers": settings.workers or default_workers(),
        "worker_class": _worker_class(settings.worker_class),
        "threads": settings.threads,
        "keepalive": KEEPALIVE_SECONDS,
        "timeout": checked.timeout,
        "max_requests": settings.max_requests,
        "max_requests_jitter": settings.max_requests // 10,
        "accesslog": "-" if settings.access_log else None,
        "errorlog": "-",
        "proc_name": "gitstore",
        "logconfig_dict": logs.config(log_format, access_log=settings.access_log),
        "logger_class": _logger_class(),
        "post_fork": _post_fork_hook(),
        "worker_exit": _worker_exit_hook(),
        **_metrics_hooks(),
        **checked.tls,
    }


def check_port(host: str, port: int) -> None:
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
            raise Unavailable(_unusable(host, port, exc)) from None


def _unusable(host: str, port: int, exc: OSError) -> str:
    """Why gitstore cannot listen on host:port, and which option to change."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: {exc.strerror}; check --host"
    taken = "is already in use" if exc.errno == errno.EADDRINUSE else f"is refused ({exc.strerror})"
    other = port + 1 if port < 65535 else 8000
    return f"port {port} on {host} {taken}; choose another with --port, e.g. --port {other}"


def _worker_class(name: str) -> type:
    from gitstore.serve.workers import BY_NAME  # imports gunicorn: only when serving

    return BY_NAME[name]


def _logger_class() -> type:
    from gitstore.serve.workers import Logger  # imports gunicorn: only when serving

    return Logger


def _post_fork_hook() -> Any:
    """gunicorn's `post_fork`, handing every worker the one `Activity` of the server."""
    from gitstore.serve.workers import post_fork  # imports gunicorn: only when serving

    return functools.partial(post_fork, activity=Activity())


def _worker_exit_hook() -> Any:
    from gitstore.serve.workers import worker_exit  # imports gunicorn: only when serving

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
        children.stop_children()
        if not given:
            shutil.rmtree(folder, ignore_errors=True)

    return {"child_exit": child_exit, "on_exit": on_exit}


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
