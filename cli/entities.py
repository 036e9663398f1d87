"""`gitstore env|component|def|level ...`: the entities of the ConfigDB.

Entity ids are positional; components and definitions may also be named by name. Lists print a
table sorted by id (`--format json|yaml` for scripts); one entity prints a field/value table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client
from gitstore.errors import NotFound
from gitstore.names import is_number

ENV_COLUMNS = ("id", "name", "components", "hierarchy_levels", "merge")
COMPONENT_COLUMNS = ("id", "name", "resource_definitions")
DEFINITION_COLUMNS = ("id", "name", "component_id", "content")
LEVEL_COLUMNS = ("name", "parent", "values")


def register(group: click.Group) -> None:
    for command in (env, component, definition, level):
        group.add_command(command)


def version_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--version",
        callback=values.version_callback,
        help="Read at a version: N or a git revision.",
    )(command)


def _fields(**fields: Any) -> dict:
    """A request body of the options that were given."""
    return {name: value for name, value in fields.items() if value is not None}


def component_id(client: Client, ref: str | int) -> int:
    """The id of component `ref` (an id or a name)."""
    if isinstance(ref, int) or is_number(str(ref)):
        return int(ref)
    for item in client.list_components():
        if item["name"] == ref:
            return item["id"]
    raise NotFound(f"component {ref!r} does not exist")


def definition_id(client: Client, ref: str | int) -> int:
    """The id of resource definition `ref` (an id or a name)."""
    if isinstance(ref, int) or is_number(str(ref)):
        return int(ref)
    for item in client.list_definitions():
        if item["name"] == ref:
            return item["id"]
    raise NotFound(f"resource definition {ref!r} does not exist")


# -- environments --------------------------------------------------------------------------
@click.group()
def env() -> None:
    """Environments: components, hierarchy levels and merge mode."""


def _env_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--name", help="A display name."),
        click.option(
            "--components",
            callback=values.list_callback,
            metavar="ID|NAME,...",
            help="Attached components, by id or name.",
        ),
        click.option(
            "--levels",
            callback=values.list_callback,
            metavar="LEVEL,...",
            help="Hierarchy levels, least specific first, e.g. role,nodes.",
        ),
        click.option("--merge", type=click.Choice(["deep", "shallow"]), help="Merge mode."),
        output.entity_format,
    ]
    for option in reversed(options):
        command = option(command)
    return command


@env.command("create")
@click.option("--id", "env_id", type=click.IntRange(min=1), help="Choose the id (= cluster id).")
@_env_options
@pass_client
def env_create(
    client: Client,
    env_id: int | None,
    name: str | None,
    components: list | None,
    levels: list | None,
    merge: str | None,
    fmt: str,
) -> None:
    """Create an environment (one new repository)."""
    body = _fields(
        id=env_id, name=name, components=components, hierarchy_levels=_names(levels), merge=merge
    )
    output.emit_entity(client.create_environment(body), fmt)


@env.command("list")
@output.entity_format
@pass_client
def env_list(client: Client, fmt: str) -> None:
    """List environments."""
    output.emit_list(client.list_environments(), ENV_COLUMNS, fmt)


@env.command("show")
@click.argument("env_id", type=int)
@version_option
@output.entity_format
@pass_client
def env_show(client: Client, env_id: int, version: str | None, fmt: str) -> None:
    """Show one environment."""
    output.emit_entity(client.get_environment(env_id, version), fmt)


@env.command("update")
@click.argument("env_id", type=int)
@_env_options
@pass_client
def env_update(
    client: Client,
    env_id: int,
    name: str | None,
    components: list | None,
    levels: list | None,
    merge: str | None,
    fmt: str,
) -> None:
    """Change the fields given (a level holding data cannot be dropped)."""
    body = _fields(name=name, components=components, hierarchy_levels=_names(levels), merge=merge)
    if not body:
        raise click.UsageError("nothing to update: give --name, --components, --levels or --merge")
    output.emit_entity(client.update_environment(env_id, body), fmt)


@env.command("delete")
@click.argument("env_id", type=int)
@pass_client
def env_delete(client: Client, env_id: int) -> None:
    """Archive an environment's repository (it is moved aside, never destroyed)."""
    client.delete_environment(env_id)
    click.echo(f"environment {env_id} deleted (its repository is archived)")


