"""`gitstore import hiera` and `gitstore export hiera`: a Puppet control repository in and out.

Both run on the store's host (--root): the eyaml private key, the decrypted values and the
revealed ones never cross a network (docs/hiera.md#import).
"""

from __future__ import annotations

from pathlib import Path

import click

from cli import output, values
from cli.connection import current_connection
from cli.local_client import LocalClient
from gitstore.errors import InvalidInput

_format_option = click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(output.DOCUMENT_FORMATS),
    default="yaml",
    show_default=True,
)


def register(group: click.Group) -> None:
    group.add_command(import_group)
    group.add_command(export_group)


@click.group("import")
def import_group() -> None:
    """Import data from another tool into an environment."""


@click.group("export")
def export_group() -> None:
    """Export an environment for another tool."""


def _local(command: str) -> LocalClient:
    connection = current_connection()
    if not connection.root:
        raise click.UsageError(
            f"{command} works on a local store: give --root (or GITSTORE_ROOT) on the "
            "server's host, so keys and secrets never travel"
        )
    client = connection.client()
    assert isinstance(client, LocalClient)  # --root was given
    return client


def _read_key(path: str | None, option: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{option} {path}: cannot be read: {exc}", key=option) from exc


@import_group.command("hiera")
@click.option(
    "--hiera-config",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="The control repository's hiera.yaml (version 5).",
)
@click.option(
    "--datadir",
    type=click.Path(file_okay=False, exists=True),
    help="The data folder (default: hiera.yaml's defaults.datadir, beside it).",
)
@click.option("--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment id.")
@click.option(
    "--eyaml-private-key", type=click.Path(dir_okay=False, exists=True), help="PKCS7 private key."
)
@click.option(
    "--eyaml-public-key", type=click.Path(dir_okay=False, exists=True), help="PKCS7 certificate."
)
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing.")
@click.option("--allow-lossy", is_flag=True, help="Import even what cannot be kept exactly.")
@click.option("--resource", help="Put every key into this resource (default: by key prefix).")
@_format_option
def import_hiera(
    hiera_config: str,
    datadir: str | None,
    env_id: int,
    eyaml_private_key: str | None,
    eyaml_public_key: str | None,
    dry_run: bool,
    allow_lossy: bool,
    resource: str | None,
    fmt: str,
) -> None:
    """Import a Hiera 5 hierarchy and its data (eyaml values sealed) in one commit."""
    client = _local("import hiera")
    plan = client.store.hiera_port.plan(
        Path(hiera_config),
        Path(datadir) if datadir else None,
        public_key=_read_key(eyaml_public_key, "--eyaml-public-key"),
        private_key=_read_key(eyaml_private_key, "--eyaml-private-key"),
        resource=resource,
    )
    if dry_run:
        output.emit(plan.summary(), fmt)
        return
    if plan.lossy and not allow_lossy:
        raise InvalidInput(
            "the import would lose: " + "; ".join(plan.lossy) + " (--allow-lossy to import "
            "anyway; --dry-run shows the plan)",
            errors=[{"message": item} for item in plan.lossy],
        )
    output.emit(client.store.hiera_port.apply(env_id, plan, client.author), fmt)


@export_group.command("hiera")
@click.option("--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment id.")
@click.option(
    "--out", required=True, type=click.Path(file_okay=False), help="Folder to write into."
)
@click.option(
    "--eyaml-public-key",
    type=click.Path(dir_okay=False, exists=True),
    help="Re-encrypt secrets as eyaml values for this PKCS7 certificate.",
)
@click.option("--reveal", is_flag=True, help="Write secrets plain (a secrets holder only).")
@click.option("--version", "version", help="Export this version (default: the head).")
@_format_option
def export_hiera(
    env_id: int,
    out: str,
    eyaml_public_key: str | None,
    reveal: bool,
    version: str | None,
    fmt: str,
) -> None:
    """Write hiera.yaml (v5) and a data/ tree whose lookups answer the effective values."""
    client = _local("export hiera")
    who = client.author.name if client.author else None
    result = client.store.hiera_port.export(
        env_id,
        Path(out),
        public_key=_read_key(eyaml_public_key, "--eyaml-public-key"),
        reveal=reveal,
        who=who,
        version=version,
    )
    output.emit(result, fmt)
