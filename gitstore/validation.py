"""Rules a stored tree or document must satisfy: one place for REST writes, the push gate and
`gitstore validate`.

`validate_tree` checks one commit of a catalog or an environment repository and returns every
problem as `{"file", "line"?, "key"?, "message"}` with `file` relative to the repository. A REST
write calls `check_resource_document` on the one document it changes: the same rule the tree
check applies to every resource file, so the two never drift apart.

A rule is a function of one `TreeCheck` that calls `report` for each problem it finds. This
module holds the machinery and the rules every file of either kind keeps (names, regular
files, YAML that parses); the rules of each domain live in its package (an environment's own
layout in `gitstore.configdb.rules`, the catalog's in `gitstore.catalog.rules`), and
`gitstore.gitops.rules` is the one list of every rule of each repository kind (so every entry
point runs the same list, whatever was imported first).

Entries whose top-level name starts with `.` (`.github/`, `.gitlab-ci.yml`) are forge metadata:
never served, never checked.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import referencing.exceptions

from gitstore import limits, schema_regex, schemas, yamlio
from gitstore.backend.cache import Caches
from gitstore.backend.snapshot import Snapshot, not_a_file
from gitstore.deadlines import Deadline
from gitstore.errors import InvalidInput, ValidationFailed
from gitstore.layout import CATALOG_KIND, ENVIRONMENT_FILE, ENVIRONMENT_KIND
from gitstore.names import not_utf8, shown
from gitstore.repositories import Repositories

if TYPE_CHECKING:
    from gitstore.filechecks import FileChecks

ENVIRONMENT = ENVIRONMENT_KIND
CATALOG = CATALOG_KIND
YAML_SUFFIXES = (".yaml", ".yml")

Problem = dict[str, Any]
Check = Callable[["TreeCheck"], None]

_UNREADABLE = object()


class Catalog(Protocol):
    """What rules read of the catalog a tree is checked against
    (`gitstore.catalog.view.CatalogView` is one)."""

    snapshot: Snapshot
    components: list[dict]

    def definitions(self) -> list[dict]: ...
    def definitions_of(self, component_names: list[str]) -> list[dict]: ...


# -- the one entry point --------------------------------------------------------------------
def validate_tree(
    snapshot: Snapshot,
    kind: str,
    rules: Sequence[Check],
    *,
    catalog: Catalog | None = None,
    env_id: int | None = None,
    repos: Repositories | None = None,
    checks: FileChecks | None = None,
) -> list[Problem]:
    """Every problem `rules` find in one commit of a `catalog` or `environment` repository.

    `catalog` is the catalog the store serves: an environment is checked against it (its
    components, resources and schemas), a catalog commit would replace it; without it the
    checks that need one are skipped. `env_id`, when known, must match the id in
    `environment.yaml`. `repos` is the store whose environments a catalog commit must keep
    whole (without it, outside a store, the checks against environments' data are skipped).
    `checks` keeps what the rules found in one file (`gitstore.filechecks`): with it, a file
    already checked in the same context is not parsed again, and the report is the same.
    """
    return check_tree(
        snapshot, kind, rules, catalog=catalog, env_id=env_id, repos=repos, checks=checks
    ).sorted_problems()


def check_tree(
    snapshot: Snapshot,
    kind: str,
    rules: Sequence[Check],
    *,
    catalog: Catalog | None = None,
    env_id: int | None = None,
    repos: Repositories | None = None,
    checks: FileChecks | None = None,
    deadline: Deadline | None = None,
) -> TreeCheck:
    """`validate_tree`'s check with its tree kept: the problems and the documents it parsed
    (a caller that reads the same files next need not parse them again). With `deadline`,
    each file judged alone is a step of it (a background check yields to a worker's
    requests between files)."""
    if kind not in (ENVIRONMENT, CATALOG):
        raise InvalidInput(f"unknown repository kind {kind!r}; use catalog or environment")
    tree = TreeCheck(snapshot, kind, catalog, env_id, repos, checks, deadline)
    for rule in rules:
        rule(tree)
    return tree


def detect_kind(snapshot: Snapshot) -> str:
    """`environment` for a tree with `environment.yaml`, else `catalog`."""
    return ENVIRONMENT if snapshot.exists(ENVIRONMENT_FILE) else CATALOG


def format_problem(problem: Problem) -> str:
    """`nodes/1/values/a.yaml:3: key 'x.y': message` (line and key when known)."""
    where = shown(problem["file"]) + (f":{problem['line']}" if problem.get("line") else "")
    key = f" key {problem['key']!r}:" if problem.get("key") else ""
    return f"{where}:{key} {problem['message']}"


def raise_problems(problems: list[Problem], what: str) -> None:
    """Raise ValidationFailed listing `problems` (nothing when the list is empty)."""
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValidationFailed(
            f"{what}: {format_problem(problems[0])}{more}",
            path=problems[0]["file"],
            key=problems[0].get("key"),
            errors=problems,
        )


# -- one document (REST writes call these too) ----------------------------------------------
def resource_document_problems(
    definition: dict,
    path: str,
    document: Any,
    lines: dict | None = None,
    secrets: Sequence[tuple[str, ...]] = (),
    caches: Caches | None = None,
) -> list[Problem]:
    """Problems of one values/overrides document: a mapping that satisfies the `schema`.

    `secrets` are the key paths of the document's secret leaves: the schema does not judge
    their values (REST sees them plain, the gate sealed; docs/secrets.md), only their place.
    `caches`: the store's, which keep the schema's validator.
    """
    if not isinstance(document, dict):
        return [
            {
                "file": path,
                "line": 1,
                "message": f"document must be a mapping, not {_kind_of(document)}",
            }
        ]
    schema = definition.get("schema")
    if not schema:
        return []
    resource = definition.get("name", "?")
    validator = schema_validator(schema, resource, path, caches)
    errors = _schema_errors(validator, document, resource, path)
    problems = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.path]):
        keys = [str(p) for p in error.path]
        if _within_secret(keys, secrets):
            continue
        problem: Problem = {"file": path}
        line = _line(lines or {}, keys)
        if line:
            problem["line"] = line
        if keys:
            problem["key"] = ".".join(keys)
        problem["message"] = f"{error.message} (schema of resource {definition.get('name')!r})"
        problems.append(problem)
    return problems


def check_resource_document(
    definition: dict,
    path: str,
    document: Any,
    secrets: Sequence[tuple[str, ...]] = (),
    caches: Caches | None = None,
) -> None:
    """Raise ValidationFailed if `document` breaks the rules of its resource definition."""
    raise_problems(
        resource_document_problems(definition, path, document, secrets=secrets, caches=caches),
        "invalid document",
    )


def _within_secret(keys: list[str], secrets: Sequence[tuple[str, ...]]) -> bool:
    """Whether a schema error at `keys` is about a secret leaf's value (or inside it)."""
    return any(tuple(keys[: len(secret)]) == secret for secret in secrets)


def schema_validator(schema: dict, resource: str, path: str, caches: Caches | None = None):
    """The validator of a resource's schema (kept in `caches`); ValidationFailed naming `path`
    if it is unusable."""
    try:
        return schemas.validator(schema, resource, caches)
    except InvalidInput as exc:
        raise ValidationFailed(f"{path}: {exc.message}", path=path, key="schema") from exc


def _schema_errors(validator, document: Any, resource: str, path: str) -> list:
    """Every schema error of `document`. A schema that could not run (stored before schemas
    were checked when written) is the writer's 400, never a 500."""
    try:
        return schema_regex.errors(validator, document)
    except (referencing.exceptions.Unresolvable, RecursionError) as exc:
        raise _unusable(resource, path, "its references do not resolve or recurse") from exc
    except schema_regex.PatternError as exc:
        raise _unusable(resource, path, str(exc)) from exc


def _unusable(resource: str, path: str, why: str) -> ValidationFailed:
    message = schemas.invalid(resource, why).message
    return ValidationFailed(f"{path}: {message}", path=path, key="schema")


def _line(lines: dict, keys: Sequence[str]) -> int | None:
    """The line of the deepest key of `keys` that the file names (lists are not entered)."""
    for depth in range(len(keys), 0, -1):
        found = lines.get(tuple(keys[:depth]))
        if found:
            return found
    return None


def _kind_of(value: Any) -> str:
    return {
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


# -- the tree under check -------------------------------------------------------------------
class TreeCheck:
    """One commit under validation: its files, their parsed documents, the problems found."""

    def __init__(
        self,
        snapshot: Snapshot,
        kind: str,
        catalog: Catalog | None,
        env_id: int | None,
        repos: Repositories | None = None,
        checks: FileChecks | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.kind = kind
        self.catalog = catalog
        self.env_id = env_id
        self.repos = repos
        self.problems: list[Problem] = []
        self._reported: set[tuple] = set()
        self._checks = checks
        self._deadline = deadline
        self._recording: list[Problem] | None = None  # what the `per_file` check running found
        entries = [(p, e) for p, e in snapshot.walk_entries() if not p.startswith(".")]
        self.files = [p for p, _ in entries]
        self._blob_ids = {p: e.object_id for p, e in entries}
        #: path -> why it is no regular file (`regular_files` reports it; nothing reads it)
        self.not_regular = {p: why for p, e in entries if (why := not_a_file(e.filemode))}
        self._below = _index_by_folder(self.files)
        self._parsed: dict[str, Any] = {}
        self._by_blob: dict[str, dict] | None = None  # `parsed_mapping`'s, once the rules ran
        self._lines: dict[str, dict] = {}
        self._memo: dict[str, Any] = {}

    def report(
        self, file: str, message: str, *, key: str | None = None, line: int | None = None
    ) -> None:
        """Record a problem; the line is looked up from `key` when not given."""
        if line is None and key:
            line = self.line_of(file, key.split("."))
        problem: Problem = {"file": file}
        if line:
            problem["line"] = line
        if key:
            problem["key"] = key
        problem["message"] = message
        if self._recording is not None:
            self._recording.append(problem)
        self._add(problem)

    def _add(self, problem: Problem) -> None:
        identity = (problem["file"], problem.get("line"), problem.get("key"), problem["message"])
        if identity not in self._reported:  # a file reached by two checks is named once
            self._reported.add(identity)
            self.problems.append(dict(problem))

    def per_file(
        self, rule: str, path: str, context: Hashable, check: Callable[[], object]
    ) -> None:
        """Run `check`, rule `rule`'s judgement of file `path` alone, or replay what it reported
        on the same blob at `path` in the same `context` (all else `check` reads). `check`
        reports only about `path`; a replay in order gives the report a run would give."""
        blob_id = self._blob_ids.get(path)
        if self._checks is None or blob_id is None:
            self._step()
            check()
            return
        key = (rule, path, blob_id, context)
        found = self._checks.get(key)
        if found is not None:
            for problem in found:
                self._add(problem)
            return
        self._step()
        self._recording = []
        try:
            check()
            self._checks.put(key, self._recording)
        finally:
            self._recording = None

    def _step(self) -> None:
        if self._deadline is not None:
            self._deadline.check()

    def blob_id(self, path: str) -> str | None:
        """The blob id of file `path` in this tree (None if it holds none)."""
        return self._blob_ids.get(path)

    def file_context(self) -> Hashable:
        """What a rule judging one file alone reads besides it: the limits in force."""
        return limits.current()

    def data_context(self) -> Hashable:
        """What a rule judging one data file reads besides it: the catalog commit (resource
        definitions, schemas, their `secret_keys`), the blob of `environment.yaml` (components,
        `secret_keys`) and the limits in force."""
        catalog = self.catalog.snapshot.commit_id if self.catalog is not None else None
        return (catalog, self._blob_ids.get(ENVIRONMENT_FILE), limits.current())

    def sorted_problems(self) -> list[Problem]:
        """Every problem found, by file and line."""
        return sorted(self.problems, key=lambda p: (p["file"], p.get("line") or 0))

    def parsed_mapping(self, blob_id: str) -> dict | None:
        """The mapping this check parsed from blob `blob_id`, None if it parsed none. A strict
        read that succeeded is what `yamlio.load` gives (it only refuses more): a diff of the
        same tree may use it instead of parsing the blob again. Shared: never mutate it."""
        if self._by_blob is None:
            self._by_blob = {}
            for path, doc in self._parsed.items():
                blob_id_of_path = self._blob_ids.get(path)
                if isinstance(doc, dict) and blob_id_of_path is not None:
                    self._by_blob[blob_id_of_path] = doc
        return self._by_blob.get(blob_id)

    def document(self, path: str) -> Any:
        """The parsed file (None when absent or empty); parse errors are reported once."""
        if path not in self._parsed:
            self._parsed[path] = self._parse(path)
        return self._parsed[path]

    def _parse(self, path: str) -> Any:
        if path in self.not_regular:
            self.report(path, self.not_regular[path])
            return _UNREADABLE
        data = self.snapshot.read(path)
        if data is None:
            return None
        try:
            return yamlio.load_strict(data, path=path)
        except InvalidInput as exc:
            for problem in exc.errors or [{"file": path, "message": exc.message}]:
                self.report(problem["file"], problem["message"], line=problem.get("line"))
            return _UNREADABLE

    def mapping(self, path: str) -> dict | None:
        """The file as a mapping (`{}` when empty); None, with a problem, when it is not one."""
        doc = self.document(path)
        if doc is _UNREADABLE or (doc is None and not self.snapshot.exists(path)):
            return None
        if doc is None:
            return {}
        if not isinstance(doc, dict):
            self.report(path, f"document must be a mapping, not {_kind_of(doc)}", line=1)
            return None
        return doc

    def memo(self, name: str, compute: Callable[[], Any]) -> Any:
        """A value computed once per tree (checks share what they derive)."""
        if name not in self._memo:
            self._memo[name] = compute()
        return self._memo[name]

    def lines(self, path: str) -> dict[tuple[str, ...], int]:
        """The line of every mapping key of the file, by key path."""
        if path not in self._lines:
            data = None if path in self.not_regular else self.snapshot.read(path)
            self._lines[path] = yamlio.key_lines(data) if data else {}
        return self._lines[path]

    def line_of(self, path: str, keys: Sequence[str]) -> int | None:
        return _line(self.lines(path), keys)

    def files_under(self, folder: str) -> list[str]:
        """Every file below `folder`, at any depth."""
        return self._below.get(folder.strip("/"), [])

    def children(self, folder: str) -> list[tuple[str, bool]]:
        """(name, is_folder) of the entries of `folder`, from the file list (no tree reads)."""
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        found: dict[str, bool] = {}
        for path in self.files_under(folder):
            name, sep, _ = path[len(prefix) :].partition("/")
            found[name] = found.get(name, False) or bool(sep)
        return sorted(found.items())

    def first_file(self, folder: str) -> str:
        """A file to name for a problem with a whole folder (the folder if it holds none)."""
        if folder not in self._below:
            return folder  # a file
        found = self.files_under(folder)
        return found[0] if found else folder.rstrip("/") + "/"


def _index_by_folder(files: list[str]) -> dict[str, list[str]]:
    """Folder -> every file below it (the root is ``""``), in one pass over the file list."""
    below: dict[str, list[str]] = {"": list(files)}
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            below.setdefault("/".join(parts[:depth]), []).append(path)
    return below


# -- checks of both kinds -------------------------------------------------------------------
def utf8_paths(tree: TreeCheck) -> None:
    """Every path name is UTF-8: git stores names as bytes, every reader of the store (REST
    URLs, JSON answers, logs) handles them as text."""
    for path in tree.files:
        byte = not_utf8(path)
        if byte is not None:
            tree.report(path, f"the path is not valid UTF-8 (byte 0x{byte:02X}); rename it")


def yaml_names(tree: TreeCheck) -> None:
    """Every YAML file is named `.yaml`, as the layout names them: the store reads no `.yml`
    file, so one was stored unread and unchecked (a `settings/editable.yml` with a plain
    password passed the secrets rule, which covers `settings/*.yaml`)."""
    for path in tree.files:
        if path.endswith(".yml"):
            tree.report(path, f"gitstore reads only .yaml files; name it {path[:-4]}.yaml")


def regular_files(tree: TreeCheck) -> None:
    """Every path but forge metadata is a regular file: a symlink's blob is its target's name
    (REST served that text as the document), a gitlink names a commit elsewhere (an inventory
    node appeared from one). Any path, not only those read today: a README may be read by a
    later layout, and no tool needs either kind here."""
    for path, why in tree.not_regular.items():
        tree.report(path, why)


def yaml_parses(tree: TreeCheck) -> None:
    context = tree.file_context()
    for path in tree.files:
        if path.endswith(YAML_SUFFIXES):
            tree.per_file("yaml_parses", path, context, partial(tree.document, path))
