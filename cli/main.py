"""The `gitstore` command group: connection options, then one module per command family.

Each family module exposes `register(group)`; `COMMAND_MODULES` lists them in help order. The
group stores a `cli.connection.Connection` on the context; store commands get their client
from it with `@pass_client`, so the client is built once per run and only when needed.
"""

from __future__ import annotations

import importlib

import click

from cli.connection import Connection
from cli.errors import RootGroup
from cli.keystone import OpenStackAuth, openstack_options

#: Modules whose `register(group)` adds commands. Later issues append theirs.
COMMAND_MODULES = [
    "cli.server",
    "cli.config",
    "cli.entities",
    "cli.facts",
    "cli.gitops",
    "cli.versions",
    "cli.compare",
    "cli.labels",
    "cli.tags",
    "cli.access",
    "cli.graphs",
    "cli.transactions",
    "cli.plans",
    "cli.upgrade",
    "cli.secrets",
    "cli.ops",
    "cli.watch",
    "cli.keystone",
    "cli.hieraport",
]


@click.group("gitstore", cls=RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--url",
    envvar="GITSTORE_URL",
    show_envvar=True,
    help="Server base URL, e.g. http://127.0.0.1:8000",
)
@click.option(
    "--root",
    envvar="GITSTORE_ROOT",
    show_envvar=True,
    type=click.Path(file_okay=False),
    help="Work on a local store root instead of a server.",
)
@click.option("--token", envvar="GITSTORE_TOKEN", show_envvar=True, help="API token (Bearer).")
@click.option(
    "--user",
    envvar="GITSTORE_USER",
    show_envvar=True,
    help="User for HTTP Basic auth (local mode: the commits' author).",
)
@click.option(
    "--password", envvar="GITSTORE_PASSWORD", show_envvar=True, help="Password for HTTP Basic auth."
)
@click.option(
    "--cacert",
    envvar="GITSTORE_CACERT",
    show_envvar=True,
    type=click.Path(dir_okay=False, exists=True),
    help="CA bundle to verify TLS.",
)
@openstack_options
@click.version_option(package_name="gitstore", prog_name="gitstore")
@click.pass_context
def cli(
    ctx: click.Context,
    url: str | None,
    root: str | None,
    token: str | None,
    user: str | None,
    password: str | None,
    cacert: str | None,
    openstack: OpenStackAuth | None,
) -> None:
    """gitstore: a configuration store in which git is the database.

    Store commands talk to a server (--url) or work on a local store (--root): give exactly one.
    With Keystone credentials (--os-*, OS_*, --os-cloud) the CLI sends a Keystone token and,
    without --url, finds the server in the Keystone catalog.
    """
    ctx.obj = Connection(
        url=url,
        root=root,
        token=token,
        user=user,
        password=password,
        cacert=cacert,
        openstack=openstack,
    )


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def main() -> None:
    cli()
