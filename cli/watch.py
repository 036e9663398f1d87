"""`gitstore watch`: print each change of a value, or each commit, as it lands (docs/watch.md).

With `--resource` it repeats a blocking query of the effective value (`?index=&wait=`), so it
prints when a commit changes *that* answer; without, it follows the environment's commit
stream. `--exec CMD` runs CMD through the shell once per change (not for the value shown at
start) with the new value on stdin, as `consul watch` does.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client
from gitstore.configdb.values import Query

#: How long one blocking query is held before it is asked again (the server clamps at 10 min).
ROUND_SECONDS = 300.0


def register(group: click.Group) -> None:
    group.add_command(watch)


@click.command()
@click.option("--env", "-e", "env", type=values.ENV_ID, required=True, help="Environment id.")
@click.option(
    "--level",
    "-l",
    "levels",
    callback=values.levels_callback,
    metavar="L=V[,L=V]",
    help="Level pairs, e.g. nodes=1 (with --resource).",
)
@click.option("--resource", "-r", help="Watch this resource's effective values.")
@click.option("--key", "-k", callback=values.key_callback, help="Only this dotted key path.")
@click.option(
    "--exec", "command", metavar="CMD", help="Run CMD (shell) per change, value on stdin."
)
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(output.DOCUMENT_FORMATS),
    default="json",
    show_default=True,
)
@click.option("--count", type=click.IntRange(1), help="Stop after N changes.")
@pass_client
def watch(
    client: Client,
    env: int,
    levels: list[tuple[str, str]],
    resource: str | None,
    key: str | None,
    command: str | None,
    fmt: str,
    count: int | None,
) -> None:
    """Print each change as it lands: of a value (--resource), else every commit."""
    if (levels or key) and not resource:
        raise click.UsageError("--level and --key need --resource")
    changed = 0
    for is_change, data in _changes(client, env, levels, resource, key):
        output.emit(data, fmt)
        if not is_change:
            continue  # the value at start: shown, but no change to act on
        if command:
            _run(command, output.render(data, fmt))
        changed += 1
        if count is not None and changed >= count:
            return


def _changes(
    client: Client, env: int, levels: list[tuple[str, str]], resource: str | None, key: str | None
) -> Iterator[tuple[bool, Any]]:
    """(whether it is a change, the data): a value's, or each commit event."""
    if resource:
        yield from _value_changes(client, env, levels, resource, key)
    else:
        yield from ((True, event) for event in client.events(env))


def _value_changes(
    client: Client, env: int, levels: list[tuple[str, str]], resource: str, key: str | None
) -> Iterator[tuple[bool, Any]]:
    """The value now, then each different value, as blocking queries return them."""
    query = Query(effective=True, key=key)
    data, index = client.watch_read(env, levels, resource, query, None, 0)
    yield False, data
    while True:
        answer, index = client.watch_read(env, levels, resource, query, index, ROUND_SECONDS)
        if answer != data:
            data = answer
            yield True, data


def _run(command: str, text: str) -> None:
    """Run `command` through the shell with `text` on stdin; a failure is reported, and the
    watch goes on (a handler that fails once must not stop the next change from running it)."""
    done = subprocess.run(command, shell=True, input=text + "\n", text=True, check=False)
    if done.returncode != 0:
        click.echo(f"warning: {command!r} exited {done.returncode}", err=True)
