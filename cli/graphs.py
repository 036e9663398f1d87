"""`gitstore graph ...`: deployment graphs from the command line, after `fuel2 graph`.

A graph belongs to one owner: `--env ID` (a cluster), `--release ID` or `--plugin ID`; `--type`
names its type (default `default`). `upload` takes a YAML file (a task list, or a graph
document with metadata and `tasks`) or a folder (`metadata.yaml` plus every `tasks.yaml` below
it); `download` writes a cluster's tasks at one level; `show --dot` prints the merged graph in
Graphviz DOT; `execute` runs graphs and reports the transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cli import output, transactions, values
from cli.client import Client
from cli.connection import pass_client
from gitstore import yamlio
from gitstore.errors import NotFound

GRAPH_COLUMNS = ("type", "name", "tasks", "relations")
LEVELS = {"all": "merged", "cluster": "own", "plugins": "plugins", "release": "release"}


def register(group: click.Group) -> None:
    group.add_command(graph)


def _document_format(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--format",
        "-f",
        "fmt",
        type=click.Choice(("yaml", "json")),
        default="yaml",
        show_default=True,
    )(command)


def _owner(command: Callable[..., Any]) -> Callable[..., Any]:
    for flags, kind in (
        (("--plugin",), "plugin"),
        (("--release",), "release"),
        (("--env", "-e"), "cluster"),
    ):
        command = click.option(
            *flags, kind, type=click.IntRange(min=1), help=f"Graphs of this {kind} (id)."
        )(command)
    return command


def _one_owner(cluster: int | None, release: int | None, plugin: int | None) -> tuple[str, int]:
    given = [
        (k, v)
        for k, v in (("cluster", cluster), ("release", release), ("plugin", plugin))
        if v is not None
    ]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --env, --release or --plugin")
    return given[0]


def _type(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--type", "-t", "graph_type", default="default", show_default=True, help="The graph type."
    )(command)


def _env(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--env",
        "-e",
        "env_id",
        type=values.ENV_ID,
        required=True,
        help="Environment (cluster) id.",
    )(command)


@click.group()
def graph() -> None:
    """Deployment graphs of releases, plugins and clusters."""


@graph.command("list")
@_owner
@output.entity_format
@pass_client
def graph_list(
    client: Client, cluster: int | None, release: int | None, plugin: int | None, fmt: str
) -> None:
    """List an owner's graphs."""
    kind, owner_id = _one_owner(cluster, release, plugin)
    graphs = client.list_graphs(kind, owner_id)
    rows = (
        [
            {
                **g,
                "tasks": len(g["tasks"]),
                "relations": [f"{r['model']}:{r['model_id']}" for r in g["relations"]],
            }
            for g in graphs
        ]
        if fmt == "table"
        else graphs
    )
    output.emit_list(rows, GRAPH_COLUMNS, fmt, ordered=True)


@graph.command("upload")
@_owner
@_type
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False),
    help="A YAML task list, or a graph {name?, node_filter?, ..., tasks}.",
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(exists=True, file_okay=False),
    help="A folder: metadata.yaml and every tasks.yaml below it.",
)
@pass_client
def graph_upload(
    client: Client,
    cluster: int | None,
    release: int | None,
    plugin: int | None,
    graph_type: str,
    file: str | None,
    folder: str | None,
) -> None:
    """Create a graph, or replace the owner's graph of that type."""
    kind, owner_id = _one_owner(cluster, release, plugin)
    if bool(file) == bool(folder):
        raise click.UsageError("give exactly one of --file or --dir")
    if file:
        body = _read_file(Path(file))
    else:
        assert folder  # exactly one of them, checked above
        body = _read_folder(Path(folder))
    try:
        client.get_graph(kind, owner_id, graph_type)
    except NotFound:
        created = client.create_graph(kind, owner_id, graph_type, body)
        verb = "created"
    else:
        created = client.replace_graph(kind, owner_id, graph_type, body)
        verb = "replaced"
    click.echo(f"{kind} {owner_id}: graph {graph_type} {verb} ({len(created['tasks'])} tasks)")


def _load(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}") from exc
    return yamlio.load(values.decoded(data, str(path)), path=str(path), strict=True)


def _read_file(path: Path) -> dict:
    doc = _load(path)
    if isinstance(doc, list):
        return {"tasks": doc}
    if not isinstance(doc, dict):
        raise click.BadParameter(f"{path} holds neither a task list nor a graph mapping")
    return doc


def _read_folder(folder: Path) -> dict:
    """`metadata.yaml` (graph fields) and the tasks of every `tasks.yaml` below, path order."""
    metadata = folder / "metadata.yaml"
    body = _read_file(metadata) if metadata.is_file() else {}
    tasks = list(body.pop("tasks", None) or [])
    for path in sorted(folder.rglob("tasks.yaml")):
        doc = _load(path)
        if not isinstance(doc, list):
            raise click.BadParameter(f"{path} is not a list of tasks")
        tasks += doc
    return {**body, "tasks": tasks}