def _names(items: list | None) -> list[str] | None:
    return None if items is None else [str(item) for item in items]


# -- components ----------------------------------------------------------------------------
@click.group()
def component() -> None:
    """Components: named groups of resource definitions."""


@component.command("create")
@click.option("--name", required=True, help="Component name.")
@click.option(
    "--resources",
    callback=values.list_callback,
    metavar="NAME,...",
    help="Resource definitions to create with it.",
)
@output.entity_format
@pass_client
def component_create(client: Client, name: str, resources: list | None, fmt: str) -> None:
    """Create a component (and its resource definitions) in one commit."""
    body = {"name": name, "resource_definitions": [{"name": str(r)} for r in resources or []]}
    output.emit_entity(_component_row(client.create_component(body)), fmt)


@component.command("list")
@version_option
@output.entity_format
@pass_client
def component_list(client: Client, version: str | None, fmt: str) -> None:
    """List components."""
    rows = [_component_row(item) for item in client.list_components(version)]
    output.emit_list(rows, COMPONENT_COLUMNS, fmt)


@component.command("show")
@click.argument("ref")
@version_option
@output.entity_format
@pass_client
def component_show(client: Client, ref: str, version: str | None, fmt: str) -> None:
    """Show one component (REF: id or name)."""
    item = client.get_component(component_id(client, ref), version)
    output.emit_entity(_component_row(item), fmt)


@component.command("update")
@click.argument("ref")
@click.option("--name", required=True, help="New name.")
@output.entity_format
@pass_client
def component_update(client: Client, ref: str, name: str, fmt: str) -> None:
    """Rename a component (REF: id or name)."""
    item = client.update_component(component_id(client, ref), {"name": name})
    output.emit_entity(_component_row(item), fmt)


@component.command("delete")
@click.argument("ref")
@pass_client
def component_delete(client: Client, ref: str) -> None:
    """Delete a component and its resource definitions (refused while data uses them)."""
    ident = component_id(client, ref)
    client.delete_component(ident)
    click.echo(f"component {ident} deleted")


def _component_row(item: dict) -> dict:
    """A component with its definitions named (the full entities are in `def list`)."""
    names = [d["name"] for d in item.get("resource_definitions") or []]
    return {**item, "resource_definitions": names}


# -- resource definitions ------------------------------------------------------------------
@click.group("def")
def definition() -> None:
    """Resource definitions: the documents environments hold values for."""


def _content_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--content", help="Default content (needs --type)."),
        click.option(
            "--type", "-t", "type_", type=click.Choice(values.TYPES), help="Type of --content."
        ),
        click.option(
            "--file",
            "content_file",
            type=click.File("r"),
            help="Read content from a json/yaml file ('-' for stdin).",
        ),
        click.option(
            "--input-format",
            "stream_fmt",
            type=click.Choice(values.STREAM_FORMATS),
            help="Read content from stdin (or --file) in this format.",
        ),
        output.entity_format,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _content(
    type_: str | None, content: str | None, content_file: Any, stream_fmt: str | None
) -> Any:
    """The content the options give, or None when none was given."""
    if content is None and type_ is None and content_file is None and stream_fmt is None:
        return None
    if content_file is not None:
        if content is not None or type_ is not None:
            raise click.UsageError("--file and --content/--type exclude each other")
        name = getattr(content_file, "name", "<file>")
        fmt = stream_fmt or ("json" if str(name).endswith(".json") else "yaml")
        return values.typed_value(None, None, fmt, stream=content_file, source=str(name))
    return values.typed_value(
        type_, content, stream_fmt, value_flag="--content", format_flag="--input-format"
    )


