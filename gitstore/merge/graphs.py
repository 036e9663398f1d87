"""Deployment graphs, pure: task normalisation, validation, merging, legacy filters and DOT.

A graph document is `{name?, node_filter?, on_success?, on_error?, on_stop?, tasks: [...]}` (a
plain list is a task list). Tasks follow Nailgun's schema; `canonical_task` applies the input
aliases (`role` -> `roles`, `cross-depends` -> `cross_depends`, `task_name` -> `id`, a string
selector -> a list) and `output_task` adds the output aliases Nailgun clients read.

Dependencies point from a task to the tasks it needs. Edges (dependency -> dependent) come from
`requires`, `required_for`, `cross_depends`, `cross_depended_by`, a group's `tasks` and, for
legacy tasks (version below 2.0.0), `groups`: a task-based task's `groups` is a node selector
(as in Nailgun's task-based deployment), not a reference to a group task. A `/regex/` name
names every task it matches (`re.match`) and may match none.

Nothing here reads storage; inputs are never mutated (they may come from a shared parse cache).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from gitstore.errors import InvalidInput, ValidationFailed

TASK_TYPES = (
    "puppet",
    "shell",
    "sync",
    "upload_file",
    "group",
    "stage",
    "skipped",
    "reboot",
    "copy_files",
    "role",
    "master_shell",
    "move_to_bootstrap",
    "erase_node",
)
GRAPH_TYPE = re.compile(r"^[a-zA-Z0-9_-]+$")
DEFAULT_TYPE = "default"
DEFAULT_VERSION = "1.0.0"
#: Tasks at this version or above are task-based (cross-node dependencies, no legacy groups).
TASK_BASED = (2, 0, 0)
METADATA = ("name", "node_filter", "on_success", "on_error", "on_stop")
SELECTORS = ("roles", "groups", "tags")
#: Dependency fields that link tasks across nodes; the others link tasks of one node.
CROSS_FIELDS = ("cross_depends", "cross_depended_by")
LOCAL_FIELDS = ("requires", "required_for", "tasks", "groups")
#: Selector words that stay strings (Nailgun's NODE_RESOLVE_POLICY and `self`).
SELECTOR_WORDS = frozenset({"*", "master", "self"})
_INPUT_ALIASES = {
    "task_name": "id",
    "role": "roles",
    "cross-depends": "cross_depends",
    "cross-depended-by": "cross_depended_by",
}
_OUTPUT_ALIASES = {
    "roles": "role",
    "cross_depends": "cross-depends",
    "cross_depended_by": "cross-depended-by",
}
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")

_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}
_SELECTOR = {"anyOf": [{"type": "string"}, _NAMES]}
_YAQL = {"type": "object", "required": ["yaql_exp"], "properties": {"yaql_exp": {"type": "string"}}}
_CROSS = {
    "anyOf": [
        {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "role": _SELECTOR,
                    "tags": _SELECTOR,
                    "policy": {"enum": ["all", "any"]},
                },
            },
        },
        _YAQL,
    ]
}
TASK_SCHEMA = {
    "type": "object",
    "required": ["id", "type"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "type": {"enum": list(TASK_TYPES)},
        "version": {"type": "string", "pattern": _VERSION.pattern},
        "requires": _NAMES,
        "required_for": _NAMES,
        "tasks": _NAMES,
        "cross_depends": _CROSS,
        "cross_depended_by": _CROSS,
        "roles": _SELECTOR,
        "groups": _SELECTOR,
        "tags": _SELECTOR,
        "condition": {"anyOf": [{"type": "string"}, _YAQL]},
        "parameters": {"type": "object"},
        "strategy": {
            "type": "object",
            "properties": {
                "type": {"enum": ["parallel", "one_by_one"]},
                "amount": {"anyOf": [{"type": "integer", "minimum": 1}, _YAQL]},
            },
        },
    },
}
_TASK_VALIDATOR = jsonschema.Draft7Validator(TASK_SCHEMA)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a graph: the task it concerns (when one does) and why."""

    message: str
    task: str | None = None


# -- tasks ------------------------------------------------------------------------------------
def canonical_task(task: Any) -> Any:
    """`task` with the input aliases applied (a non-mapping is returned as it is).

    The canonical spelling wins when both are given; a string selector other than `*`,
    `master` and `self` becomes a one-item list.
    """
    if not isinstance(task, Mapping):
        return task
    result: dict[str, Any] = {}
    for key, value in task.items():
        name = _INPUT_ALIASES.get(key) or key
        if name != key and name in task:
            continue  # the canonical key is given too and wins
        result[name] = value
    for key in SELECTORS:
        value = result.get(key)
        if isinstance(value, str) and value not in SELECTOR_WORDS:
            result[key] = [value]
    return result


