"""Every operation a command may call, stated once: `Client` (the one operation table).

Each operation is one method of `Client`: its signature, the REST route that serves it
(`@rest(METHOD, PATH, query=..., body=...)`), and its call on the `Store` facade (the body).
`LocalClient` (`local_client.py`) runs the bodies on a store root on this machine;
`HttpClient` (`http_client.py`) derives each routed operation from its route (the standard
library's urllib, no extra dependency) and writes by hand only the few whose wire form is not
a route's (headers, streams, a retried upload). Both return the same plain data and raise the
same `gitstore.errors` classes with the same messages, so a command behaves alike in both
modes. A new operation is one method here (tests/cli/test_operations.py checks that each route
is served by the app and that every unrouted operation has its HTTP form).

A route's PATH names the arguments it carries as `<name>` (quoted as one segment) or
`<int:name>`; `query` names the arguments sent as query parameters (`wire=name` where the
wire name differs; None and False are left out, True is sent as `1`); `body` names the argument
sent as the JSON body, or a tuple of them sent as one object (`wire=name` likewise).

Reads return data; writes of values return a `Served` naming the new commit and version.
Level pairs are `[(level, value), ...]` from the least specific level down.
"""

from __future__ import annotations

import dataclasses
import getpass
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gitstore import Store
from gitstore.backend.repository import Author
from gitstore.configdb.values import Query
from gitstore.served import Served
from gitstore.versions.compare import CompareQuery

