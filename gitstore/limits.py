"""Size limits that keep any one input from exhausting the server (docs/security.md, "Limits"),
and the deadlines of requests (docs/operations.md, "Deadlines").

Defaults suit any real deployment; an operator raises one in `<root>/limits.yaml` (a mapping of
the names below to integers; a deadline, `*_seconds`, may be a fraction). The file lives in the
store root because three kinds of process must agree on it: the server's workers, the push gate
git runs for every push (which inherits no server flag), and the CLI on a local store.
Each of them calls `configure(root)` once.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitstore import yamlio
from gitstore.errors import InvalidInput

LIMITS_FILE = "limits.yaml"
_MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Every limit, in bytes or counts."""

    #: A REST request body (413 beyond it), read only once its length is known to fit.
    body_bytes: int = 16 * _MIB
    #: The body of one `git push` (413, or git's own refusal for a chunked body).
    push_bytes: int = 256 * _MIB
    #: One stored document, as YAML (400 naming the document).
    document_bytes: int = 4 * _MIB
    #: Keys and list items of one document, at any depth (400 naming the document). A
    #: 1,000-node Fuel cluster's facts list every node in ~52,600 keys and list items.
    document_keys: int = 150_000
    #: One file of a pushed or mirrored commit (the gate refuses, naming the file).
    blob_bytes: int = 4 * _MIB
    #: Tasks of one deployment graph, as written or merged (400 naming the graph). With
    #: `graph_links`, sized so that the largest accepted graph, every task on every node, runs
    #: on three nodes within `document_keys` (its record, with its history, is one document).
    graph_tasks: int = 500
    #: Dependency links between the tasks of one deployment graph (400 naming the graph).
    graph_links: int = 2500
    #: Keys and list items of one transaction's record, every node's file together, estimated
    #: before its plan is built (400 naming the graph). A worker builds and records the whole
    #: plan in memory, in time and memory that grow with this count; Newton's default graph on
    #: 1,000 nodes holds ~3.1 million.
    transaction_keys: int = 5_000_000
    #: Requests one worker process holds waiting for a change (blocking queries and event
    #: streams; 503 with Retry-After beyond it), kept under gunicorn's 1,000 connections per
    #: gevent worker so that the others are still answered.
    waiting_requests: int = 500
    #: Seconds a request may run before it is answered 503 (`Deadline`): every request but
    #: the heavy ones below, blocking queries and event streams (bounded by their `wait`).
    request_seconds: float = 10
    #: The history of an environment, a key or a node's value (REST and console).
    history_seconds: float = 30
    #: A diff between versions (REST, the console's node diff).
    diff_seconds: float = 30
    #: An explained effective document (`?effective&explain`).
    explain_seconds: float = 30
    #: The console's commit page (its blast radius) and search page.
    console_seconds: float = 30
    #: A graph execution (`POST /api/v1/graphs/execute`), a dry run's whole run included.
    graph_execute_seconds: float = 60
    #: Heavy requests (the five above) one worker process runs at a time; more wait for a
    #: turn within their deadline, so that heavy reads cannot take every worker from lookups.
    heavy_requests: int = 1

    def deadlines(self) -> dict[str, float]:
        """Every deadline limit by name."""
        return {name: getattr(self, name) for name in _NAMES if name.endswith(_SECONDS)}


_SECONDS = "_seconds"
DEFAULT = Limits()
_NAMES = {field.name for field in dataclasses.fields(Limits)}
_current = DEFAULT
_lock = threading.Lock()


