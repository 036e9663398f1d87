"""Conventions that keep the code base legible, checked mechanically.

1. Imports point one way (read with `ast`, nothing is imported to check): no import circle,
   type-only imports included; every module has its place in `LAYERS`, and an import that
   runs up the layers is named, with its reason, in `UPWARD`; front ends reach the library
   through the facade only; no service imports the `Store`.
2. Every Flask route is in docs/openapi.yaml with each of its methods, and nothing more.
3. Every error class of `gitstore.errors` has its HTTP status in the one table.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
import yaml

from gitstore import errors
from gitstore.api import create_app
from gitstore.api.errors import STATUS

PROJECT = Path(__file__).resolve().parents[1]
PACKAGES = ("gitstore", "cli", "webhooks")
OPENAPI = PROJECT / "docs" / "openapi.yaml"
HTTP_METHODS = {"get", "put", "post", "patch", "delete"}


def _modules() -> list[tuple[str, Path]]:
    """(dotted module name, file) of every module of the project's packages."""
    found = []
    for package in PACKAGES:
        for path in sorted((PROJECT / package).rglob("*.py")):
            parts = list(path.relative_to(PROJECT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append((".".join(parts), path))
    return found


def _base(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module a `from ... import` names (relative imports made absolute)."""
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def _imports(module: str, path: Path) -> set[str]:
    """Every module name `path` imports, relative imports made absolute."""
    is_package = path.name == "__init__.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node, is_package)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


MODULES = _modules()
IMPORTS = {module: _imports(module, path) for module, path in MODULES}


def _offenders(importer_allowed, imported) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        for name in names
        if imported(name) and not importer_allowed(module)
    )


def test_the_project_has_modules_to_check():
    assert {"gitstore.backend.repository", "gitstore.api", "cli.main"} <= set(IMPORTS)


def test_only_the_backend_imports_pygit2():
    assert (
        _offenders(lambda m: _within(m, "gitstore.backend"), lambda n: _within(n, "pygit2")) == []
    )


def test_only_the_api_and_webhooks_import_flask():
    allowed = ("gitstore.api", "webhooks")
    assert (
        _offenders(
            lambda m: any(_within(m, p) for p in allowed),
            lambda n: _within(n, "flask") or _within(n, "werkzeug"),
        )
        == []
    )


def test_only_the_cli_imports_click():
    assert _offenders(lambda m: _within(m, "cli"), lambda n: _within(n, "click")) == []


def test_merge_is_pure():
    allowed = ("gitstore.merge", "gitstore.errors", "gitstore.bodies")
    found = sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        if _within(module, "gitstore.merge")
        for name in names
        if _within(name, "gitstore")
        and name != "gitstore"
        and not any(_within(name, p) for p in allowed)
    )
    assert found == []


def test_the_library_never_imports_its_front_ends():
    """Only the server runtime (`gitstore.serve`) imports the API, whose app it hosts; no
    module of the library imports the command line or the webhook receivers."""

    def front_end(name: str) -> bool:
        return _within(name, "cli") or _within(name, "webhooks") or _within(name, "gitstore.api")

    def hosts_the_api(module: str) -> bool:
        return _within(module, "gitstore.api") or _within(module, "gitstore.serve")

    assert _offenders(lambda m: not _within(m, "gitstore") or hosts_the_api(m), front_end) == []
    assert (
        _offenders(
            lambda m: not _within(m, "gitstore"),
            lambda n: _within(n, "cli") or _within(n, "webhooks"),
        )
        == []
    )


def test_the_import_reader_resolves_relative_imports(tmp_path):
    module = tmp_path / "effective.py"
    module.write_text(
        "from ..backend import repository\nfrom . import diff\nimport pygit2\n"
        "if True:\n    from flask import request\n"
    )
    names = _imports("gitstore.merge.effective", module)
    assert {"gitstore.backend.repository", "gitstore.merge.diff", "pygit2", "flask"} <= names
    package = tmp_path / "__init__.py"
    package.write_text("from .errors import STATUS\n")
    assert "gitstore.api.errors.STATUS" in _imports("gitstore.api", package)


# -- the house: layers, circles, the facade ---------------------------------------------------
#: The library's layers, lowest first: a unit may import units of its own or a lower layer.
LAYERS = [
    (
        "gitstore.errors",
        "gitstore.names",
        "gitstore.bodies",
        "gitstore.nodequery",
        "gitstore.files",
        "gitstore.metrics",
        "gitstore.logs",
        "gitstore.merge",
        "gitstore.keypaths",
        "gitstore.yamlio",
        "gitstore.factfiles",
        "gitstore.yamlblock",
        "gitstore.yamlsplice",
        "gitstore.limits",
        "gitstore.deadlines",
        "gitstore.schema_regex",
    ),
    ("gitstore.backend",),
    (
        "gitstore.served",
        "gitstore.answers",
        "gitstore.schemas",
        "gitstore.layout",
        "gitstore.documents",
        "gitstore.validation",
        "gitstore.filechecks",
        "gitstore.repositories",
        "gitstore.storeformat",
    ),
    ("gitstore.catalog", "gitstore.access"),
    ("gitstore.secrets",),
    ("gitstore.deployment", "gitstore.plans", "gitstore.configdb"),
    ("gitstore.versions", "gitstore.upgrade"),
    ("gitstore.gitops", "gitstore.watch"),
    ("gitstore.ops", "gitstore.cluster"),
    ("gitstore.store", "gitstore"),
    ("gitstore.api", "webhooks"),
    ("gitstore.serve",),
    ("cli",),
]
#: The imports allowed to run up the layers: "module -> module": why it must.
UPWARD: dict[str, str] = {}
#: What a front end may import of the library: the facade (`Store`), the error tree, the shared
#: vocabulary, and the modules whose value types, constants and free functions front ends
#: import by name from where they are defined (services are reached through the `Store` only).
FACADE = (
    "gitstore",
    "gitstore.store",
    "gitstore.errors",
    "gitstore.names",
    "gitstore.bodies",
    "gitstore.nodequery",
    "gitstore.yamlio",
    "gitstore.factfiles",
    "gitstore.keypaths",
    "gitstore.layout",
    "gitstore.served",
    "gitstore.answers",
    "gitstore.validation",
    "gitstore.limits",
    "gitstore.deadlines",
    "gitstore.metrics",
    "gitstore.logs",
    "gitstore.schema_regex",
    "gitstore.access.keystone",
    "gitstore.access.policy",
    "gitstore.backend.cache",
    "gitstore.backend.repository",
    "gitstore.cluster.secret",
    "gitstore.configdb.values",
    "gitstore.deployment.graphs",
    "gitstore.deployment.inventory",
    "gitstore.gitops.mirrors",
    "gitstore.gitops.pushes",
    "gitstore.gitops.service",
    "gitstore.merge.graphs",
    "gitstore.ops.backup",
    "gitstore.ops.fsck",
    "gitstore.ops.health",
    "gitstore.ops.maintenance",
    "gitstore.ops.migrate",
    "gitstore.storeformat",
    "gitstore.secrets.caller",
    "gitstore.secrets.local",
    "gitstore.versions.compare",
    "gitstore.access.credentials",
    "gitstore.access.ratelimit",
    "gitstore.configdb.importer",
    "gitstore.serve.server",
    "gitstore.serve.settings",
)
MODULE_NAMES = {module for module, _ in MODULES}


def _targets(module: str, path: Path) -> set[str]:
    """The project modules `path` imports: `from a import b` is module `a.b` when that is a
    module, else `a` (a name defined there)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node, is_package)
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULE_NAMES else base
                for a in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in MODULE_NAMES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def _module_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, type-only imports included."""
    return {module: _targets(module, path) for module, path in MODULES}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def _layer(module: str) -> tuple[int, str]:
    """(layer, unit) of a module: the longest unit name that contains it."""
    places = [
        (layer, unit)
        for layer, units in enumerate(LAYERS)
        for unit in units
        if _within(module, unit)
    ]
    assert places, f"{module} is in no layer of LAYERS: place it"
    return max(places, key=lambda place: len(place[1]))


def test_there_is_no_import_circle_not_even_for_type_hints():
    assert _circles(_module_graph()) == []


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_every_module_has_its_place_in_the_layers():
    """A module `LAYERS` does not name falls into the facade's unit `gitstore` (the package
    itself), where its imports were never judged."""
    unplaced = sorted(
        module
        for module, _ in MODULES
        if _within(module, "gitstore") and module != "gitstore" and _layer(module)[1] == "gitstore"
    )
    assert unplaced == [], f"place these in LAYERS: {unplaced}"


def test_only_the_named_imports_run_up_the_layers():
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in _module_graph().items()
        for target in targets
        if _layer(target)[0] > _layer(module)[0]
    )
    assert upward == sorted(UPWARD), "name each in UPWARD with its reason, or turn it around"


def test_front_ends_reach_the_library_through_the_facade_only():
    def front_end(module: str) -> bool:
        return any(_within(module, p) for p in ("cli", "webhooks", "gitstore.api"))

    deeper = sorted(
        f"{module} imports {target}"
        for module, targets in _module_graph().items()
        if front_end(module)
        for target in targets
        if _within(target, "gitstore") and not front_end(target) and target not in FACADE
    )
    assert deeper == []


def test_the_package_exports_only_the_store():
    """`from gitstore import X` is the `Store` or a module: every other name is imported from
    the module that defines it, which a reader and a type checker can follow."""
    import gitstore

    assert gitstore.__all__ == ["Store"] and not hasattr(gitstore, "__getattr__")
    through_package = sorted(
        f"{module} imports {name}"
        for module, names in IMPORTS.items()
        for name in names
        if name.startswith("gitstore.")
        and name.count(".") == 1
        and name not in MODULE_NAMES
        and name != "gitstore.Store"
    )
    assert through_package == [], "import these from the module that defines them"


def test_the_api_never_imports_the_webhook_receivers():
    assert (
        _offenders(lambda m: not _within(m, "gitstore.api"), lambda n: _within(n, "webhooks")) == []
    )


def test_no_service_imports_the_store():
    allowed = ("gitstore.store", "gitstore", "gitstore.api", "gitstore.serve", "cli", "webhooks")
    assert (
        _offenders(
            lambda m: any(m == a or _within(m, a) and a != "gitstore" for a in allowed),
            lambda n: _within(n, "gitstore.store"),
        )
        == []
    )


#: What makes a cache: `LRUCache(...)`, `functools.lru_cache`, `functools.cache`.
_CACHE_MAKERS = {"LRUCache", "lru_cache", "cache"}
#: Module-level caches allowed: pure memos of compiled things, never request data (the
#: store's read caches live in `backend/cache.py`'s `Caches`, built by the Store).
MAX_MODULE_CACHES = 3


def _makes_cache(node: ast.AST) -> bool:
    """Whether `node` calls or names a cache maker outside a lambda (which runs later)."""
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(current, ast.Name | ast.Attribute):
            name = current.id if isinstance(current, ast.Name) else current.attr
            if name in _CACHE_MAKERS:
                return True
        todo.extend(ast.iter_child_nodes(current))
    return False


def _module_caches(module: str, source: str) -> list[str]:
    """`module.name` of each cache made at import: a module-level assignment that calls a
    cache maker, or a function (of the module or of a class of it) decorated with one."""
    found = []
    for node in ast.parse(source).body:
        value = getattr(node, "value", None)
        if isinstance(node, ast.Assign | ast.AnnAssign) and value and _makes_cache(value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{module}.{ast.unparse(target)}" for target in targets]
        functions = [(module, node)] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            where = f"{module}.{node.name}"
            functions = [(where, n) for n in node.body if isinstance(n, ast.FunctionDef)]
        for where, function in functions:
            if any(_makes_cache(decorator) for decorator in function.decorator_list):
                found.append(f"{where}.{function.name}")
    return found


def test_few_caches_live_in_modules():
    found = [c for m, path in _modules() for c in _module_caches(m, path.read_text())]
    assert len(found) <= MAX_MODULE_CACHES, found


def test_the_cache_counter_finds_each_kind_of_module_cache():
    source = """
import functools
from functools import lru_cache
A = LRUCache(10, name="a")
B: LRUCache = cache_module.LRUCache(10)
C = functools.lru_cache(maxsize=8)(len)
@functools.cache
def d(): ...
@lru_cache(maxsize=4)
def e(x): ...
class F:
    @functools.lru_cache
    def g(self): ...
    rows = field(default_factory=lambda: LRUCache(16))
H = field(default_factory=lambda: LRUCache(16))
def i():
    return LRUCache(4)
"""
    assert _module_caches("m", source) == ["m.A", "m.B", "m.C", "m.d", "m.e", "m.F.g"]


def test_every_package_has_a_readme():
    packages = {path.parent for path in (PROJECT / "gitstore").rglob("__init__.py")}
    packages |= {PROJECT / "cli", PROJECT / "webhooks"}
    missing = sorted(
        str(p.relative_to(PROJECT)) for p in packages if not (p / "README.md").exists()
    )
    assert missing == []


# -- routes and the OpenAPI document -------------------------------------------------------
_CONVERTER = re.compile(r"<(?:[a-z_]+(?:\([^)]*\))?:)?([A-Za-z_][A-Za-z0-9_]*)>")


def _app_routes(store) -> set[tuple[str, str]]:
    app = create_app({"TESTING": True}, store=store)
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = _CONVERTER.sub(r"{\1}", rule.rule)
        for method in rule.methods or ():
            if method.lower() in HTTP_METHODS:
                routes.add((path.rstrip("/") or "/", method.lower()))
    return routes


#: Catch-all Flask rules that the OpenAPI document spells out as templates (a generated client
#: cannot call `{rest}`): rule path -> its templates. A template stands for its rule below, so
#: a method documented on a template but not routed (or routed but documented on no template)
#: still fails; `test_catch_all_templates_reach_their_rule` checks that each template exists in
#: the document and that a URL built from it is served by that rule.
CATCH_ALL = {
    "/api/v1/config/environments/{env_id}/{rest}": {
        "/api/v1/config/environments/{env_id}/resources/{resource}/{kind}": "/1/resources/a/values",
        "/api/v1/config/environments/{env_id}/resources/{resource}/{kind}/keys/{op}": (
            "/1/resources/a/overrides/keys/set"
        ),
        "/api/v1/config/environments/{env_id}/{level}/{level_value}/resources/{resource}/{kind}": (
            "/1/nodes/1/resources/a/values"
        ),
        (
            "/api/v1/config/environments/{env_id}/{level}/{level_value}/resources/{resource}"
            "/{kind}/keys/{op}"
        ): "/1/nodes/1/resources/a/values/keys/delete",
    }
}
_RULE_OF_TEMPLATE = {t: rule for rule, templates in CATCH_ALL.items() for t in templates}


def _spec_paths() -> dict:
    return yaml.safe_load(OPENAPI.read_text()).get("paths") or {}


def _documented() -> set[tuple[str, str]]:
    return {
        (_RULE_OF_TEMPLATE.get(path, path).rstrip("/") or "/", method)
        for path, item in _spec_paths().items()
        for method in item
        if method in HTTP_METHODS
    }


def test_catch_all_templates_reach_their_rule(store):
    app = create_app({"TESTING": True}, store=store)
    urls = app.url_map.bind("localhost")
    paths = _spec_paths()
    for rule, templates in CATCH_ALL.items():
        assert rule not in paths, f"{rule} is documented by its templates, not itself"
        for template, example in templates.items():
            assert template in paths, f"template {template} is missing from {OPENAPI.name}"
            prefix = rule.split("{env_id}")[0].rstrip("/")
            endpoint, _ = urls.match(prefix + example, method="PUT")
            matched = next(r for r in app.url_map.iter_rules() if r.endpoint == endpoint)
            assert _CONVERTER.sub(r"{\1}", matched.rule) == rule, (template, matched.rule)


def test_rule_paths_normalise_like_openapi():
    assert _CONVERTER.sub(r"{\1}", "/e/<int:env_id>/<path:rest>/<name>") == (
        "/e/{env_id}/{rest}/{name}"
    )


def test_every_route_is_documented_in_openapi(store):
    missing = sorted(_app_routes(store) - _documented())
    assert missing == [], f"routes missing from {OPENAPI.name}: {missing}"


def test_every_documented_path_is_a_route(store):
    extra = sorted(_documented() - _app_routes(store))
    assert extra == [], f"{OPENAPI.name} documents routes the app lacks: {extra}"


def test_openapi_is_a_valid_openapi_3_document():
    from openapi_spec_validator import validate

    spec = yaml.safe_load(OPENAPI.read_text())
    assert spec["openapi"].startswith("3.")
    assert list(spec)[-1] == "paths", "keep paths: the last top-level key (others append)"
    validate(spec)


# -- errors --------------------------------------------------------------------------------
ERROR_CLASSES = [
    cls
    for _, cls in inspect.getmembers(errors, inspect.isclass)
    if issubclass(cls, errors.GitstoreError) and cls.__module__ == errors.__name__
]


def test_there_are_error_classes():
    assert errors.GitstoreError in ERROR_CLASSES and len(ERROR_CLASSES) >= 5


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_class_has_a_status(cls):
    assert cls in STATUS, f"add {cls.__name__} to gitstore.api.errors.STATUS"
    assert 400 <= STATUS[cls] < 600