API_ROOT = "/api/v1/config"
V1_ROOT = "/api/v1"
#: A (pairs, resource, kind) address of one document, for `write_many`.
Address = tuple[tuple[tuple[str, str], ...], str, str]
LevelPairs = Sequence[tuple[str, str]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Route:
    """The REST request of one operation (the module docstring says how it is read)."""

    method: str
    path: str
    root: str = API_ROOT
    query: tuple[str, ...] = ()
    body: str | tuple[str, ...] | None = None


def rest(
    method: str,
    path: str,
    *,
    root: str = API_ROOT,
    query: tuple[str, ...] | str = (),
    body: str | tuple[str, ...] | None = None,
) -> Callable[[F], F]:
    """Mark an operation of `Client` as served by this route (`HttpClient` derives its call)."""
    route = Route(method, path, root, (query,) if isinstance(query, str) else query, body)

    def mark(operation: F) -> F:
        operation.__rest__ = route  # type: ignore[attr-defined]
        return operation

    return mark


def v1(method: str, path: str, **options: Any) -> Callable[[F], F]:
    """`rest` below `/api/v1` (tags, nodes, graphs, plans), not `/api/v1/config`."""
    return rest(method, path, root=V1_ROOT, **options)


def route_of(operation: Callable[..., Any]) -> Route | None:
    return getattr(operation, "__rest__", None)


class Client:
    """Every operation a command may call. Ids are integers; component refs may also be names.

    The bodies run on the `Store` (`LocalClient`); `HttpClient` replaces each routed one.
    """

    store: Store
    author: Author | None = None

    def _reader(self) -> str:
        """Who reads, for the secrets audit: the author given, else the local user."""
        return self.author.name if self.author else f"local user {getpass.getuser()}"

    # -- catalog ---------------------------------------------------------------------------
    @rest("GET", "/components", query="version")
    def list_components(self, version: str | None = None) -> list[dict]:
        return self.store.components.list(version).data

    @rest("GET", "/components/<int:component_id>", query="version")
    def get_component(self, component_id: int, version: str | None = None) -> dict:
        return self.store.components.get(component_id, version).data

    @rest("POST", "/components", body="body")
    def create_component(self, body: dict) -> dict:
        return self.store.components.create(body, self.author).data

    @rest("PATCH", "/components/<int:component_id>", body="body")
    def update_component(self, component_id: int, body: dict) -> dict:
        return self.store.components.update(component_id, body, self.author).data

    @rest("DELETE", "/components/<int:component_id>")
    def delete_component(self, component_id: int) -> None:
        self.store.components.delete(component_id, self.author)

    @rest("GET", "/resource_definitions", query=("component_id", "version"))
    def list_definitions(
        self, component_id: int | str | None = None, version: str | None = None
    ) -> list[dict]:
        ref = None if component_id is None else str(component_id)
        return self.store.definitions.list(ref, version).data

    @rest("GET", "/resource_definitions/<int:definition_id>", query="version")
    def get_definition(self, definition_id: int, version: str | None = None) -> dict:
        return self.store.definitions.get(definition_id, version).data

    @rest("POST", "/resource_definitions", body="body")
    def create_definition(self, body: dict) -> dict:
        return self.store.definitions.create(body, self.author).data

    @rest("PATCH", "/resource_definitions/<int:definition_id>", body="body")
    def update_definition(self, definition_id: int, body: dict) -> dict:
        return self.store.definitions.update(definition_id, body, self.author).data

    @rest("DELETE", "/resource_definitions/<int:definition_id>")
    def delete_definition(self, definition_id: int) -> None:
        self.store.definitions.delete(definition_id, self.author)

    # -- environments ----------------------------------------------------------------------
    @rest("GET", "/environments")
    def list_environments(self) -> list[dict]:
        return self.store.environments.list().data

    @rest("GET", "/environments/<int:env_id>", query="version")
    def get_environment(self, env_id: int, version: str | None = None) -> dict:
        return self.store.environments.get(env_id, version).data

    @rest("POST", "/environments", body="body")
    def create_environment(self, body: dict) -> dict:
        return self.store.environments.create(body, self.author).data

    @rest("PATCH", "/environments/<int:env_id>", body="body")
    def update_environment(self, env_id: int, body: dict) -> dict:
        return self.store.environments.update(env_id, body, self.author).data

    @rest("DELETE", "/environments/<int:env_id>")
    def delete_environment(self, env_id: int) -> None:
        self.store.environments.delete(env_id)

    @rest("GET", "/environments/<int:env_id>/hierarchy_levels", query="version")
    def list_levels(self, env_id: int, version: str | None = None) -> list[dict]:
        return self.store.environments.levels(env_id, version).data

    @rest("GET", "/environments/<int:env_id>/hierarchy_levels/<name>", query="version")
    def get_level(self, env_id: int, name: str, version: str | None = None) -> dict:
        return self.store.environments.level(env_id, name, version).data

    # -- values (their HTTP forms read and send headers: written in `HttpClient`) ----------
    def read(self, env_id: int, pairs: LevelPairs, resource: str, kind: str, query: Query) -> Any:
        return self.read_served(env_id, pairs, resource, kind, query).data

    def read_served(
        self, env_id: int, pairs: LevelPairs, resource: str, kind: str, query: Query
    ) -> Served:
        who = self._reader()
        return self.store.config.read(env_id, list(pairs), resource, kind, query, who)

    def watch_read(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        query: Query,
        index: str | None,
        wait: float,
    ) -> tuple[Any, str | None]:
        """A blocking query of a value (docs/watch.md): the answer and the head it was read at."""
        who = self._reader()

        def read_at(version: str | None) -> Served:
            at = dataclasses.replace(query, version=version)
            return self.store.config.read(env_id, list(pairs), resource, "values", at, who)

        result, head = self.store.watch.hold(env_id, index, wait, read_at)
        return result.data, head

    def events(self, env_id: int, since: str | None = None) -> Iterator[dict]:
        """The commit events of environment `env_id` after `since` (default: from now on)."""
        yield from (
            event
            for event in self.store.watch.stream(env_id, since, keepalive=60.0)
            if event is not None
        )

    def put(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        document: dict,
        expected: str | None = None,
    ) -> Served:
        return self.store.config.put(
            env_id, list(pairs), resource, kind, document, self.author, expected=expected
        )

    def update_keys(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        op: str,
        paths: list[list[Any]],
        expected: str | None = None,
    ) -> Served:
        return self.store.config.update_keys(
            env_id, list(pairs), resource, kind, op, paths, self.author, expected=expected
        )

    def write_many(self, env_id: int, documents: dict[Address, dict], message: str) -> Served:
        return self.store.config.write_many(env_id, documents, message, self.author)

    @rest("PUT", "/environments/<int:env_id>/facts", body="body")
    def upload_facts(self, env_id: int, body: dict) -> dict:
        return self.store.facts.upload_body(env_id, body, self.author)

    # -- secrets (docs/secrets.md) ---------------------------------------------------------
    @rest("GET", "/environments/<int:env_id>/secrets/rules")
    def secret_rules(self, env_id: int) -> dict:
        return self.store.secrets.rules(env_id).data

    @rest("POST", "/environments/<int:env_id>/secrets/encrypt", body=("path", "document"))
    def encrypt_secrets(self, env_id: int, path: str, document: dict) -> dict:
        return self.store.secrets.encrypt(env_id, path, document).data

    # -- versions --------------------------------------------------------------------------
    def history(self, env_id: int, **params: Any) -> dict:
        return self.store.versions.history(env_id, **params).data

    def compare(self, env_a: int, env_b: int, **params: Any) -> dict:
        query = CompareQuery(**params)
        return self.store.comparisons.compare(env_a, env_b, query).data

    @rest(
        "GET",
        "/environments/<int:env_id>/diff",
        query=("from=source", "to=target", "levels=scope", "resource"),
    )
    def diff(
        self,
        env_id: int,
        source: str,
        target: str | None = None,
        *,
        scope: str | None = None,
        resource: str | None = None,
    ) -> dict:
        levels = [scope] if scope else []
        return self.store.versions.diff(
            env_id, source, target, levels=levels, resource=resource
        ).data

    @rest("GET", "/environments/<int:env_id>/labels")
    def labels(self, env_id: int) -> list[dict]:
        return self.store.versions.labels(env_id).data

    @rest("POST", "/environments/<int:env_id>/labels", body="body")
    def create_label(self, env_id: int, body: dict) -> dict:
        return self.store.versions.create_label(env_id, body, self.author).data

    @rest("POST", "/environments/<int:env_id>/revert", body="body")
    def revert(self, env_id: int, body: dict) -> dict:
        return self.store.versions.revert(env_id, body, self.author).data

    def explain(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        key: str | None = None,
        version: str | None = None,
    ) -> dict:
        return self.store.versions.explain(env_id, list(pairs), resource, key, version).data

    # -- tags and nodes (role decomposition); kind is "release", "plugin" or "cluster" -------
    @v1("GET", "/<kind>s/<int:owner_id>/tags")
    def list_tags(self, kind: str, owner_id: int) -> list[dict]:
        return self.store.tags.list(kind, owner_id).data

    @v1("POST", "/<kind>s/<int:owner_id>/tags", body="body")
    def create_tag(self, kind: str, owner_id: int, body: dict) -> dict:
        return self.store.tags.create(kind, owner_id, body, self.author).data

    @v1("PUT", "/<kind>s/<int:owner_id>/tags/<name>", body="body")
    def update_tag(self, kind: str, owner_id: int, name: str, body: dict) -> dict:
        return self.store.tags.update(kind, owner_id, name, body, self.author).data

    @v1("DELETE", "/<kind>s/<int:owner_id>/tags/<name>")
    def delete_tag(self, kind: str, owner_id: int, name: str) -> None:
        self.store.tags.delete(kind, owner_id, name, self.author)

    @v1("POST", "/clusters/<int:env_id>/nodes/<node>/tags", body=("tags",))
    def assign_tags(self, env_id: int, node: str, tags: list[str]) -> dict:
        return self.store.tags.assign(env_id, node, {"tags": tags}, self.author).data

    @v1("DELETE", "/clusters/<int:env_id>/nodes/<node>/tags", body=("tags",))
    def unassign_tags(self, env_id: int, node: str, tags: list[str]) -> None:
        self.store.tags.unassign(env_id, node, {"tags": tags}, self.author)

    @v1("GET", "/clusters/<int:env_id>/tags_check")
    def tags_check(self, env_id: int) -> dict:
        return self.store.tags.check(env_id).data

    @v1("GET", "/clusters/<int:env_id>/nodes")
    def list_nodes(self, env_id: int) -> list[dict]:
        return self.store.nodes.list(env_id).data

    @v1("GET", "/clusters/<int:env_id>/nodes/<node>")
    def get_node(self, env_id: int, node: str) -> dict:
        return self.store.nodes.get(env_id, node).data

    @v1("POST", "/clusters/<int:env_id>/nodes", body="body")
    def create_node(self, env_id: int, body: dict) -> dict:
        return self.store.nodes.create(env_id, body, self.author).data

    @v1("POST", "/clusters/<int:env_id>/nodes", body="bodies")
    def create_nodes(self, env_id: int, bodies: list[dict]) -> list[dict]:
        return self.store.nodes.create_many(env_id, bodies, self.author).data

    @v1("PATCH", "/clusters/<int:env_id>/nodes/<node>", body="body")
    def update_node(self, env_id: int, node: str, body: dict) -> dict:
        return self.store.nodes.update(env_id, node, body, self.author).data

    @v1("DELETE", "/clusters/<int:env_id>/nodes/<node>")
    def delete_node(self, env_id: int, node: str) -> None:
        self.store.nodes.delete(env_id, node, self.author)

    # -- environment upgrade ---------------------------------------------------------------
    @v1("POST", "/clusters/<int:env_id>/upgrade/clone", body="body")
    def upgrade_clone(self, env_id: int, body: dict) -> dict:
        return self.store.upgrades.clone(env_id, body, self.author).data

    @v1("POST", "/clusters/<int:env_id>/upgrade/assign", body="body")
    def upgrade_assign(self, env_id: int, body: dict) -> list[dict]:
        return self.store.moves.assign(env_id, body, self.author).data

    @v1("POST", "/clusters/<int:env_id>/upgrade/vips")
    def upgrade_vips(self, env_id: int) -> list[dict]:
        return self.store.upgrades.copy_vips(env_id, self.author).data

    @v1("GET", "/clusters/<int:env_id>/upgrade")
    def upgrade_status(self, env_id: int) -> dict:
        return self.store.upgrades.status(env_id).data

    # -- deployment graphs; kind is "release", "plugin" or "cluster" -----------------------
    @v1("GET", "/<kind>s/<int:owner_id>/deployment_graphs")
    def list_graphs(self, kind: str, owner_id: int) -> list[dict]:
        return self.store.graphs.list(kind, owner_id).data

    @v1("GET", "/<kind>s/<int:owner_id>/deployment_graphs/<graph_type>")
    def get_graph(self, kind: str, owner_id: int, graph_type: str) -> dict:
        return self.store.graphs.get(kind, owner_id, graph_type).data

    @v1("POST", "/<kind>s/<int:owner_id>/deployment_graphs/<graph_type>", body="body")
    def create_graph(self, kind: str, owner_id: int, graph_type: str, body: dict) -> dict:
        return self.store.graphs.create(kind, owner_id, graph_type, body, self.author).data

    @v1("PUT", "/<kind>s/<int:owner_id>/deployment_graphs/<graph_type>", body="body")
    def replace_graph(self, kind: str, owner_id: int, graph_type: str, body: dict) -> dict:
        return self.store.graphs.replace(kind, owner_id, graph_type, body, self.author).data

    @v1("DELETE", "/<kind>s/<int:owner_id>/deployment_graphs/<graph_type>")
    def delete_graph(self, kind: str, owner_id: int, graph_type: str) -> None:
        self.store.graphs.delete(kind, owner_id, graph_type, self.author)

    def cluster_tasks(self, env_id: int, graph_type: str, view: str = "merged") -> list[dict]:
        return self.store.graphs.tasks(env_id, graph_type, view).data

    def graph_dot(self, env_id: int, graph_type: str, **filters: Any) -> str:
        return self.store.graphs.dot(env_id, graph_type, **filters).data

    @v1("POST", "/graphs/execute", body="body")
    def execute_graphs(self, body: dict) -> dict:
        """Runs to the end: a background thread would die with this process."""
        return self.store.transactions.execute(body, self.author, background=False).data

    @v1("GET", "/transactions/<int:transaction_id>")
    def get_transaction(self, transaction_id: int) -> dict:
        return self.store.transactions.get(transaction_id).data

    @v1("GET", "/transactions/<int:transaction_id>/nodes/<node>")
    def get_transaction_node(self, transaction_id: int, node: str) -> dict:
        return self.store.transactions.node(transaction_id, node).data

    @v1("GET", "/transactions", query="cluster_id=env_id")
    def list_transactions(self, env_id: int | None = None) -> list[dict]:
        return self.store.transactions.list(env_id).data

    # -- Heat roles and deployment plans (uuids; see docs/plans.md) ------------------------
    @v1("GET", "/roles", query="only_latest")
    def list_roles(self, only_latest: bool = False) -> list[dict]:
        return self.store.plans.list_versions("roles", only_latest).data

    def upload_role(
        self, name: str, content: str, description: str | None = None
    ) -> tuple[dict, bool]:
        """(the version now latest, whether the upload made it)."""
        served, created = self.store.plans.upload("roles", name, content, description, self.author)
        return served.data, created

    @v1("GET", "/plans")
    def list_plans(self) -> list[dict]:
        return self.store.plans.list_plans().data

    @v1("GET", "/plans/<uuid>", query="reveal")
    def get_plan(self, uuid: str, reveal: bool = False) -> dict:
        return self.store.plans.get_plan(uuid, reveal=reveal).data

    @v1("POST", "/plans", body="body")
    def create_plan(self, body: dict) -> dict:
        return self.store.plans.create_plan(body, self.author).data

    @v1("DELETE", "/plans/<uuid>")
    def delete_plan(self, uuid: str) -> None:
        self.store.plans.delete_plan(uuid, self.author)

    @v1("POST", "/plans/<uuid>/roles", body=("uuid=role_uuid",))
    def add_plan_role(self, uuid: str, role_uuid: str) -> dict:
        return self.store.plans.add_role(uuid, {"uuid": role_uuid}, self.author).data

    @v1("DELETE", "/plans/<uuid>/roles/<role_uuid>")
    def remove_plan_role(self, uuid: str, role_uuid: str) -> dict:
        return self.store.plans.remove_role(uuid, role_uuid, self.author).data

    @v1("PATCH", "/plans/<uuid>", body="values")
    def set_plan_values(self, uuid: str, values: list[dict]) -> dict:
        return self.store.plans.set_values(uuid, values, self.author).data

    @v1("GET", "/plans/<uuid>/templates", query="reveal")
    def export_plan(self, uuid: str, reveal: bool = False) -> dict[str, str]:
        return self.store.plans.export(uuid, reveal=reveal).data


def operations() -> dict[str, Callable[..., Any]]:
    """Every operation of `Client` by name (its public methods)."""
    return {
        name: member
        for name, member in vars(Client).items()
        if callable(member) and not name.startswith("_")
    }