@definition.command("create")
@click.option("--name", required=True, help="Resource name (may contain '/').")
@click.option(
    "--component", "component_ref", metavar="ID|NAME", help="Owning component (default: none)."
)
@_content_options
@pass_client
def def_create(
    client: Client,
    name: str,
    component_ref: str | None,
    content: str | None,
    type_: str | None,
    content_file: Any,
    stream_fmt: str | None,
    fmt: str,
) -> None:
    """Create a resource definition."""
    body: dict[str, Any] = {"name": name}
    if component_ref:
        body["component_id"] = component_id(client, component_ref)
    data = _content(type_, content, content_file, stream_fmt)
    if data is not None or type_ == "null":
        body["content"] = data
    output.emit_entity(client.create_definition(body), fmt)


@definition.command("list")
@click.option(
    "--component",
    "component_ref",
    metavar="ID|NAME",
    help="Only this component's definitions ('' for those of none).",
)
@version_option
@output.entity_format
@pass_client
def def_list(client: Client, component_ref: str | None, version: str | None, fmt: str) -> None:
    """List resource definitions."""
    owner: str | int | None
    if component_ref is None or component_ref == "":
        owner = component_ref
    else:
        owner = component_id(client, component_ref)
    output.emit_list(client.list_definitions(owner, version), DEFINITION_COLUMNS, fmt)


@definition.command("show")
@click.argument("ref")
@version_option
@output.entity_format
@pass_client
def def_show(client: Client, ref: str, version: str | None, fmt: str) -> None:
    """Show one resource definition (REF: id or name)."""
    output.emit_entity(client.get_definition(definition_id(client, ref), version), fmt)


@definition.command("update")
@click.argument("ref")
@click.option("--name", help="New name (refused while an environment holds data for it).")
@click.option(
    "--component", "component_ref", metavar="ID|NAME", help="Move to this component ('' for none)."
)
@_content_options
@pass_client
def def_update(
    client: Client,
    ref: str,
    name: str | None,
    component_ref: str | None,
    content: str | None,
    type_: str | None,
    content_file: Any,
    stream_fmt: str | None,
    fmt: str,
) -> None:
    """Change the name, component or content of a resource definition (REF: id or name)."""
    body: dict[str, Any] = _fields(name=name)
    if component_ref is not None:
        body["component_id"] = component_id(client, component_ref) if component_ref else None
    data = _content(type_, content, content_file, stream_fmt)
    if data is not None or type_ == "null":
        body["content"] = data
    if not body:
        raise click.UsageError("nothing to update: give --name, --component or content")
    output.emit_entity(client.update_definition(definition_id(client, ref), body), fmt)


@definition.command("delete")
@click.argument("ref")
@pass_client
def def_delete(client: Client, ref: str) -> None:
    """Delete a resource definition (refused while an environment holds data for it)."""
    ident = definition_id(client, ref)
    client.delete_definition(ident)
    click.echo(f"resource definition {ident} deleted")


# -- hierarchy levels ----------------------------------------------------------------------
@click.group()
def level() -> None:
    """Hierarchy levels of an environment."""


@level.command("list")
@click.option("--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment id.")
@version_option
@output.entity_format
@pass_client
def level_list(client: Client, env_id: int, version: str | None, fmt: str) -> None:
    """List the levels, least specific first, with the values that hold data."""
    output.emit_list(client.list_levels(env_id, version), LEVEL_COLUMNS, fmt, ordered=True)


@level.command("show")
@click.argument("name")
@click.option("--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment id.")
@version_option
@output.entity_format
@pass_client
def level_show(client: Client, name: str, env_id: int, version: str | None, fmt: str) -> None:
    """Show one level and its values."""
    output.emit_entity(client.get_level(env_id, name, version), fmt)