def with_defaults(task: Mapping[str, Any]) -> dict[str, Any]:
    """A canonical task as it is served: `version` defaults to 1.0.0."""
    return {**task, "version": task.get("version") or DEFAULT_VERSION}


def output_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task with Nailgun's output aliases: `task_name`, `role`, the dashed cross-depends."""
    result = {"id": task["id"], "task_name": task["id"]}
    for key, value in task.items():
        if key in ("id", "task_name") or key in _INPUT_ALIASES:
            continue
        result[key] = value
        if key in _OUTPUT_ALIASES:
            result[_OUTPUT_ALIASES[key]] = value
    return result


def version_of(task: Mapping[str, Any]) -> tuple[int, int, int]:
    match = _VERSION.match(str(task.get("version") or DEFAULT_VERSION))
    return tuple(int(part) for part in match.groups()) if match else (0, 0, 0)  # type: ignore


def is_task_based(task: Mapping[str, Any]) -> bool:
    return version_of(task) >= TASK_BASED


# -- documents --------------------------------------------------------------------------------
def document_of(doc: Any) -> dict[str, Any] | None:
    """A stored graph file as a mapping with `tasks` (None when it has neither shape)."""
    if doc is None:
        return {"tasks": []}
    if isinstance(doc, list):
        return {"tasks": doc}
    if isinstance(doc, Mapping):
        return {**doc, "tasks": doc.get("tasks") if doc.get("tasks") is not None else []}
    return None


def canonical_document(doc: Any) -> dict[str, Any] | None:
    """`document_of` with every task canonical."""
    found = document_of(doc)
    if found is None or not isinstance(found["tasks"], list):
        return found
    return {**found, "tasks": [canonical_task(t) for t in found["tasks"]]}


