"""`gitstore label list|create`: named versions of an environment (docs/versions.md).

A label is an annotated git tag of the environment repository; it never moves, and neither
the API nor the CLI deletes one. Any `--version` option of other commands accepts its name.
"""

from __future__ import annotations

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client

LABEL_COLUMNS = ("name", "version", "commit", "date", "author", "message")


def register(group: click.Group) -> None:
    group.add_command(label)


_env = click.option(
    "--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment id."
)


@click.group()
def label() -> None:
    """Labels: names for versions of an environment (annotated git tags)."""


@label.command("list")
@_env
@output.entity_format
@pass_client
def label_list(client: Client, env_id: int, fmt: str) -> None:
    """List the labels of an environment."""
    output.emit_list(client.labels(env_id), LABEL_COLUMNS, fmt)


@label.command("create")
@click.argument("name")
@_env
@click.option(
    "--version", "version", help="The version to name: N, a commit, a label (default: main)."
)
@click.option("--message", "-m", help="Why this version is named (default: 'label NAME').")
@output.entity_format
@pass_client
def label_create(
    client: Client, name: str, env_id: int, version: str | None, message: str | None, fmt: str
) -> None:
    """Name a version of an environment NAME; a name that exists is refused."""
    body = {"name": name}
    if version is not None:
        body["version"] = version
    if message is not None:
        body["message"] = message
    output.emit_entity(client.create_label(env_id, body), fmt)
