"""`gitstore config get|set|override|delete`: values and overrides, as in `fuel2 config`.

The group object `config` is public so other modules can add commands to it (the versions issue
adds `history`, `diff`, `revert` and `explain`)::

    from cli.config import config, resource_options

    def register(group):
        config.add_command(history)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client
from gitstore import keypaths
from gitstore.configdb.values import Query
from gitstore.errors import InvalidInput
from gitstore.layout import scope_of
from gitstore.served import Served


def register(group: click.Group) -> None:
    group.add_command(config)


@click.group()
def config() -> None:
    """Read and write resource values and overrides of an environment."""


def resource_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--env, --level and --resource: the address of a document (the Fuel client's flags)."""
    options = [
        click.option(
            "--env", "-e", "env", type=values.ENV_ID, required=True, help="Environment id."
        ),
        click.option(
            "--level",
            "-l",
            "levels",
            callback=values.levels_callback,
            metavar="L=V[,L=V]",
            help="Level pairs, e.g. nodes=1 (default: global).",
        ),
        click.option("--resource", "-r", required=True, help="Resource name or id."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _key_option(required: bool = False, help_text: str = "Dotted key path, e.g. a.b.0.") -> Any:
    return click.option(
        "--key", "-k", required=required, callback=values.key_callback, help=help_text
    )


@config.command("get")
@resource_options
@_key_option()
@click.option(
    "--show-lookup",
    "-s",
    is_flag=True,
    help="Show, per top-level key, the level that supplied the value.",
)
@click.option(
    "--version",
    callback=values.version_callback,
    help="Read at a version: N (N-th commit) or a git revision.",
)
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(output.DOCUMENT_FORMATS),
    default="yaml",
    show_default=True,
)
@click.option(
    "--reveal",
    is_flag=True,
    help="Show secrets in plain text (needs the secrets role; the reveal is audited).",
)
@pass_client
def get(
    client: Client,
    env: int,
    levels: list,
    resource: str,
    key: str | None,
    show_lookup: bool,
    version: str | None,
    fmt: str,
    reveal: bool,
) -> None:
    """Print the effective values of a resource (or of one key) at a level.

    Secrets read as ****** unless --reveal.
    """
    query = Query(effective=True, show_lookup=show_lookup, key=key, version=version, reveal=reveal)
    data = client.read(env, levels, resource, "values", query)
    if key is not None and fmt != "plain":
        data = {key: data}
    output.emit(data, fmt)


def _write_command(kind: str, verb: str) -> click.Command:
    """`set` (values) and `override` (overrides): one implementation, two documents."""

    @resource_options
    @_key_option(help_text="Set this dotted key only (default: replace the whole document).")
    @click.option("--type", "-t", "type_", type=click.Choice(values.TYPES), help="Type of --value.")
    @click.option("--value", "-v", help="The value (needs --type).")
    @click.option(
        "--format",
        "-f",
        "fmt",
        type=click.Choice(values.STREAM_FORMATS),
        help="Read the value from stdin in this format.",
    )
    @click.option(
        "--if-version",
        "expected",
        help="Write only if the document is unchanged since this version (N or commit) of a "
        "read; else exit 1 (HTTP 412).",
    )
    @pass_client
    def write(
        client: Client,
        env: int,
        levels: list,
        resource: str,
        key: str | None,
        type_: str | None,
        value: str | None,
        fmt: str | None,
        expected: str | None,
    ) -> None:
        if key is None and type_ == "null":
            raise click.UsageError("--type null needs --key: a whole document is a mapping")
        new = values.typed_value(type_, value, fmt)
        if key is None:
            _check_document(new, from_stdin=fmt is not None)
            result = client.put(env, levels, resource, kind, new, expected)
        else:
            path = keypaths.split_dotted(key)
            result = client.update_keys(
                env, levels, resource, kind, "set", [[*path, new]], expected
            )
        _report(resource, kind, levels, f"key {key} set" if key else "document replaced", result)

    write.__doc__ = (
        f"Set the {kind} of a resource at a level: one key, or the whole document."
        f"\n\nValue sources: --type T --value V, --type null, or --format json|yaml "
        f"< file."
    )
    return click.command(verb)(write)


config.add_command(_write_command("values", "set"))
config.add_command(_write_command("overrides", "override"))


@config.command("delete")
@resource_options
@_key_option(required=True)
@click.option("--override", "overrides", is_flag=True, help="Delete from the overrides.")
@pass_client
def delete(
    client: Client, env: int, levels: list, resource: str, key: str, overrides: bool
) -> None:
    """Delete one key from the values (or --override: the overrides) of a resource."""
    kind = "overrides" if overrides else "values"
    result = client.update_keys(env, levels, resource, kind, "delete", [keypaths.split_dotted(key)])
    _report(resource, kind, levels, f"key {key} deleted", result)


def _check_document(document: Any, from_stdin: bool) -> None:
    """A whole document must be a mapping: a usage error for --value, bad input for stdin."""
    if isinstance(document, dict):
        return
    what = type(document).__name__
    if from_stdin:
        raise InvalidInput(
            f"<stdin>: the whole document must be a mapping, not {what}; to set one key to "
            "it, give --key KEY",
            path="<stdin>",
        )
    raise click.UsageError(
        f"without --key the value must be a mapping (the whole document), not {what}"
    )


def _report(resource: str, kind: str, levels: list, what: str, result: Served) -> None:
    where = scope_of(levels).strip("/") or "global"
    commit = (result.commit or "")[:12]
    click.echo(f"{resource} {kind} at {where}: {what} (version {result.version}, commit {commit})")
