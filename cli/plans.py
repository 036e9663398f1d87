"""`gitstore plan ...` and `gitstore role ...`: Heat roles and deployment plans.

A PLAN is named by its uuid or its name; a ROLE by the uuid of one version, or by its name
(the latest version, or `--version N`). Hidden parameter values are shown masked unless
`--reveal` (over REST that needs the `secrets` role). See docs/plans.md.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client
from gitstore.errors import InvalidInput, NotFound
from gitstore.names import check_segment

PLAN_COLUMNS = ("uuid", "name", "description", "roles", "updated_at")
ROLE_COLUMNS = ("uuid", "name", "version", "description", "created_at")
PARAMETER_COLUMNS = ("name", "parameter_type", "value", "default", "hidden")
VALUE_TYPES = ("str", "int", "bool", "json", "yaml")


def register(group: click.Group) -> None:
    group.add_command(plan)
    group.add_command(role)


def _reveal(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--reveal", is_flag=True, help="Show hidden values (needs the secrets role)."
    )(command)


def _is_uuid(text: str) -> bool:
    try:
        uuidlib.UUID(text)
    except ValueError:
        return False
    return True


def plan_uuid(client: Client, ref: str) -> str:
    """The uuid of plan `ref` (a uuid or a name)."""
    if _is_uuid(ref):
        return ref
    for found in client.list_plans():
        if found["name"] == ref:
            return found["uuid"]
    raise NotFound(f"plan {ref!r} does not exist")


def role_uuid(client: Client, ref: str, version: int | None) -> str:
    """The uuid of role `ref` (a uuid, or a name at `version` or its latest)."""
    if _is_uuid(ref):
        return ref
    versions = [r for r in client.list_roles() if r["name"] == ref]
    if not versions:
        raise NotFound(f"role {ref!r} does not exist")
    if version is None:
        return max(versions, key=lambda r: r["version"])["uuid"]
    for found in versions:
        if found["version"] == version:
            return found["uuid"]
    raise NotFound(f"role {ref!r} has no version {version}")


def _emit_plan(plan_view: dict, fmt: str) -> None:
    if fmt != "table":
        output.emit(plan_view, fmt)
        return
    roles = [f"{r['name']} v{r['version']}" for r in plan_view["roles"]]
    head = {k: plan_view[k] for k in ("uuid", "name", "description", "updated_at")}
    output.emit_entity({**head, "roles": roles}, fmt)
    if plan_view["parameters"]:
        click.echo("")
        output.emit_list(plan_view["parameters"], PARAMETER_COLUMNS, fmt, ordered=True)


# -- plans ------------------------------------------------------------------------------------
@click.group()
def plan() -> None:
    """Deployment plans: roles composed into a Heat master template and environment."""


@plan.command("create")
@click.argument("name")
@click.option("--description", help="What the plan deploys.")
@output.entity_format
@pass_client
def plan_create(client: Client, name: str, description: str | None, fmt: str) -> None:
    """Create plan NAME (empty: add roles next)."""
    body = {"name": name, **({} if description is None else {"description": description})}
    _emit_plan(client.create_plan(body), fmt)


@plan.command("list")
@output.entity_format
@pass_client
def plan_list(client: Client, fmt: str) -> None:
    """List the plans."""
    plans = client.list_plans()
    if fmt == "table":
        plans = [
            {**p, "roles": [f"{r['name']} v{r['version']}" for r in p["roles"]]} for p in plans
        ]
    output.emit_list(plans, PLAN_COLUMNS, fmt)


@plan.command("show")
@click.argument("plan_ref", metavar="PLAN")
@_reveal
@output.entity_format
@pass_client
def plan_show(client: Client, plan_ref: str, reveal: bool, fmt: str) -> None:
    """Show PLAN with its roles and parameters."""
    _emit_plan(client.get_plan(plan_uuid(client, plan_ref), reveal), fmt)


@plan.command("delete")
@click.argument("plan_ref", metavar="PLAN")
@pass_client
def plan_delete(client: Client, plan_ref: str) -> None:
    """Delete PLAN with its master template and environment."""
    client.delete_plan(plan_uuid(client, plan_ref))
    click.echo(f"plan {plan_ref} deleted")


def _role_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option(
        "--version",
        "version",
        type=click.IntRange(min=1),
        help="The role version (default: the latest).",
    )(command)
    command = click.argument("role_ref", metavar="ROLE")(command)
    return click.argument("plan_ref", metavar="PLAN")(command)


@plan.command("add-role")
@_role_options
@output.entity_format
@pass_client
def plan_add_role(
    client: Client, plan_ref: str, role_ref: str, version: int | None, fmt: str
) -> None:
    """Add ROLE (its latest version unless --version) to PLAN."""
    uuid = plan_uuid(client, plan_ref)
    _emit_plan(client.add_plan_role(uuid, role_uuid(client, role_ref, version)), fmt)


@plan.command("remove-role")
@_role_options
@output.entity_format
@pass_client
def plan_remove_role(
    client: Client, plan_ref: str, role_ref: str, version: int | None, fmt: str
) -> None:
    """Remove ROLE from PLAN (by name: the version the plan holds, or --version)."""
    uuid = plan_uuid(client, plan_ref)
    target = role_ref
    if not _is_uuid(role_ref):
        held = [
            r
            for r in client.get_plan(uuid)["roles"]
            if r["name"] == role_ref and version in (None, r["version"])
        ]
        if len(held) > 1:
            raise click.UsageError(
                f"plan {plan_ref} holds versions "
                f"{', '.join(str(r['version']) for r in held)} of role "
                f"{role_ref}; give --version"
            )
        target = held[0]["uuid"] if held else role_uuid(client, role_ref, version)
    _emit_plan(client.remove_plan_role(uuid, target), fmt)


@plan.command("set")
@click.argument("plan_ref", metavar="PLAN")
@click.argument("assignments", nargs=-1, required=True, metavar="NAME=VALUE...")
@click.option(
    "--type",
    "type_",
    type=click.Choice(VALUE_TYPES),
    default="str",
    show_default=True,
    help="How to read every VALUE.",
)
@output.entity_format
@pass_client
def plan_set(
    client: Client, plan_ref: str, assignments: tuple[str, ...], type_: str, fmt: str
) -> None:
    """Set parameter values of PLAN, all or nothing (e.g. compute-1::count=3)."""
    items = []
    for assignment in assignments:
        name, sep, text = assignment.partition("=")
        if not sep or not name:
            raise click.UsageError(f"{assignment!r} must look like NAME=VALUE")
        items.append({"name": name, "value": values.cast(type_, text, name)})
    _emit_plan(client.set_plan_values(plan_uuid(client, plan_ref), items), fmt)


@plan.command("export")
@click.argument("plan_ref", metavar="PLAN")
@click.option(
    "--dir",
    "directory",
    required=True,
    type=click.Path(file_okay=False),
    help="Write the files here (created if missing).",
)
@_reveal
@pass_client
def plan_export(client: Client, plan_ref: str, directory: str, reveal: bool) -> None:
    """Write plan.yaml, environment.yaml and each provider-N-V.yaml of PLAN to --dir."""
    files = client.export_plan(plan_uuid(client, plan_ref), reveal)
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        try:
            check_segment(name, "file name")  # a server never names a path outside --dir
        except InvalidInput as exc:
            raise InvalidInput(f"export names an unsafe file: {exc.message}") from None
        (target / name).write_text(text, encoding="utf-8")
        click.echo(str(target / name))


# -- roles ------------------------------------------------------------------------------------
@click.group()
def role() -> None:
    """Heat roles: versioned templates that plans add as groups of servers."""


@role.command("upload")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--name", help="The role's name (default: FILE's name without extension).")
@click.option("--description", help="What the role is.")
@output.entity_format
@pass_client
def role_upload(
    client: Client, file: Any, name: str | None, description: str | None, fmt: str
) -> None:
    """Upload FILE as a new role, or as the next version of an existing one.

    Uploading the same content again makes no new version.
    """
    if name is None:
        if file.name == "<stdin>":
            raise click.UsageError("give --name when reading the role from stdin")
        name = Path(file.name).stem
    content = values.read_text(file, file.name)
    entity, created = client.upload_role(name, content, description)
    if fmt != "table":
        output.emit(entity, fmt)
        return
    state = "uploaded" if created else "unchanged (same content as the latest)"
    click.echo(f"role {entity['name']} version {entity['version']} {state}: {entity['uuid']}")


@role.command("list")
@click.option("--latest", is_flag=True, help="Only the latest version of each role.")
@output.entity_format
@pass_client
def role_list(client: Client, latest: bool, fmt: str) -> None:
    """List roles, every version unless --latest."""
    output.emit_list(client.list_roles(latest), ROLE_COLUMNS, fmt, ordered=True)
