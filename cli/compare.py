"""`gitstore env compare A B`: what differs between two environments (docs/versions.md).

One REST call (`GET /environments/A/compare/B`) or, with `--root`, the same facade call. People
get a list per node of `key: A-value | B-value` with the level each won at; scripts get
`--format json|yaml`, the REST answer itself.
"""

from __future__ import annotations

import json
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client
from cli.entities import env

FORMATS = ("table", "json", "yaml")


def register(group: click.Group) -> None:
    env.add_command(compare)


@click.command()
@click.argument("env_a", type=values.ENV_ID)
@click.argument("env_b", type=values.ENV_ID)
@click.option("--node", "-n", help="One node: its fqdn (or node id of either environment).")
@click.option("--resource", "-r", help="Only this resource.")
@click.option("--key", "-k", callback=values.key_callback, help="Only keys at or under a.b.")
@click.option("--version-a", help="The version of A (number, commit or label; default: head).")
@click.option("--version-b", help="The version of B (default: head).")
@click.option("--offset", type=click.IntRange(min=0), help="Matched nodes to skip (paging).")
@click.option("--limit", type=click.IntRange(1, 1000), help="Matched nodes per page (100).")
@click.option(
    "--format", "-f", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
)
@pass_client
def compare(client: Client, env_a: int, env_b: int, fmt: str, **params: Any) -> None:
    """Keys whose effective values differ between environments A and B, per node (matched by
    fqdn) and for the global level; nodes one of them has alone. Secrets stay masked."""
    asked = {name: value for name, value in params.items() if value is not None}
    data = client.compare(env_a, env_b, **asked)
    if fmt != "table":
        output.emit(data, fmt)
        return
    for line, style in table_lines(data):
        click.echo(click.style(line, **style))


def table_lines(data: dict) -> list[tuple[str, dict]]:
    """The lines of the table form and their click styles."""
    a, b = data["a"], data["b"]
    lines: list[tuple[str, dict]] = [
        (f"A: environment {a['environment']} version {a['version']} ({a['commit'][:12]})", {}),
        (f"B: environment {b['environment']} version {b['version']} ({b['commit'][:12]})", {}),
    ]
    for side in ("only_a", "only_b"):
        names = data["resources"][side]
        if names:
            lines.append((f"resources in {side[-1].upper()} only: {', '.join(names)}", {}))
    scopes = ([("global", data["global"])] if data["global"] else []) + [
        (f"node {n['name']} (A {n['a']['node']}, B {n['b']['node']})", n) for n in data["nodes"]
    ]
    for title, scope in scopes:
        if scope["keys"]:
            lines.append((title, {"bold": True}))
            lines += [(_key_line(entry), {"fg": "yellow"}) for entry in scope["keys"]]
        if scope["more"]:
            lines.append((f"  ... {scope['more']} more keys (narrow with --resource/--key)", {}))
    if not any(scope["keys"] for _, scope in scopes):
        lines.append(("no differences in the nodes compared", {}))
    for side in ("only_a", "only_b"):
        alone = data[side]
        if alone["count"]:
            names = ", ".join(n["name"] for n in alone["nodes"])
            lines.append((f"nodes in {side[-1].upper()} only ({alone['count']}): {names}", {}))
    page = data["page"]
    if page["next"] is not None:
        lines.append((f"{page['matched']} nodes matched; next page: --offset {page['next']}", {}))
    return lines


def _key_line(entry: dict) -> str:
    sides = " | ".join(_side(entry[which]) for which in ("a", "b"))
    note = f"  ({entry['note']})" if entry.get("note") else ""
    return f"  {entry['resource']} {entry['key']}: {sides}{note}"


def _side(value: dict | None) -> str:
    if value is None:
        return "(absent)"
    commit = (value.get("commit") or "")[:12]
    return f"{json.dumps(value['value'])} at {value['level']} {value['kind']} {commit}".rstrip()
