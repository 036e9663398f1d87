"""`/ui/environments/<id>/graph`: a cluster's merged deployment graph, drawn, and its nodes.

The graph is the REST DOT (`GET /clusters/<id>/deploy_tasks/graph.gv`) with a link on each
task to its row in the task table (type, source: release, plugin or cluster, dependencies),
drawn as SVG by Graphviz `dot`. `dot` is bounded: graphs of more than `MAX_TASKS` tasks or
`MAX_DOT_BYTES` of DOT are not drawn, and a run longer than `DOT_SECONDS` is stopped; the page
then says so and still lists the tasks. `dot` lays the graph out with straight edges and few
rank and crossing passes (`LAYOUT`): with Graphviz's defaults Fuel's default graph took many
times as long (docs/performance.md). Drawings are kept in the Store's
`drawings` cache by the SHA-256 of their DOT (which names every task, edge and link), so a
graph is drawn once per worker and commit that changes it. The style sheet shrinks a drawing
wider than its box to fit it (Fuel's is 13,000 pixels wide), and the page's script adds zoom
buttons. The nodes table shows each
node's roles, tags and primary tags.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess

from flask import render_template, request

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.http import app_store

DOT = "dot"
MAX_TASKS = 2000
MAX_DOT_BYTES = 1 << 20
DOT_SECONDS = 10.0
#: Graphviz's layout options: straight edges, one network-simplex pass for ranking and
#: positions, and a fifth of the default crossing-minimisation work.
LAYOUT = ("-Gsplines=line", "-Gnslimit=1", "-Gnslimit1=1", "-Gmclimit=0.2")
#: What precedes the `<svg` element in Graphviz's output (XML prolog, doctype, comments).
_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.S)


class DrawingFailed(Exception):
    """`dot` is missing, refused the input, or ran out of time (the page shows why)."""


@bp.get("/environments/<int:env_id>/graph")
def graph(env_id: int):
    store, version = app_store(), pinned()
    graph_type = pinned("graph_type") or "default"
    tasks = store.graphs.tasks(env_id, graph_type, version=version).data
    sources = store.graphs.sources(env_id, graph_type, version=version).data
    anchors = {task["id"]: f"task-{index}" for index, task in enumerate(tasks, 1)}
    svg, problem = None, None
    try:
        dot = store.graphs.dot(env_id, graph_type, version=version).data
        svg = draw(_linked(dot, anchors, sources))
    except DrawingFailed as exc:
        problem = str(exc)
    return render_template(
        "console/graph.html",
        env_id=env_id,
        graph_type=graph_type,
        types=_graph_types(env_id, version),
        tasks=tasks,
        anchors=anchors,
        targets={task["id"]: _targets(task) for task in tasks},
        sources=sources,
        svg=svg,
        problem=problem,
        nodes=store.nodes.list(env_id, version).data,
        tags=store.tags.list("cluster", env_id, version).data,
        version=version,
        path=request.path,
    )


def _graph_types(env_id: int, version: str | None) -> list[str]:
    found = app_store().graphs.list("cluster", env_id, version).data
    return sorted({"default", *(entity["type"] for entity in found)})


def _targets(task: dict) -> list[str]:
    """Where a task runs: its tags, else roles, else groups (`*` or a list)."""
    for field in ("tags", "roles", "groups"):
        value = task.get(field)
        if value:
            return [value] if isinstance(value, str) else [str(item) for item in value]
    return []


def _linked(dot: str, anchors: dict[str, str], sources: dict[str, dict]) -> str:
    """The DOT with each task linked to its row and titled with its source (a later node
    statement adds attributes to the node the first one declared)."""
    if len(anchors) > MAX_TASKS:
        raise DrawingFailed(f"{len(anchors)} tasks are more than {MAX_TASKS} to draw")
    lines = []
    for task_id, anchor in anchors.items():
        source = sources.get(task_id, {})
        title = f"{task_id} ({source.get('kind', '?')} {source.get('name', '')})".strip()
        lines.append(
            f'  {_quote(task_id)} [URL="#{anchor}", target="_top", tooltip={_quote(title)}];'
        )
    body = dot.rstrip().removesuffix("}")
    return body + "\n".join(lines) + "\n}\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def draw(dot: str) -> str:
    """The `<svg>` element Graphviz draws for `dot` (the last drawings are kept, see above)."""
    data = dot.encode("utf-8")
    if len(data) > MAX_DOT_BYTES:
        raise DrawingFailed(f"the graph is {len(data)} bytes of DOT, more than {MAX_DOT_BYTES}")
    return _draw(data)


def _draw(data: bytes) -> str:
    key = hashlib.sha256(data).hexdigest()
    return app_store().drawings.get_or_compute(key, lambda: _run_dot(data), len)


def _run_dot(data: bytes) -> str:
    program = shutil.which(DOT)
    if program is None:
        raise DrawingFailed("Graphviz (dot) is not installed on the server")
    try:
        done = subprocess.run(
            [program, "-Tsvg", *LAYOUT],
            input=data,
            capture_output=True,
            timeout=DOT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise DrawingFailed(f"Graphviz (dot) took longer than {DOT_SECONDS:g} s") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()[:300]
        raise DrawingFailed(f"Graphviz (dot) failed: {message}")
    return _PROLOG.sub("", done.stdout.decode("utf-8"), count=1)
