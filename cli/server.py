"""`gitstore init` (create a store, optionally with the sample) and `gitstore serve` (gunicorn).

Both take the store root as `--root` (or `GITSTORE_ROOT`, or the group's `--root`), because
they work on a folder, never through a server. `serve` only parses its options: the server
runtime is `gitstore.serve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.keystone_serve import keystone_options
from gitstore import Store, logs
from gitstore.access.policy import ROLES
from gitstore.configdb.importer import SAMPLE_DIR, LoadReport
from gitstore.errors import GitstoreError
from gitstore.layout import CATALOG
from gitstore.ops.health import parse_size
from gitstore.serve.server import serve as run_serve
from gitstore.serve.settings import (
    DEFAULT_THREADS,
    MAX_REQUESTS,
    WORKER_CLASSES,
    Settings,
    check,
)


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
def serve(root_opt: str | None, **options: Any) -> None:
    """Serve the REST API of the store at --root under gunicorn.

    Equivalent to `GITSTORE_ROOT=<root> gunicorn -k gevent 'gitstore.api:create_app()'`.
    Without an access file (`gitstore user add` makes one) the store is open and the server
    listens on loopback addresses only, unless --open is given.
    """
    try:
        checked = check(Settings(root=store_root(root_opt), **options))
    except GitstoreError as exc:
        raise click.UsageError(exc.message) from None
    run_serve(checked)


def _size(text: str, param: click.Parameter) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None
