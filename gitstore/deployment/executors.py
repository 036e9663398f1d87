"""Executors: what runs the plan of a transaction (docs/graphs.md, "Execute").

An executor is found by name in the entry-point group `gitstore.executors`: a class (or any
callable) that builds an object with `name` and `run(graph, context) -> history`. The built-in
ones are declared there too (pyproject.toml) and stay usable from a source checkout:

- `dry-run` records every task as skipped and runs nothing;
- `local` runs `shell` and `master_shell` commands on this host (`/bin/sh -c`, as the user the
  server runs as), one at a time, in an order that respects every dependency and each node's
  own order. Stages and groups are sync points; other task types are recorded as skipped.

`Executor.run` walks `merge.execution.execution_order` and stops at the first failure of a task
whose `fail_on_error` is not false: the tasks after it are recorded as skipped, naming it.
A history entry is `{task_name, node_id, status: ready|error|skipped, time_start, time_end,
message?, exit_code?, output?}`.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import InvalidInput
from gitstore.merge.execution import SKIPPED, SYNC, execution_order

log = logging.getLogger("gitstore.executors")

ENTRY_POINTS = "gitstore.executors"
READY, ERROR = "ready", "error"
SHELL_TYPES = ("shell", "master_shell")
SYNC_TYPES = ("stage", "group")
DEFAULT_TIMEOUT = 300
#: How much of a command's output a history entry keeps (the end of it: errors come last).
OUTPUT_LIMIT = 4000


@dataclass(frozen=True)
class RunContext:
    """What an executor knows about the run besides the graph's plan."""

    transaction: int
    cluster: int
    graph_type: str
    noop: bool = False
    #: Each task run is a step of it: a dry run answered in its request stops at its deadline.
    deadline: Deadline = UNBOUNDED


class Runner(Protocol):
    name: str

    def run(self, graph: Mapping[str, Any], context: RunContext) -> list[dict]: ...


def now() -> str:
    """The time in UTC to the millisecond, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Clock:
    """`now` for the entries of one run: within one millisecond the same string is given
    again (a dry run stamps two times per task and node, nearly all in a millisecond already
    stamped: formatting each cost time and a string each)."""

    def __init__(self) -> None:
        self._last: tuple[int, str] = (-1, "")

    def now(self) -> str:
        millisecond = time.time_ns() // 1_000_000
        if self._last[0] != millisecond:
            moment = datetime.fromtimestamp(millisecond / 1000, UTC)
            stamp = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            self._last = (millisecond, stamp)
        return self._last[1]


def entry(task: str, node: str, status: str, started: str, ended: str, **details: Any) -> dict:
    return {
        "task_name": task,
        "node_id": None if node == SYNC else node,
        "status": status,
        "time_start": started,
        "time_end": ended,
        **{k: v for k, v in details.items() if v is not None},
    }


class Executor:
    """Runs tasks one at a time in dependency order; a failure aborts the rest."""

    name = "executor"

    def run(self, graph: Mapping[str, Any], context: RunContext) -> list[dict]:
        history: list[dict] = []
        failed: str | None = None
        directory = graph.get("tasks_directory") or {}
        clock = Clock()
        for node, step in execution_order(graph.get("tasks_graph") or {}):
            context.deadline.check()
            started = clock.now()
            if failed is not None or step.get("type") == SKIPPED:
                why = f"not run: {failed} failed" if failed else "not selected for this run"
                history.append(entry(step["id"], node, SKIPPED, started, started, message=why))
                continue
            result = self.run_task(node, step, directory.get(step["id"]) or {}, context)
            history.append(entry(step["id"], node, started=started, ended=clock.now(), **result))
            if result["status"] == ERROR and step.get("fail_on_error", True) is not False:
                failed = f"task {step['id']} on {_where(node)}"
        return history

    def run_task(
        self, node: str, step: Mapping[str, Any], task: Mapping[str, Any], context: RunContext
    ) -> dict:
        """`{status, message?, exit_code?, output?}` of one task on one node."""
        raise NotImplementedError


class DryRun(Executor):
    """Records the plan; runs nothing."""

    name = "dry-run"

    def run_task(self, node, step, task, context) -> dict:
        return {"status": SKIPPED, "message": "dry run: nothing was run"}


class Local(Executor):
    """Runs shell and master_shell commands on this host."""

    name = "local"

    def run_task(self, node, step, task, context) -> dict:
        kind = task.get("type", step.get("type"))
        if kind in SYNC_TYPES:
            return {"status": READY, "message": f"{kind}: a sync point"}
        if kind not in SHELL_TYPES:
            return {
                "status": SKIPPED,
                "message": f"the local executor does not run {kind} "
                "tasks (only shell and master_shell)",
            }
        parameters = task.get("parameters") or {}
        command = parameters.get("cmd")
        if not isinstance(command, str) or not command.strip():
            return {"status": ERROR, "message": "the task has no parameters.cmd to run"}
        if context.noop:
            return {"status": SKIPPED, "message": "noop run: the command was not run"}
        return _shell(command, parameters, _variables(node, step["id"], context))


def _shell(command: str, parameters: Mapping[str, Any], variables: dict[str, str]) -> dict:
    timeout = parameters.get("timeout")
    timeout = timeout if isinstance(timeout, int) and timeout > 0 else DEFAULT_TIMEOUT
    cwd = parameters.get("cwd") if isinstance(parameters.get("cwd"), str) else "/"
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env={**os.environ, **variables},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"status": ERROR, "message": f"timed out after {timeout} s"}
    except OSError as exc:
        return {"status": ERROR, "message": f"could not run the command: {exc}"}
    output = (done.stdout + done.stderr)[-OUTPUT_LIMIT:]
    if done.returncode != 0:
        return {
            "status": ERROR,
            "exit_code": done.returncode,
            "output": output,
            "message": f"the command exited with code {done.returncode}",
        }
    return {"status": READY, "exit_code": 0, "output": output}


def _variables(node: str, task: str, context: RunContext) -> dict[str, str]:
    """What a command learns of its run (Astute substituted placeholders; we export these)."""
    return {
        "GITSTORE_TRANSACTION": str(context.transaction),
        "GITSTORE_CLUSTER": str(context.cluster),
        "GITSTORE_GRAPH_TYPE": context.graph_type,
        "GITSTORE_TASK": task,
        "GITSTORE_NODE": "" if node == SYNC else node,
    }


def _where(node: str) -> str:
    return (
        "the sync point" if node == SYNC else "the master" if node == "master" else f"node {node}"
    )


# -- finding executors by name --------------------------------------------------------------------
BUILT_IN: dict[str, Callable[[], Runner]] = {DryRun.name: DryRun, Local.name: Local}


def available() -> dict[str, Callable[[], Runner]]:
    """Executor factories by name: the entry points, over the built-in ones."""
    found: dict[str, Callable[[], Runner]] = dict(BUILT_IN)
    for point in importlib.metadata.entry_points(group=ENTRY_POINTS):
        try:
            found[point.name] = point.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not hide the others
            log.warning("executor %s (%s) cannot be loaded: %s", point.name, point.value, exc)
    return found


def executor(name: str) -> Runner:
    """The executor called `name`; InvalidInput naming the known ones otherwise."""
    factories = available()
    if name not in factories:
        raise InvalidInput(
            f"unknown executor {name!r}; available: {', '.join(sorted(factories))}", key="executor"
        )
    return factories[name]()
