"""`gitstore tag ...` and `gitstore node ...`: role decomposition from the command line.

Tags belong to exactly one owner: `--release ID`, `--env ID` (the cluster: its list is the
merged view) or `--plugin ID`. Nodes are addressed by id or fqdn within `--env ID`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client
from gitstore.deployment.inventory import STATUSES as NODE_STATUSES

TAG_COLUMNS = ("name", "has_primary", "owner_type", "owner_id")
NODE_COLUMNS = ("id", "fqdn", "roles", "pending_roles", "status", "tags")


def register(group: click.Group) -> None:
    group.add_command(tag)
    group.add_command(node)


def _owner(command: Callable[..., Any]) -> Callable[..., Any]:
    for flags, kind in (
        (("--plugin",), "plugin"),
        (("--env", "-e"), "cluster"),
        (("--release",), "release"),
    ):
        command = click.option(
            *flags, kind, type=click.IntRange(min=1), help=f"Tags of this {kind} (id)."
        )(command)
    return command


def _one_owner(release: int | None, cluster: int | None, plugin: int | None) -> tuple[str, int]:
    given = [
        (k, v)
        for k, v in (("release", release), ("cluster", cluster), ("plugin", plugin))
        if v is not None
    ]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --release, --env or --plugin")
    return given[0]


def _meta(has_primary: bool | None, meta: str | None) -> dict:
    """The tag meta of `--meta JSON` with `--has-primary/--no-has-primary` applied."""
    try:
        parsed = values.load_json(meta) if meta else {}
    except ValueError as exc:
        raise click.BadParameter(f"--meta is not JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise click.BadParameter("--meta must be a JSON object")
    if has_primary is not None:
        parsed["has_primary"] = has_primary
    return parsed


def _tag_rows(tags: list[dict]) -> list[dict]:
    return [{**t, "has_primary": t.get("meta", {}).get("has_primary")} for t in tags]


# -- tags -------------------------------------------------------------------------------------
@click.group()
def tag() -> None:
    """Tags: what roles produce, what tasks select, what nodes carry."""


@tag.command("list")
@_owner
@output.entity_format
@pass_client
def tag_list(
    client: Client, release: int | None, cluster: int | None, plugin: int | None, fmt: str
) -> None:
    """List an owner's tags (an environment's list is the merged view)."""
    kind, owner_id = _one_owner(release, cluster, plugin)
    tags = client.list_tags(kind, owner_id)
    output.emit_list(_tag_rows(tags) if fmt == "table" else tags, TAG_COLUMNS, fmt, ordered=True)


def _meta_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--meta", help="Tag metadata as a JSON object.")(command)
    return click.option(
        "--has-primary/--no-has-primary",
        default=None,
        help="Whether one node is elected primary for the tag.",
    )(command)


@tag.command("create")
@click.argument("name")
@_owner
@_meta_options
@output.entity_format
@pass_client
def tag_create(
    client: Client,
    name: str,
    release: int | None,
    cluster: int | None,
    plugin: int | None,
    has_primary: bool | None,
    meta: str | None,
    fmt: str,
) -> None:
    """Create tag NAME for one owner."""
    kind, owner_id = _one_owner(release, cluster, plugin)
    body = {"name": name, "meta": {"has_primary": False, **_meta(has_primary, meta)}}
    output.emit_entity(client.create_tag(kind, owner_id, body), fmt)


@tag.command("update")
@click.argument("name")
@_owner
@_meta_options
@output.entity_format
@pass_client
def tag_update(
    client: Client,
    name: str,
    release: int | None,
    cluster: int | None,
    plugin: int | None,
    has_primary: bool | None,
    meta: str | None,
    fmt: str,
) -> None:
    """Replace the metadata of tag NAME; has_primary stays as it is unless given."""
    kind, owner_id = _one_owner(release, cluster, plugin)
    given = _meta(has_primary, meta)
    if "has_primary" not in given:
        given["has_primary"] = _current_has_primary(client, kind, owner_id, name)
    body = {"name": name, "meta": given}
    output.emit_entity(client.update_tag(kind, owner_id, name, body), fmt)


def _current_has_primary(client: Client, kind: str, owner_id: int, name: str) -> bool:
    for current in client.list_tags(kind, owner_id):
        if current["name"] == name and current.get("owner_type") == kind:
            return bool(current.get("meta", {}).get("has_primary"))
    return False  # not this owner's: the update names the missing tag


@tag.command("delete")
@click.argument("name")
@_owner
@pass_client
def tag_delete(
    client: Client, name: str, release: int | None, cluster: int | None, plugin: int | None
) -> None:
    """Delete tag NAME; roles and nodes lose it too."""
    kind, owner_id = _one_owner(release, cluster, plugin)
    client.delete_tag(kind, owner_id, name)
    click.echo(f"tag {name} deleted from {kind} {owner_id}")


def _node_tag_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.argument("tags", nargs=-1, required=True)(command)
    command = click.option("--node", required=True, help="Node id or fqdn.")(command)
    return click.option(
        "--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment (cluster) id."
    )(command)


@tag.command("assign")
@_node_tag_options
@output.entity_format
@pass_client
def tag_assign(client: Client, env_id: int, node: str, tags: tuple[str, ...], fmt: str) -> None:
    """Give a node TAGS (instance tags such as mysql:1 too)."""
    output.emit_entity(client.assign_tags(env_id, node, list(tags)), fmt)


@tag.command("unassign")
@_node_tag_options
@pass_client
def tag_unassign(client: Client, env_id: int, node: str, tags: tuple[str, ...]) -> None:
    """Take TAGS off a node (its role-name tags always stay)."""
    client.unassign_tags(env_id, node, list(tags))
    click.echo(f"node {node}: tags {', '.join(tags)} unassigned")


@tag.command("check")
@click.option(
    "--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment (cluster) id."
)
@output.entity_format
@pass_client
def tag_check(client: Client, env_id: int, fmt: str) -> None:
    """Warn about mandatory tags nobody carries and tags without a primary (exit 0)."""
    warnings = client.tags_check(env_id)["warnings"]
    if fmt != "table":
        output.emit(warnings, fmt)
    elif not warnings:
        click.echo(f"environment {env_id}: no tag warnings")
    else:
        for warning in warnings:
            click.echo(f"warning: {warning['message']}")


# -- nodes ------------------------------------------------------------------------------------
@click.group()
def node() -> None:
    """The node inventory of an environment."""


def _env(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment (cluster) id."
    )(command)


def _node_fields(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--name", help="A display name."),
        click.option(
            "--roles", callback=values.list_callback, metavar="ROLE,...", help="Assigned roles."
        ),
        click.option(
            "--pending-roles",
            callback=values.list_callback,
            metavar="ROLE,...",
            help="Roles to be deployed.",
        ),
        click.option("--status", type=click.Choice(NODE_STATUSES)),
        click.option(
            "--ip",
            "ips",
            multiple=True,
            metavar="NETWORK=ADDRESS",
            help="An address on a network (repeatable).",
        ),
        click.option("--pending-addition/--no-pending-addition", default=None),
        click.option("--pending-deletion/--no-pending-deletion", default=None),
        output.entity_format,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _node_body(**fields: Any) -> dict:
    ips = fields.pop("ips", ())
    body = {
        k: ([str(v) for v in value] if k in ("roles", "pending_roles") else value)
        for k, value in fields.items()
        if value is not None
    }
    if ips:
        pairs = [ip.partition("=") for ip in ips]
        if any(not sep or not net or not addr for net, sep, addr in pairs):
            raise click.BadParameter("--ip must look like NETWORK=ADDRESS")
        body["ip_addresses"] = {net: addr for net, _, addr in pairs}
    return body


@node.command("list")
@_env
@output.entity_format
@pass_client
def node_list(client: Client, env_id: int, fmt: str) -> None:
    """List the nodes of an environment with their computed tags."""
    output.emit_list(client.list_nodes(env_id), NODE_COLUMNS, fmt)


@node.command("show")
@click.argument("node_ref", metavar="NODE")
@_env
@output.entity_format
@pass_client
def node_show(client: Client, node_ref: str, env_id: int, fmt: str) -> None:
    """Show NODE (id or fqdn)."""
    output.emit_entity(client.get_node(env_id, node_ref), fmt)


@node.command("create")
@_env
@click.option("--fqdn", required=True, help="The node's fully qualified name.")
@click.option(
    "--id",
    "node_id",
    type=click.IntRange(min=1),
    help="Choose the id (default: the lowest unused in the store).",
)
@_node_fields
@pass_client
def node_create(
    client: Client, env_id: int, fqdn: str, node_id: int | None, fmt: str, **fields: Any
) -> None:
    """Add a node to an environment."""
    body = {"fqdn": fqdn, **({"id": node_id} if node_id else {}), **_node_body(**fields)}
    output.emit_entity(client.create_node(env_id, body), fmt)


@node.command("create-many")
@_env
@click.option(
    "--file",
    "source",
    type=click.File("rb"),
    required=True,
    help="A YAML or JSON list of node bodies ({fqdn, roles?, id?, ...}); - reads stdin.",
)
@output.entity_format
@pass_client
def node_create_many(client: Client, env_id: int, source: Any, fmt: str) -> None:
    """Add every node of a file to an environment, in one commit (all or none)."""
    name = getattr(source, "name", "--file")
    bodies = values.jsonable(values.parse_stream(values.read_text(source, name), "yaml", name))
    if not isinstance(bodies, list):
        raise click.BadParameter("the file must hold a list of node bodies", param_hint="--file")
    output.emit_list(client.create_nodes(env_id, bodies), NODE_COLUMNS, fmt)


@node.command("update")
@click.argument("node_ref", metavar="NODE")
@_env
@click.option("--fqdn", help="A new fqdn.")
@_node_fields
@pass_client
def node_update(
    client: Client, node_ref: str, env_id: int, fqdn: str | None, fmt: str, **fields: Any
) -> None:
    """Change the fields given of NODE (id or fqdn)."""
    body = _node_body(fqdn=fqdn, **fields)
    if not body:
        raise click.UsageError("nothing to change: give at least one field option")
    output.emit_entity(client.update_node(env_id, node_ref, body), fmt)


@node.command("delete")
@click.argument("node_ref", metavar="NODE")
@_env
@pass_client
def node_delete(client: Client, node_ref: str, env_id: int) -> None:
    """Remove NODE from its environment (its primaries are re-elected)."""
    client.delete_node(env_id, node_ref)
    click.echo(f"node {node_ref} removed from environment {env_id}")