def document_problems(doc: Any) -> list[Problem]:
    """What is wrong with one canonical graph document on its own: shape, fields, schema of
    each task, duplicate ids."""
    if not isinstance(doc, Mapping):
        return [
            Problem(
                "a graph is a mapping {name?, node_filter?, on_success?, on_error?, "
                "on_stop?, tasks: [...]} or a list of tasks"
            )
        ]
    problems = [
        Problem(f"unknown graph field {key!r}; known fields: {', '.join((*METADATA, 'tasks'))}")
        for key in doc
        if key not in (*METADATA, "tasks")
    ]
    for key in ("name", "node_filter"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            problems.append(Problem(f"graph field {key!r} must be a string"))
    for key in ("on_success", "on_error", "on_stop"):
        if doc.get(key) is not None and not isinstance(doc[key], Mapping):
            problems.append(Problem(f"graph field {key!r} must be a mapping"))
    tasks = doc.get("tasks")
    if not isinstance(tasks, list):
        return [*problems, Problem("graph field 'tasks' must be a list of tasks")]
    for index, task in enumerate(tasks):
        problems += _task_problems(index, task)
    duplicates = duplicate_ids(tasks)
    if duplicates:
        problems.append(Problem(f"Tasks duplication found: {', '.join(duplicates)}", duplicates[0]))
    return problems


def _task_problems(index: int, task: Any) -> list[Problem]:
    name = task.get("id") if isinstance(task, Mapping) else None
    label = f"task {name!r}" if isinstance(name, str) and name else f"task #{index + 1}"
    found = []
    for error in sorted(_TASK_VALIDATOR.iter_errors(task), key=lambda e: list(map(str, e.path))):
        where = ".".join(str(p) for p in error.path)
        field = f" field {where!r}:" if where else ""
        found.append(
            Problem(
                f"{label}:{field} {_schema_message(error)}", name if isinstance(name, str) else None
            )
        )
    return found[:3]  # the first few say enough; a broken list must not flood the answer


def _schema_message(error: jsonschema.ValidationError) -> str:
    if error.validator == "anyOf":
        return f"{error.instance!r} is not valid here (see the task schema in docs/graphs.md)"
    return error.message


def duplicate_ids(tasks: Iterable[Any]) -> list[str]:
    seen: set[str] = set()
    repeated: list[str] = []
    for task in tasks:
        task_id = task.get("id") if isinstance(task, Mapping) else None
        if isinstance(task_id, str):
            if task_id in seen and task_id not in repeated:
                repeated.append(task_id)
            seen.add(task_id)
    return sorted(repeated)


def check_document(doc: Any, what: str) -> dict[str, Any]:
    """The canonical document `doc`, or ValidationFailed listing its problems."""
    raise_problems(document_problems(doc), what)
    checked: dict[str, Any] = doc  # a mapping once it has no problems
    return checked


def raise_problems(problems: Sequence[Problem], what: str) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValidationFailed(
            f"{what}: {problems[0].message}{more}",
            key=problems[0].task,
            errors=[_problem_dict(p) for p in problems],
        )


def _problem_dict(problem: Problem) -> dict[str, Any]:
    return {"message": problem.message, **({"task": problem.task} if problem.task else {})}


# -- merging ----------------------------------------------------------------------------------
def plugin_overlaps(
    plugins: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
) -> list[tuple[Any, str, str]]:
    """(task, first plugin, second plugin) for each task id two enabled plugins define."""
    owner: dict[Any, str] = {}  # task id (as given, maybe missing) -> plugin
    found = []
    for plugin, tasks in plugins:
        for task in tasks:
            task_id = task.get("id")
            if task_id in owner and owner[task_id] != plugin:
                found.append((task_id, owner[task_id], plugin))
            else:
                owner.setdefault(task_id, plugin)
    return found


def overlap_error(overlaps: Sequence[tuple[str, str, str]], graph_type: str) -> InvalidInput:
    task, first, second = overlaps[0]
    return InvalidInput(
        f"plugins {first!r} and {second!r} both define task {task!r} in graph "
        f"type {graph_type!r}; enable only one of them",
        key="plugins",
    )


def merge_graphs(
    release: Mapping[str, Any] | None,
    plugins: Sequence[tuple[str, Mapping[str, Any]]],
    cluster: Mapping[str, Any] | None,
    graph_type: str = DEFAULT_TYPE,
) -> dict[str, Any]:
    """The merged graph: cluster tasks > plugins' (in enabled order) > release tasks, whole
    tasks replaced by id (a replaced task keeps its place); metadata merged recursively.

    Raises InvalidInput when two plugins define the same task id.
    """
    overlaps = plugin_overlaps([(name, doc.get("tasks") or []) for name, doc in plugins])
    if overlaps:
        raise overlap_error(overlaps, graph_type)
    docs = [d for d in (release, *(doc for _, doc in plugins), cluster) if d is not None]
    tasks: dict[str, Mapping[str, Any]] = {}
    for doc in docs:
        for task in doc.get("tasks") or []:
            tasks[task["id"]] = task
    merged = merge_metadata(docs)
    merged["tasks"] = list(tasks.values())
    return merged


def merge_metadata(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`name`, `node_filter`, `on_*` of the documents, later ones winning, mappings merged."""
    result: dict[str, Any] = {}
    for doc in docs:
        for key in METADATA:
            if doc.get(key) is not None:
                result[key] = _deep_merge(result.get(key), doc[key])
    return result


def _deep_merge(base: Any, top: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(top, Mapping):
        merged = dict(base)
        for key, value in top.items():
            merged[key] = _deep_merge(base.get(key), value)
        return merged
    return top


# -- dependencies -----------------------------------------------------------------------------
def is_pattern(name: str) -> bool:
    return len(name) > 1 and name.startswith("/") and name.endswith("/")


def resolve_name(name: str, ids: Sequence[str] | Mapping[str, Any]) -> list[str]:
    """The task ids `name` names: itself if it is one, every match of a `/regex/`, else none."""
    if name in ids:
        return [name]
    if not is_pattern(name):
        return []
    try:
        pattern = re.compile(name[1:-1])
    except re.error:
        return []
    return [task_id for task_id in ids if pattern.match(task_id)]


def _references(task: Mapping[str, Any]) -> Iterable[tuple[str, str, bool]]:
    """(field, name, before) for every dependency `task` names; `before`: the named task runs
    before this one."""
    for name in task.get("requires") or []:
        yield "requires", name, True
    for name in task.get("required_for") or []:
        yield "required_for", name, False
    for field, before in (("cross_depends", True), ("cross_depended_by", False)):
        items = task.get(field)
        if isinstance(items, list):  # a {yaql_exp} is resolved per node at deploy time
            for item in items:
                yield field, item["name"], before
    for name in task.get("tasks") or []:
        yield "tasks", name, True
    groups = task.get("groups")
    if isinstance(groups, list) and not is_task_based(task):
        for name in groups:
            yield "groups", name, False


def dependency_edges(
    tasks: Sequence[Mapping[str, Any]], fields: Container[str] | None = None
) -> list[tuple[str, str]]:
    """Every edge (dependency, dependent) between tasks of the graph, in a stable order
    (only those the `fields` name, when given).

    A task naming itself in a same-node field is an edge to itself (a cycle: it could never
    start). A `/regex/` matching its own task, or a cross-node link to the same task (on the
    nodes the selector picks, as a controller waits for the primary's run), is not.
    """
    ids = {task["id"]: None for task in tasks}
    edges: dict[tuple[str, str], None] = {}
    for task in tasks:
        for field, name, before in _references(task):
            if fields is not None and field not in fields:
                continue
            for other in resolve_name(name, ids):
                if other != task["id"] or _names_itself(task, field, name):
                    edges[(other, task["id"]) if before else (task["id"], other)] = None
    return list(edges)


def _names_itself(task: Mapping[str, Any], field: str, name: str) -> bool:
    return name == task["id"] and field in LOCAL_FIELDS and not is_pattern(name)


def missing_dependencies(tasks: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Plain (not `/regex/`) names of dependencies that no task of the graph has."""
    ids = {task["id"] for task in tasks}
    problems = []
    for task in tasks:
        for field, name, _ in _references(task):
            if not is_pattern(name) and name not in ids:
                problems.append(
                    Problem(
                        f"task {task['id']!r} depends on {name!r} "
                        f"({field}), which is not in the graph",
                        task["id"],
                    )
                )
            elif is_pattern(name) and _bad_pattern(name):
                problems.append(
                    Problem(
                        f"task {task['id']!r}: {field} {name!r} is not a valid regular expression",
                        task["id"],
                    )
                )
    return problems


def _bad_pattern(name: str) -> bool:
    try:
        re.compile(name[1:-1])
    except re.error:
        return True
    return False


def find_cycle(
    tasks: Sequence[Mapping[str, Any]], edges: Sequence[tuple[str, str]] | None = None
) -> list[str] | None:
    """One dependency cycle as `[a, b, ..., a]`, or None when the graph is acyclic."""
    after = _successors(tasks, dependency_edges(tasks) if edges is None else edges)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in after:
        if root in state:
            continue
        path, stack = [root], [iter(after[root])]
        state[root] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append(iter(after[child]))
    return None


def _successors(
    tasks: Sequence[Mapping[str, Any]], edges: Iterable[tuple[str, str]]
) -> dict[str, list[str]]:
    after: dict[str, list[str]] = {task["id"]: [] for task in tasks}
    for before, later in edges:
        if before in after and later in after:
            after[before].append(later)
    return after


def graph_problems(
    tasks: Sequence[Mapping[str, Any]],
    *,
    missing: bool = True,
    edges: Sequence[tuple[str, str]] | None = None,
) -> list[Problem]:
    """Problems of a whole graph: a dependency cycle and (unless `missing` is off) dependencies
    on tasks the graph does not have. `edges`: its `dependency_edges`, when the caller has them."""
    problems = missing_dependencies(tasks) if missing else []
    cycle = find_cycle(tasks, edges)
    if cycle:
        problems.append(Problem(f"dependency cycle: {' -> '.join(cycle)}", cycle[0]))
    return problems


def topological_order(tasks: Sequence[Mapping[str, Any]]) -> list[str]:
    """Task ids with every dependency first; ties keep the graph's order. Raises
    ValidationFailed on a cycle."""
    rank = {task["id"]: index for index, task in enumerate(tasks)}
    order = ranked_order(_successors(tasks, dependency_edges(tasks)), rank)
    if len(order) < len(rank):
        raise_problems(graph_problems(tasks, missing=False), "the graph cannot be ordered")
    return order


def ranked_order(after: Mapping[Any, Iterable[Any]], rank: Mapping[Any, Any]) -> list[Any]:
    """Kahn's order of the vertices of `rank` (each vertex before those `after` lists for
    it), taking the lowest rank among the ready ones. Vertices on a cycle are left out, so a
    shorter answer than `rank` means a cycle."""
    waiting = dict.fromkeys(rank, 0)
    for later in after.values():
        for vertex in later:
            waiting[vertex] += 1
    ready = [(rank[v], v) for v, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, vertex = heapq.heappop(ready)
        order.append(vertex)
        for later in after.get(vertex, ()):
            waiting[later] -= 1
            if waiting[later] == 0:
                heapq.heappush(ready, (rank[later], later))
    return order


def related(start: str, edges: Iterable[tuple[str, str]], *, upwards: bool) -> set[str]:
    """Every task reachable from `start` (its ancestors when `upwards`), without `start`."""
    links: dict[str, list[str]] = {}
    for before, later in edges:
        source, target = (later, before) if upwards else (before, later)
        links.setdefault(source, []).append(target)
    found: set[str] = set()
    stack = [start]
    while stack:
        for target in links.get(stack.pop(), []):
            if target not in found:
                found.add(target)
                stack.append(target)
    found.discard(start)
    return found


# -- legacy start/end/include -----------------------------------------------------------------
def legacy_subgraph(
    tasks: Sequence[Mapping[str, Any]],
    start: str | None = None,
    end: str | None = None,
    include: Sequence[str] = (),
) -> list[Mapping[str, Any]]:
    """Nailgun's legacy filter: the tasks from `start` (and what follows it) up to `end` (and
    what precedes it), plus `include`. Only without start and end is everything kept."""
    if not start and not end:
        return list(tasks)
    based = next((t for t in tasks if is_task_based(t)), None)
    if based is not None:
        raise InvalidInput(
            f"'start' and 'end' filter legacy graphs only; task {based['id']!r} "
            f"is task-based (version {based.get('version')})",
            key="start",
        )
    ids = [task["id"] for task in tasks]
    for name in (start, end, *include):
        if name and name not in ids:
            raise InvalidInput(f"Cannot find task {name} by its name.", key="tasks")
    edges = dependency_edges(tasks)
    keep = set(ids)
    if start:
        keep &= related(start, edges, upwards=False) | {start}
    if end:
        keep &= related(end, edges, upwards=True) | {end}
    keep |= set(include)
    return [task for task in tasks if task["id"] in keep]


# -- Graphviz -----------------------------------------------------------------------------------
_DEFAULT_STYLE = 'color="yellowgreen", style="filled"'
_STYLES: dict[Any, str] = {
    "group": 'color="lightskyblue", shape="box", style="filled, rounded"',
    "skipped": 'color="gray95"',
    "stage": 'color="red", shape="rect", style="filled"',
}


def to_dot(
    tasks: Sequence[Mapping[str, Any]],
    graph_type: str = DEFAULT_TYPE,
    *,
    only: Sequence[str] = (),
    parents_for: str | None = None,
    remove: Sequence[str] = (),
) -> str:
    """The graph in Graphviz DOT: edges point from a dependency to its dependent.

    `only` keeps those tasks and the edges among them; `parents_for` keeps a task and its
    ancestors; `remove` drops tasks of those types. Unknown names or types are InvalidInput.
    """
    ids = [task["id"] for task in tasks]
    unknown = [name for name in only if name not in ids]
    if parents_for and parents_for not in ids:
        unknown.append(parents_for)
    if unknown:
        raise InvalidInput(
            f"tasks {', '.join(unknown)} are not present in the {graph_type!r} graph", key="tasks"
        )
    bad_types = [name for name in remove if name not in TASK_TYPES]
    if bad_types:
        raise InvalidInput(
            f"task types {', '.join(bad_types)} do not exist; known types: {', '.join(TASK_TYPES)}",
            key="remove",
        )
    keep = set(only) if only else set(ids)
    edges = [(a, b) for a, b in dependency_edges(tasks) if a in keep and b in keep]
    if parents_for:
        keep &= related(parents_for, edges, upwards=True) | {parents_for}
    keep -= {task["id"] for task in tasks if task.get("type") in remove}
    lines = [f"digraph {_quote(graph_type)} {{", f"  node [{_DEFAULT_STYLE}];"]
    for task in tasks:
        if task["id"] in keep:
            style = _STYLES.get(task.get("type"), _DEFAULT_STYLE)
            lines.append(f"  {_quote(task['id'])} [{style}];")
    lines += [f"  {_quote(a)} -> {_quote(b)};" for a, b in edges if a in keep and b in keep]
    return "\n".join([*lines, "}"]) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