def load(root: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> Limits:
    """The limits of the store at `root`: defaults, then `<root>/limits.yaml`, then `overrides`."""
    path = Path(root) / LIMITS_FILE
    try:
        settings = yamlio.load_mapping(path.read_bytes(), path=str(path))
    except FileNotFoundError:
        settings = {}
    return _checked({**settings, **(overrides or {})}, str(path))


def _checked(settings: dict[str, Any], where: str) -> Limits:
    unknown = sorted(set(map(str, settings)) - _NAMES)
    if unknown:
        raise InvalidInput(
            f"{where}: unknown limit {unknown[0]!r}; known: {', '.join(sorted(_NAMES))}"
        )
    for name, value in settings.items():
        if str(name).endswith(_SECONDS):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise InvalidInput(
                    f"{where}: limit {name!r} must be a positive number of seconds, not {value!r}"
                )
            if not math.isfinite(value):
                raise InvalidInput(f"{where}: limit {name!r} must be finite, not {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInput(f"{where}: limit {name!r} must be a positive integer, not {value!r}")
    return dataclasses.replace(DEFAULT, **settings)


def configure(root: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> Limits:
    """Load the limits of `root` and make them this process's (one store per process)."""
    global _current
    limits = load(root, overrides)
    with _lock:
        _current = limits
    return limits


def current() -> Limits:
    """This process's limits (the defaults until `configure`)."""
    return _current


def check_document(path: str, document: Any) -> None:
    """Refuse a document over the key count or (estimated before dumping) over the size."""
    limits = current()
    keys, size = _measure(document, limits.document_keys, limits.document_bytes)
    if keys > limits.document_keys:
        raise InvalidInput(_too_many_keys(path, limits.document_keys), path=path)
    if size > limits.document_bytes:
        raise InvalidInput(_too_big(path, size, limits.document_bytes, "document_bytes"), path=path)


def check_stored(path: str, size: int, document: Any) -> None:
    """Refuse a document as a push stores it (`size` bytes, parsed to `document`): REST's
    rule, by its exact size and its keys, so a pushed document never refuses every later key
    write."""
    _check_size(path, size)
    limit = current().document_keys
    if _measure(document, limit, math.inf)[0] > limit:
        raise InvalidInput(_too_many_keys(path, limit), path=path)


def _too_many_keys(path: str, limit: int) -> str:
    return (
        f"{path}: the document holds more than {limit} keys and list items, "
        f"the limit document_keys ({_HOW})"
    )


def within_document_keys(document: Any, reserve: int = 0) -> bool:
    """Whether `document` stays within `document_keys` once `reserve` more keys and list items
    are added to it (a record that grows as it is rewritten, say)."""
    budget = current().document_keys - reserve
    return budget >= 0 and _measure(document, budget, math.inf)[0] <= budget


def graph_excess(tasks: int, links: int) -> list[str]:
    """Why a deployment graph of `tasks` tasks and `links` dependency links is too big (none:
    it is not). The messages name no count, so one problem reads the same before and after a
    write that does not cause it."""
    limits = current()
    found = []
    if tasks > limits.graph_tasks:
        found.append(
            f"the graph holds more than {limits.graph_tasks} tasks, the limit graph_tasks ({_HOW})"
        )
    if links > limits.graph_links:
        found.append(
            f"the graph holds more than {limits.graph_links} dependency links, "
            f"the limit graph_links ({_HOW})"
        )
    return found


def spliced_within(data: bytes, key_bound: Callable[[bytes], int]) -> bool:
    """Whether spliced YAML `data` is certainly within the size and the key count:
    `key_bound(data)` is at least its keys and list items, counted in bytes of the text
    (`yamlsplice.key_count_bound`), so a text of fewer bytes than the limit is not counted.
    False when it may not be (the writer then counts on the whole document, `check_document`)."""
    limits = current()
    if len(data) > limits.document_bytes:
        return False
    return len(data) <= limits.document_keys or key_bound(data) <= limits.document_keys


def check_encoded(path: str, data: bytes) -> None:
    """Refuse the YAML of a document over `document_bytes` (what was estimated, now exact)."""
    _check_size(path, len(data))


def _check_size(path: str, size: int) -> None:
    limit = current().document_bytes
    if size > limit:
        raise InvalidInput(_too_big(path, size, limit, "document_bytes"), path=path)


_HOW = f"raise it in <root>/{LIMITS_FILE}, see docs/security.md"


def _too_big(path: str, size: int, limit: int, name: str) -> str:
    return (
        f"{path}: the document is at least {size} bytes, over the limit {name} of {limit} ({_HOW})"
    )


def _measure(document: Any, max_keys: float, max_bytes: float) -> tuple[int, int]:
    """Keys and list items, and a lower bound of the YAML size (the text of every scalar);
    stops counting once either is over its limit."""
    keys = size = 0
    stack = [document]
    while stack and keys <= max_keys and size <= max_bytes:
        item = stack.pop()
        if isinstance(item, dict):
            keys += len(item)
            size += sum(len(key) if isinstance(key, str) else 1 for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            keys += len(item)
            stack.extend(item)
        elif isinstance(item, str):
            size += len(item)
        else:
            size += 1
    return keys, size


#: How deeply a request body may nest: deep enough for any configuration, shallow enough that
#: no recursive reader or writer (YAML, merging, JSON) runs out of stack. The same bound as a
#: stored file's (`yamlio.MAX_DEPTH`, which `limits` cannot be imported by).
MAX_DEPTH = yamlio.MAX_DEPTH


def check_plain_data(value: Any, where: str = "request body", depth: int = 1) -> Any:
    """JSON data a document may hold: bounded nesting, finite numbers, encodable strings.

    `depth`: how deep `value` itself lies (1 for a document, 2 for one of its keys' values).
    """
    stack = [(value, depth)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidInput(f"{where} nests deeper than {MAX_DEPTH} levels")
        if isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(f"{where} holds {item!r}: only finite numbers are stored")
        if isinstance(item, str):
            _check_text(item, where)
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str):
                    _check_text(key, where)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return value


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{where} holds a string that is not valid Unicode ({exc.reason})"
        ) from exc
