"""`LocalClient`: the `Client` of a store root on this machine, through the `Store` facade."""

from __future__ import annotations

import dataclasses
import getpass
from collections.abc import Iterator
from typing import Any

from cli.client import Address, LevelPairs
from gitstore import Store, limits
from gitstore.backend.repository import Author
from gitstore.configdb.values import Query
from gitstore.served import Served


class LocalClient:
    """A store root on this machine, through the facade."""

    def __init__(self, root: str, author: Author | None = None) -> None:
        self.store = Store(root, local_executor=True)  # the operator's own shell
        limits.configure(root)
        self.store.check()
        self.author = author

    # -- catalog ---------------------------------------------------------------------------
    def list_components(self, version: str | None = None) -> list[dict]:
        return self.store.components.list(version).data

    def get_component(self, component_id: int, version: str | None = None) -> dict:
        return self.store.components.get(component_id, version).data

    def create_component(self, body: dict) -> dict:
        return self.store.components.create(body, self.author).data

    def update_component(self, component_id: int, body: dict) -> dict:
        return self.store.components.update(component_id, body, self.author).data

    def delete_component(self, component_id: int) -> None:
        self.store.components.delete(component_id, self.author)

    def list_definitions(
        self, component_id: int | str | None = None, version: str | None = None
    ) -> list[dict]:
        ref = None if component_id is None else str(component_id)
        return self.store.definitions.list(ref, version).data

    def get_definition(self, definition_id: int, version: str | None = None) -> dict:
        return self.store.definitions.get(definition_id, version).data

    def create_definition(self, body: dict) -> dict:
        return self.store.definitions.create(body, self.author).data

    def update_definition(self, definition_id: int, body: dict) -> dict:
        return self.store.definitions.update(definition_id, body, self.author).data

    def delete_definition(self, definition_id: int) -> None:
        self.store.definitions.delete(definition_id, self.author)

    # -- environments ----------------------------------------------------------------------
    def list_environments(self) -> list[dict]:
        return self.store.environments.list().data

    def get_environment(self, env_id: int, version: str | None = None) -> dict:
        return self.store.environments.get(env_id, version).data

    def create_environment(self, body: dict) -> dict:
        return self.store.environments.create(body, self.author).data

    def update_environment(self, env_id: int, body: dict) -> dict:
        return self.store.environments.update(env_id, body, self.author).data

    def delete_environment(self, env_id: int) -> None:
        self.store.environments.delete(env_id)

    def list_levels(self, env_id: int, version: str | None = None) -> list[dict]:
        return self.store.environments.levels(env_id, version).data

    def get_level(self, env_id: int, name: str, version: str | None = None) -> dict:
        return self.store.environments.level(env_id, name, version).data

    # -- values ----------------------------------------------------------------------------
    def _reader(self) -> str:
        """Who reads, for the secrets audit: the author given, else the local user."""
        return self.author.name if self.author else f"local user {getpass.getuser()}"

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
    ) -> tuple[Any, str]:
        who = self._reader()

        def read_at(version: str | None) -> Served:
            at = dataclasses.replace(query, version=version)
            return self.store.config.read(env_id, list(pairs), resource, "values", at, who)

        result, head = self.store.watch.hold(env_id, index, wait, read_at)
        return result.data, head

    def events(self, env_id: int, since: str | None = None) -> Iterator[dict]:
        yield from (
            event
            for event in self.store.watch.stream(env_id, since, keepalive=60.0)
            if event is not None
        )

    def secret_rules(self, env_id: int) -> dict:
        return self.store.secrets.rules(env_id).data

    def encrypt_secrets(self, env_id: int, path: str, document: dict) -> dict:
        return self.store.secrets.encrypt(env_id, path, document).data

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

    def upload_facts(self, env_id: int, body: dict) -> dict:
        return self.store.facts.upload_body(env_id, body, self.author)

    # -- versions --------------------------------------------------------------------------
    def history(self, env_id, **params):
        return self.store.versions.history(env_id, **params).data

    def diff(self, env_id, source, target=None, *, scope=None, resource=None):
        levels = [scope] if scope else []
        return self.store.versions.diff(
            env_id, source, target, levels=levels, resource=resource
        ).data

    def labels(self, env_id):
        return self.store.versions.labels(env_id).data

    def create_label(self, env_id, body):
        return self.store.versions.create_label(env_id, body, self.author).data

    def revert(self, env_id, body):
        return self.store.versions.revert(env_id, body, self.author).data

    def explain(self, env_id, pairs, resource, key=None, version=None):
        return self.store.versions.explain(env_id, list(pairs), resource, key, version).data

    # -- tags and nodes --------------------------------------------------------------------
    def list_tags(self, kind, owner_id):
        return self.store.tags.list(kind, owner_id).data

    def create_tag(self, kind, owner_id, body):
        return self.store.tags.create(kind, owner_id, body, self.author).data

    def update_tag(self, kind, owner_id, name, body):
        return self.store.tags.update(kind, owner_id, name, body, self.author).data

    def delete_tag(self, kind, owner_id, name):
        self.store.tags.delete(kind, owner_id, name, self.author)

    def assign_tags(self, env_id, node, tags):
        return self.store.tags.assign(env_id, node, {"tags": tags}, self.author).data

    def unassign_tags(self, env_id, node, tags):
        self.store.tags.unassign(env_id, node, {"tags": tags}, self.author)

    def tags_check(self, env_id):
        return self.store.tags.check(env_id).data

    def list_nodes(self, env_id):
        return self.store.nodes.list(env_id).data

    def get_node(self, env_id, node):
        return self.store.nodes.get(env_id, node).data

    def create_node(self, env_id, body):
        return self.store.nodes.create(env_id, body, self.author).data

    def create_nodes(self, env_id, bodies):
        return self.store.nodes.create_many(env_id, bodies, self.author).data

    def update_node(self, env_id, node, body):
        return self.store.nodes.update(env_id, node, body, self.author).data

    def delete_node(self, env_id, node):
        self.store.nodes.delete(env_id, node, self.author)

    # -- environment upgrade ---------------------------------------------------------------
    def upgrade_clone(self, env_id, body):
        return self.store.upgrades.clone(env_id, body, self.author).data

    def upgrade_assign(self, env_id, body):
        return self.store.moves.assign(env_id, body, self.author).data

    def upgrade_vips(self, env_id):
        return self.store.upgrades.copy_vips(env_id, self.author).data

    def upgrade_status(self, env_id):
        return self.store.upgrades.status(env_id).data

    # -- deployment graphs -----------------------------------------------------------------
    def list_graphs(self, kind, owner_id):
        return self.store.graphs.list(kind, owner_id).data

    def get_graph(self, kind, owner_id, graph_type):
        return self.store.graphs.get(kind, owner_id, graph_type).data

    def create_graph(self, kind, owner_id, graph_type, body):
        return self.store.graphs.create(kind, owner_id, graph_type, body, self.author).data

    def replace_graph(self, kind, owner_id, graph_type, body):
        return self.store.graphs.replace(kind, owner_id, graph_type, body, self.author).data

    def delete_graph(self, kind, owner_id, graph_type):
        self.store.graphs.delete(kind, owner_id, graph_type, self.author)

    def cluster_tasks(self, env_id, graph_type, view="merged"):
        return self.store.graphs.tasks(env_id, graph_type, view).data

    def graph_dot(self, env_id, graph_type, **filters):
        return self.store.graphs.dot(env_id, graph_type, **filters).data

    def execute_graphs(self, body):
        """Runs to the end: a background thread would die with this process."""
        return self.store.transactions.execute(body, self.author, background=False).data

    def get_transaction(self, transaction_id):
        return self.store.transactions.get(transaction_id).data

    def get_transaction_node(self, transaction_id, node):
        return self.store.transactions.node(transaction_id, node).data

    def list_transactions(self, env_id=None):
        return self.store.transactions.list(env_id).data

    # -- Heat roles and deployment plans ---------------------------------------------------
    def list_roles(self, only_latest=False):
        return self.store.plans.list_versions("roles", only_latest).data

    def upload_role(self, name, content, description=None):
        """(the version now latest, whether the upload made it)."""
        served, created = self.store.plans.upload("roles", name, content, description, self.author)
        return served.data, created

    def list_plans(self):
        return self.store.plans.list_plans().data

    def get_plan(self, uuid, reveal=False):
        return self.store.plans.get_plan(uuid, reveal=reveal).data

    def create_plan(self, body):
        return self.store.plans.create_plan(body, self.author).data

    def delete_plan(self, uuid):
        self.store.plans.delete_plan(uuid, self.author)

    def add_plan_role(self, uuid, role_uuid):
        return self.store.plans.add_role(uuid, {"uuid": role_uuid}, self.author).data

    def remove_plan_role(self, uuid, role_uuid):
        return self.store.plans.remove_role(uuid, role_uuid, self.author).data

    def set_plan_values(self, uuid, values):
        return self.store.plans.set_values(uuid, values, self.author).data

    def export_plan(self, uuid, reveal=False):
        return self.store.plans.export(uuid, reveal=reveal).data
