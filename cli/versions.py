"""`gitstore config history|diff|revert|explain`: versions of an environment.

Each command mirrors one REST call (docs/versions.md). People get a table (history, explain) or
a coloured `+`/`-`/`~` list per key (diff); scripts get `--format json|yaml`.
"""

from __future__ import annotations

import json
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.config import config
from cli.connection import pass_client

FORMATS = ("table", "json", "yaml")
_SIGNS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


def register(group: click.Group) -> None:
    for command in (history, diff, revert, explain):
        config.add_command(command)


def _path(levels: list[tuple[str, str]]) -> str | None:
    """Level pairs as the `path` parameter (`nodes/1`); None when no level was given."""
    return "/".join(f"{level}/{value}" for level, value in levels) or None


def _levels_text(levels: list[tuple[str, str]]) -> str | None:
    return ",".join(f"{level}={value}" for level, value in levels) or None


_env = click.option("--env", "-e", "env", type=values.ENV_ID, required=True, help="Environment id.")
_level = click.option(
    "--level",
    "-l",
    "levels",
    callback=values.levels_callback,
    metavar="L=V[,L=V]",
    help="Level pairs, e.g. nodes=1.",
)
_format = click.option(
    "--format", "-f", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
)
_key = click.option("--key", "-k", callback=values.key_callback, help="Dotted key path, e.g. a.b.")


@click.command()
@_env
@_level
@click.option("--resource", "-r", help="Only changes of this resource.")
@_key
@click.option("--limit", "-n", type=click.IntRange(1, 10_000), help="At most N entries.")
@click.option("--since", help="Stop at this version (excluded).")
@_format
@pass_client
def history(
    client: Client,
    env: int,
    levels: list,
    resource: str | None,
    key: str | None,
    limit: int | None,
    since: str | None,
    fmt: str,
) -> None:
    """Commits that changed an environment, newest first.

    With --key, --level and --resource: the history of that key's effective value at that
    level (only commits where it changed, with old and new value).
    """
    data = client.history(
        env, path=_path(levels), resource=resource, key=key, limit=limit, since=since
    )
    if fmt != "table":
        output.emit(data, fmt)
        return
    entries = data["entries"]
    if key is not None and levels:
        rows = [
            [
                e["version"],
                e["commit"][:12],
                e["date"],
                e["author"],
                _shown(e, "old"),
                _shown(e, "new"),
            ]
            for e in entries
        ]
        click.echo(output.table(rows, ["version", "commit", "date", "author", "old", "new"]))
        return
    rows = [
        [
            e["version"],
            e["commit"][:12],
            e["date"],
            e["author"],
            _subject(e["message"]),
            _changes(e["changes"]),
        ]
        for e in entries
    ]
    click.echo(output.table(rows, ["version", "commit", "date", "author", "message", "changes"]))


def _shown(entry: dict, field: str) -> str:
    return _json(entry[field]) if field in entry else "(absent)"


def _json(value: Any) -> str:
    """A value as JSON, so `"1500"` and `1500` or `[a, b]` and `"a, b"` read differently."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _subject(message: str) -> str:
    return message.splitlines()[0] if message else ""


#: Keys shown per changed document in the table; `--format yaml|json` lists them all.
_KEYS_SHOWN = 4


def _changes(changes: list[dict]) -> str:
    parts = []
    for change in changes:
        keys = (
            [f"+{k}" for k in change["keys_added"]]
            + [f"-{k}" for k in change["keys_removed"]]
            + [f"~{k}" for k in change["keys_changed"]]
        )
        if len(keys) > _KEYS_SHOWN:
            keys = [*keys[:_KEYS_SHOWN], f"(+{len(keys) - _KEYS_SHOWN} more)"]
        parts.append(
            f"{change['level']} {change['resource']} {change['kind']} {' '.join(keys)}".rstrip()
        )
    return "; ".join(parts)


@click.command()
@_env
@click.option("--from", "source", required=True, help="The older version.")
@click.option("--to", "target", help="The newer version (default: the head).")
@_level
@click.option("--resource", "-r", help="Only this resource.")
@_format
@pass_client
def diff(
    client: Client,
    env: int,
    source: str,
    target: str | None,
    levels: list,
    resource: str | None,
    fmt: str,
) -> None:
    """Effective values that differ between two versions, per level and resource."""
    data = client.diff(env, source, target, scope=_levels_text(levels), resource=resource)
    if fmt != "table":
        output.emit(data, fmt)
        return
    if not data["scopes"]:
        click.echo(f"no differences between {data['from'][:12]} and {data['to'][:12]}")
        return
    for scope, resources in data["scopes"].items():
        for name, change in resources.items():
            click.echo(click.style(f"{scope} {name}", bold=True))
            for line, colour in _diff_lines(change):
                click.echo(click.style(line, fg=colour))


def _diff_lines(change: dict) -> list[tuple[str, str]]:
    lines = []
    for section, (sign, colour) in _SIGNS.items():
        for key, value in change[section].items():
            shown = (
                f"{_json(value['old'])} -> {_json(value['new'])}"
                if section == "changed"
                else _json(value)
            )
            lines.append((f"  {sign} {key}: {shown}", colour))
    return lines


@click.command()
@_env
@click.option("--to", "to", help="Restore the files (or the environment) as at this version.")
@click.option(
    "--path",
    "-p",
    "paths",
    multiple=True,
    help="With --to: a repository-relative file or folder to restore (repeatable).",
)
@click.option("--commit", help="Undo this one commit (git revert).")
@click.option("--message", "-m", help="Commit message.")
@pass_client
def revert(
    client: Client,
    env: int,
    to: str | None,
    paths: tuple[str, ...],
    commit: str | None,
    message: str | None,
) -> None:
    """Revert in one new commit: restore a version (--to) or undo a commit (--commit)."""
    if (to is None) == (commit is None):
        raise click.UsageError("give exactly one of --to or --commit")
    if paths and commit is not None:
        raise click.UsageError("--path goes with --to, not with --commit")
    body: dict[str, Any] = {"to": to} if to is not None else {"commit": commit}
    if paths:
        body["paths"] = list(paths)
    if message:
        body["message"] = message
    result = client.revert(env, body)
    if result["changed"]:
        click.echo(f"reverted: version {result['version']}, commit {result['commit'][:12]}")
    else:
        click.echo(f"nothing to revert: version {result['version']} already matches")


@click.command()
@_env
@_level
@click.option("--resource", "-r", required=True, help="Resource name or id.")
@_key
@click.option("--version", help="Explain at a version: N or a git revision.")
@_format
@pass_client
def explain(
    client: Client,
    env: int,
    levels: list,
    resource: str,
    key: str | None,
    version: str | None,
    fmt: str,
) -> None:
    """For each key of the effective values: the layers that set it and who last changed it."""
    data = client.explain(env, levels, resource, key, version)
    if fmt != "table":
        output.emit(data, fmt)
        return
    rows = []
    for item in data["keys"]:
        for index, layer in enumerate(item["layers"]):
            won = index == item["winner"]
            last = f"{item['author']} {(item['commit'] or '')[:12]} {item['date']}" if won else ""
            rows.append(
                [
                    item["path"],
                    "*" if won else "",
                    layer["scope"],
                    layer["kind"],
                    f"{layer['file']}:{layer['line'] or '?'}",
                    _json(layer["value"]),
                    last,
                ]
            )
    click.echo(
        output.table(rows, ["key", "won", "scope", "kind", "file:line", "value", "last changed"])
    )
