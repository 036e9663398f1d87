"""`gitstore tx list|show|node|wait`: follow graph executions (transactions, docs/graphs.md).

`graph execute --url ...` answers as soon as the server has started the run; these commands
look at it afterwards: `wait` polls until it ends and exits 1 if it failed.
"""

from __future__ import annotations

import time
from typing import Any

import click

from cli import output, values
from cli.client import Client
from cli.connection import pass_client

FINISHED = ("ready", "error")
TX_COLUMNS = ("id", "cluster", "status", "graphs", "executor", "dry_run", "created_at")


def register(group: click.Group) -> None:
    group.add_command(tx)


@click.group()
def tx() -> None:
    """Graph executions (transactions): list them, show one, wait for one to end."""


@tx.command("list")
@click.option("--env", "-e", "env_id", type=values.ENV_ID, help="Only this environment.")
@output.entity_format
@pass_client
def tx_list(client: Client, env_id: int | None, fmt: str) -> None:
    """List transactions, oldest first."""
    found = client.list_transactions(env_id)
    rows = [_row(t) for t in found] if fmt == "table" else found
    output.emit_list(rows, TX_COLUMNS, fmt)


@tx.command("show")
@click.argument("transaction_id", type=click.IntRange(min=1))
@output.entity_format
@pass_client
def tx_show(client: Client, transaction_id: int, fmt: str) -> None:
    """Show transaction ID: a summary of each graph, or the whole record with -f json|yaml."""
    transaction = client.get_transaction(transaction_id)
    if fmt == "table":
        summary(transaction)
    else:
        output.emit(transaction, fmt)


@tx.command("node")
@click.argument("transaction_id", type=click.IntRange(min=1))
@click.argument("node")
@output.entity_format
@pass_client
def tx_node(client: Client, transaction_id: int, node: str, fmt: str) -> None:
    """Show NODE's tasks in transaction ID and their states (NODE: a node id, `master`, or
    `null` for the sync points); only that node's record is read."""
    found = client.get_transaction_node(transaction_id, node)
    if fmt != "table":
        output.emit(found, fmt)
        return
    click.echo(f"transaction {found['id']} on {_node_name(found['node'])}: {found['status']}")
    for graph in found["graphs"]:
        click.echo(f"  graph {graph['type']}: {graph['status']}")
        for entry in graph["history"]:
            message = f": {entry['message']}" if entry.get("message") else ""
            click.echo(f"    {entry['task_name']} {entry['status']}{message}")


@tx.command("wait")
@click.argument("transaction_id", type=click.IntRange(min=1))
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=3600,
    show_default=True,
    help="Give up after this many seconds (exit 1).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=1.0,
    show_default=True,
    help="Seconds between two looks.",
)
@output.entity_format
@pass_client
def tx_wait(client: Client, transaction_id: int, timeout: float, interval: float, fmt: str) -> None:
    """Wait until transaction ID is ready or failed; exit 1 if it failed or time ran out."""
    deadline = time.monotonic() + timeout
    transaction = client.get_transaction(transaction_id)
    while transaction.get("status") not in FINISHED and time.monotonic() < deadline:
        time.sleep(min(interval, max(deadline - time.monotonic(), 0)))
        transaction = client.get_transaction(transaction_id)
    if fmt == "table":
        summary(transaction)
    else:
        output.emit(transaction, fmt)
    if transaction.get("status") not in FINISHED:
        click.echo(
            f"transaction {transaction_id} is still {transaction.get('status')} after {timeout:g}s",
            err=True,
        )
        click.get_current_context().exit(1)
    if transaction.get("status") == "error":
        click.get_current_context().exit(1)


def _row(transaction: dict) -> dict:
    graphs = [f"{g.get('type')}:{g.get('status')}" for g in transaction.get("graphs") or []]
    return {**transaction, "graphs": graphs}


def summary(transaction: dict) -> None:
    """What a transaction did, or for a dry run what it would run, in a few lines."""
    nothing_ran = transaction.get("dry_run") or transaction.get("executor") == "dry-run"
    why = "a dry run" if transaction.get("dry_run") else "the dry-run executor"
    state = f"{transaction['status']}, {why}: nothing was run" if nothing_ran else None
    click.echo(
        f"transaction {transaction['id']} of environment {transaction['cluster']}: "
        f"{state or transaction['status']}"
    )
    for item in transaction.get("graphs") or []:
        if "tasks_graph" not in item:  # a large record: its nodes are read one at a time
            click.echo(
                f"  graph {item['type']}: {item['status']} on {len(item.get('nodes') or [])} "
                f"nodes (each node: gitstore tx node {transaction['id']} NODE)"
            )
            continue
        click.echo(_planned(item) if nothing_ran else _ran(item))
        for failed in (h for h in item.get("history") or [] if h["status"] == "error"):
            where = failed["node_id"] if failed["node_id"] is not None else "sync"
            click.echo(f"    {failed['task_name']} on {where}: {failed.get('message', '')}")


def _ran(item: dict) -> str:
    history = item.get("history") or []
    ran = [h for h in history if h["status"] != "skipped"]
    return (
        f"  graph {item['type']}: {item['status']}, ran {len(ran)} of {len(history)} task runs "
        f"({len(history) - len(ran)} skipped)"
    )


def _planned(item: dict) -> str:
    """The plan of a graph that ran nothing: which tasks on which nodes it would run."""
    per_node = item.get("tasks_graph") or {}
    would: dict[Any, int] = {}
    unselected = 0
    for node, tasks in per_node.items():
        for task in tasks:
            if task.get("type") == "skipped":
                unselected += 1
            elif node not in (None, "null"):
                would[node] = would.get(node, 0) + 1
    where = ", ".join(f"{count} on {_node_name(node)}" for node, count in would.items())
    line = f"  graph {item['type']}: would run {sum(would.values())} tasks"
    line += f" ({where})" if where else ""
    return line + (
        f"; {unselected} skipped (not selected, or of type skipped)" if unselected else ""
    )


def _node_name(node: Any) -> str:
    if node in (None, "null"):
        return "the sync points"
    return node if node == "master" else f"node {node}"
