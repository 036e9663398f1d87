"""The `gitstore` command group: connection options, then one module per command family.

Each family module exposes `register(group)`; `COMMAND_MODULES` lists them in help order.
"""

from __future__ import annotations

import importlib

import click

#: Modules whose `register(group)` adds commands. Later issues append theirs.
COMMAND_MODULES = ["cli.server"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="GITSTORE_URL", help="Server base URL, e.g. http://127.0.0.1:8000")
@click.option("--root", envvar="GITSTORE_ROOT", type=click.Path(file_okay=False),
              help="Work on a local store root instead of a server.")
@click.option("--token", envvar="GITSTORE_TOKEN", help="API token (Bearer).")
@click.option("--user", envvar="GITSTORE_USER", help="User for HTTP Basic auth.")
@click.option("--password", envvar="GITSTORE_PASSWORD", help="Password for HTTP Basic auth.")
@click.option("--cacert", type=click.Path(dir_okay=False), help="CA bundle to verify TLS.")
@click.pass_context
def cli(ctx: click.Context, url, root, token, user, password, cacert) -> None:
    """gitstore: a configuration store in which git is the database."""
    ctx.obj = dict(url=url, root=root, token=token, user=user, password=password, cacert=cacert)


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def main() -> None:
    cli()