@graph.command("download")
@_env
@_type
@click.option("--all", "level", flag_value="all", default=True, help="The merged graph (default).")
@click.option("--cluster", "level", flag_value="cluster", help="Only the cluster's own tasks.")
@click.option("--plugins", "level", flag_value="plugins", help="Only the plugins' tasks.")
@click.option("--release", "level", flag_value="release", help="Only the release's tasks.")
@click.option(
    "--file", "file", type=click.Path(dir_okay=False), help="Write here (default: standard output)."
)
@_document_format
@pass_client
def graph_download(
    client: Client, env_id: int, graph_type: str, level: str, file: str | None, fmt: str
) -> None:
    """Download a cluster's tasks of one type at one level."""
    tasks = client.cluster_tasks(env_id, graph_type, LEVELS[level])
    text = output.render(tasks, fmt) + "\n"
    if file is None:
        click.echo(text, nl=False)
        return
    Path(file).write_text(text)
    click.echo(
        f"{len(tasks)} tasks of environment {env_id} graph {graph_type} ({level}) written to {file}"
    )


@graph.command("delete")
@_owner
@click.option("--type", "-t", "graph_type", required=True, help="The graph type.")
@pass_client
def graph_delete(
    client: Client, cluster: int | None, release: int | None, plugin: int | None, graph_type: str
) -> None:
    """Delete an owner's graph of a type."""
    kind, owner_id = _one_owner(cluster, release, plugin)
    client.delete_graph(kind, owner_id, graph_type)
    click.echo(f"{kind} {owner_id}: graph {graph_type} deleted")


@graph.command("show")
@_env
@_type
@click.option("--dot", is_flag=True, help="Print Graphviz DOT instead of the tasks.")
@click.option(
    "--tasks", callback=values.list_callback, metavar="TASK,...", help="DOT: keep only these tasks."
)
@click.option("--parents-for", metavar="TASK", help="DOT: keep TASK and its ancestors.")
@click.option(
    "--remove",
    callback=values.list_callback,
    metavar="TYPE,...",
    help="DOT: drop tasks of these types.",
)
@_document_format
@pass_client
def graph_show(
    client: Client,
    env_id: int,
    graph_type: str,
    dot: bool,
    tasks: list | None,
    parents_for: str | None,
    remove: list | None,
    fmt: str,
) -> None:
    """Show a cluster's merged graph: its tasks, or DOT with --dot."""
    if not dot:
        if tasks or parents_for or remove:
            raise click.UsageError("--tasks, --parents-for and --remove go with --dot")
        output.emit(client.cluster_tasks(env_id, graph_type), fmt)
        return
    text = client.graph_dot(
        env_id,
        graph_type,
        only=[str(t) for t in tasks or []],
        parents_for=parents_for,
        remove=[str(r) for r in remove or []],
    )
    click.echo(text, nl=False)


@graph.command("execute")
@_env
@click.option(
    "--type",
    "-t",
    "graph_types",
    multiple=True,
    default=["default"],
    show_default=True,
    help="A graph type to run (repeatable; run in order).",
)
@click.option(
    "--nodes",
    callback=values.list_callback,
    metavar="ID,...",
    help="Run on these nodes (default: the graph's node_filter, else the deployed).",
)
@click.option(
    "--tasks",
    callback=values.list_callback,
    metavar="TASK,...",
    help="Run only these tasks (the others are skipped).",
)
@click.option("--dry-run", is_flag=True, help="Record the plan; run nothing.")
@click.option("--noop", is_flag=True, help="Ask the executor for a no-op run.")
@click.option("--force", is_flag=True, help="Run tasks even if nothing changed.")
@click.option(
    "--executor",
    default="dry-run",
    show_default=True,
    help="The executor (entry points 'gitstore.executors': dry-run, local, ...).",
)
@output.entity_format
@pass_client
def graph_execute(
    client: Client,
    env_id: int,
    graph_types: tuple[str, ...],
    nodes: list | None,
    tasks: list | None,
    dry_run: bool,
    noop: bool,
    force: bool,
    executor: str,
    fmt: str,
) -> None:
    """Execute graphs of a cluster; exits 1 when the transaction fails.

    With --root the run ends before the command does; with --url the server answers at once
    and the summary shows the transaction as it started (see GET /api/v1/transactions/ID).
    """
    selection: dict[str, Any] = {}
    if nodes is not None:
        selection["nodes"] = nodes
    if tasks is not None:
        selection["tasks"] = [str(t) for t in tasks]
    body = {
        "cluster": env_id,
        "graphs": [{"type": t, **selection} for t in graph_types],
        "dry_run": dry_run,
        "noop_run": noop,
        "force": force,
        "executor": executor,
    }
    transaction = client.execute_graphs(body)
    if fmt != "table":
        output.emit(transaction, fmt)
    else:
        transactions.summary(transaction)
    if transaction.get("status") == "error":
        click.get_current_context().exit(1)
