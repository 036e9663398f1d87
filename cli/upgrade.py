"""`gitstore upgrade ...`: clone an environment into a newer release and move its nodes.

    gitstore upgrade clone  --env ORIG --name NAME --release RELEASE_ID
    gitstore upgrade assign --env SEED --nodes 1,2 [--reprovision/--no-reprovision] [--roles a,b]
    gitstore upgrade vips   --env SEED
    gitstore upgrade status --env ID

See docs/upgrade.md for a whole side-by-side upgrade.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client

NODE_COLUMNS = ("id", "fqdn", "roles", "pending_roles", "status", "ip_addresses")
VIP_COLUMNS = ("name", "network", "ip", "namespace")
STATUS_FORMATS = ("text", "json", "yaml")


def register(group: click.Group) -> None:
    group.add_command(upgrade)


def _env(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--env", "-e", "env_id", type=values.ENV_ID, required=True, help=help_text)


def _names(text: str | None, option: str, convert: Callable[[str], Any] = str) -> list:
    """`1,2, 3` as a list; a usage error names `option` for an empty item or a bad one."""
    if text is None:
        return []
    items = [item.strip() for item in text.split(",")]
    try:
        if any(not item for item in items):
            raise ValueError("empty item")
        return [convert(item) for item in items]
    except ValueError as exc:
        raise click.BadParameter(
            f"{text!r} must be a comma-separated list", param_hint=option
        ) from exc


@click.group()
def upgrade() -> None:
    """Environment upgrade: clone into a new release as a seed, then move nodes into it."""


@upgrade.command("clone")
@_env("The original environment (id).")
@click.option("--name", required=True, help="Name of the new environment (the seed).")
@click.option(
    "--release",
    "release_id",
    type=click.IntRange(min=1),
    required=True,
    help="Release of the seed (id): newer than the original's, same OS.",
)
@output.entity_format
@pass_client
def clone(client: Client, env_id: int, name: str, release_id: int, fmt: str) -> None:
    """Create the upgrade seed of an environment: settings, networks, graphs and overrides
    carried into the new release, no nodes."""
    seed = client.upgrade_clone(env_id, {"name": name, "release_id": release_id})
    output.emit_entity(seed, fmt)


@upgrade.command("assign")
@_env("The seed environment (id).")
@click.option("--nodes", required=True, help="Ids of the original's nodes to move: 1,2,3.")
@click.option(
    "--reprovision/--no-reprovision",
    default=True,
    show_default=True,
    help="Reinstall the nodes: their roles become pending roles.",
)
@click.option("--roles", help="Roles of the moved nodes (default: the roles they have).")
@output.entity_format
@pass_client
def assign(
    client: Client, env_id: int, nodes: str, reprovision: bool, roles: str | None, fmt: str
) -> None:
    """Move nodes from the original into the seed, keeping their ids and IP addresses."""
    body: dict[str, Any] = {"nodes_ids": _names(nodes, "--nodes", int), "reprovision": reprovision}
    if roles is not None:
        body["roles"] = _names(roles, "--roles")
    moved = client.upgrade_assign(env_id, body)
    output.emit_list(moved, NODE_COLUMNS, fmt)


@upgrade.command("vips")
@_env("The seed environment (id).")
@output.entity_format
@pass_client
def vips(client: Client, env_id: int, fmt: str) -> None:
    """Copy the original's virtual IPs into the seed."""
    output.emit_list(client.upgrade_vips(env_id), VIP_COLUMNS, fmt, ordered=True)


@upgrade.command("status")
@_env("An original or a seed (id).")
@click.option(
    "--format", "-f", "fmt", type=click.Choice(STATUS_FORMATS), default="text", show_default=True
)
@pass_client
def status(client: Client, env_id: int, fmt: str) -> None:
    """The relation, the nodes on each side and how the seed's settings differ."""
    data = client.upgrade_status(env_id)
    if fmt != "text":
        output.emit(data, fmt)
        return
    click.echo("\n".join(status_lines(data)))


def status_lines(data: dict) -> list[str]:
    """`upgrade status` for people."""
    env_id = data["environment"]
    if data.get("role") is None:
        return [f"environment {env_id} is not in an upgrade"]
    lines = [f"environment {env_id} is the {data['role']} of environment {data['peer']}"]
    for side in ("original", "seed"):
        ids = data["nodes"][side]
        lines.append(f"nodes in the {side} ({data[side]}): {_list(ids)}")
    lines.append(f"moves in progress: {_list(data['moves_in_progress'])}")
    diff = data["settings_diff"]
    editable = diff["editable"]
    changes = (
        [f"  + {key}: {_show(value)}" for key, value in editable["added"].items()]
        + [f"  - {key}: {_show(value)}" for key, value in editable["removed"].items()]
        + [
            f"  ~ {key}: {_show(pair['old'])} -> {_show(pair['new'])}"
            for key, pair in editable["changed"].items()
        ]
    )
    lines.append("editable settings, seed against original:" + ("" if changes else " same"))
    lines += changes
    generated = [key for keys in diff["generated"].values() for key in keys]
    lines.append(f"generated settings that differ: {_list(generated)}")
    return lines


def _list(items: list) -> str:
    return ", ".join(str(item) for item in items) or "none"


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
