"""The stores, with the seed's contract: TemplateStore, RoleStore, EnvironmentFileStore and
DeploymentPlanStore.

A store checks what it is given, asks its driver, and turns records into models. Every write
is one atomic driver transaction (one catalog commit with the git driver); reads take `at`, a
revision of the catalog (None: the latest), and `Revision.pin` reads one again.

Plan composition (add a role, remove it, set values) lives in `DeploymentPlanStore`: each is one
transaction that reads the role and writes the plan, so a plan never names a role version that
a concurrent write removed.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from gitstore import yamlio
from gitstore.backend.repository import Author
from gitstore.errors import Conflict, InvalidInput
from gitstore.names import check_identifier
from gitstore.plans import heat
from gitstore.plans.drivers import (
    ENVIRONMENT,
    PLAN,
    ROLE,
    TEMPLATE,
    Driver,
    Kind,
    Objects,
    Outcome,
    new_uuid,
    now,
)
from gitstore.plans.models import DeploymentPlan, EnvironmentFile, Revision, Role, Template

At = str | int | None
MAX_CONTENT = 4 * 1024 * 1024


def check_description(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput("description must be a string", key="description")
    return value


def check_content(value: Any, label: str) -> dict:
    """Uploaded Heat template text: the parsed template, or InvalidInput naming the problem."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{label}: content must be the template as YAML text", key="content")
    if len(value) > MAX_CONTENT:
        raise InvalidInput(f"{label}: content is larger than {MAX_CONTENT} bytes", key="content")
    return heat.check_template(yamlio.load(value, path=label), label)


class VersionedStore:
    """Named, versioned Heat templates: the contract of TemplateStore and RoleStore."""

    kind: Kind = TEMPLATE
    model: type[Template] = Template

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    def _one(self, outcome: Outcome) -> Template:
        return self.model.from_record(outcome.data, outcome.revision)

    def create(
        self, name: str, content: str, description: str | None = None, author: Author | None = None
    ) -> Template:
        """Version 1 of a new name; NameAlreadyUsed if the name exists."""
        check_identifier(name, "name")
        check_content(content, f"{self.kind.name} {name}")
        record = {"name": name, "description": check_description(description), "content": content}
        return self._one(self._driver.create(self.kind, record, author))

    def update(
        self, uuid: str, content: str, description: str | None = None, author: Author | None = None
    ) -> Template:
        """A new version (latest + 1) of the object's name; the latest if nothing changes."""
        check_content(content, f"{self.kind.name} {uuid}")
        fields = {"content": content, "description": check_description(description)}
        return self._one(self._driver.update(self.kind, uuid, fields, author))

    def retrieve(self, uuid: str, at: At = None) -> Template:
        return self._one(self._driver.retrieve(self.kind, uuid, at))

    def retrieve_by_name(self, name: str, version: int | None = None, at: At = None) -> Template:
        """Version `version` of `name` (the latest when None); UnknownName / UnknownVersion."""
        return self._one(self._driver.retrieve_by_name(self.kind, name, version, at))

    def delete(self, uuid: str, author: Author | None = None) -> Revision:
        return self._driver.delete(self.kind, uuid, author).revision

    def list(self, only_latest: bool = False, at: At = None) -> list[Template]:
        outcome = self._driver.list(self.kind, only_latest, at)
        return [self.model.from_record(r, outcome.revision) for r in outcome.data]


class TemplateStore(VersionedStore):
    """Heat templates, named and versioned."""


class RoleStore(VersionedStore):
    """Roles: templates that plans add as groups of servers."""

    kind = ROLE
    model = Role

    def delete(self, uuid: str, author: Author | None = None) -> Revision:
        """Delete one version; Conflict while a plan holds it (its export would break)."""

        def change(objects: Objects) -> None:
            role = objects.get(ROLE, uuid)
            users = [
                p["name"]
                for p in objects.all(PLAN)
                if any(r["uuid"] == role["uuid"] for r in p["roles"])
            ]
            if users:
                raise Conflict(
                    f"role {role['name']} version {role['version']} is in plan "
                    f"{', '.join(users)}; remove it from the plan first",
                    key="uuid",
                )
            objects.message = f"catalog: delete role {role['name']} version {role['version']}"
            objects.remove(ROLE, role["uuid"])

        return self._driver.transact(change, "catalog: delete role", author)[1]


class EnvironmentFileStore:
    """Heat environment files of no plan: unnamed, unversioned."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    @staticmethod
    def _one(outcome: Outcome) -> EnvironmentFile:
        return EnvironmentFile.from_record(outcome.data, outcome.revision)

    def create(self, content: str, author: Author | None = None) -> EnvironmentFile:
        _check_environment(content)
        return self._one(self._driver.create(ENVIRONMENT, {"content": content}, author))

    def retrieve(self, uuid: str, at: At = None) -> EnvironmentFile:
        return self._one(self._driver.retrieve(ENVIRONMENT, uuid, at))

    def update(self, uuid: str, content: str, author: Author | None = None) -> EnvironmentFile:
        _check_environment(content)
        return self._one(self._driver.update(ENVIRONMENT, uuid, {"content": content}, author))

    def delete(self, uuid: str, author: Author | None = None) -> Revision:
        return self._driver.delete(ENVIRONMENT, uuid, author).revision

    def list(self, at: At = None) -> list[EnvironmentFile]:
        outcome = self._driver.list(ENVIRONMENT, at=at)
        return [EnvironmentFile.from_record(r, outcome.revision) for r in outcome.data]


def _check_environment(content: Any) -> dict:
    if not isinstance(content, str):
        raise InvalidInput("environment file content must be YAML text", key="content")
    document = yamlio.load_mapping(content, path="environment file")
    for section in ("parameters", "parameter_defaults", "resource_registry"):
        if not isinstance(document.get(section) or {}, dict):
            raise InvalidInput(f"environment file: {section} must be a mapping", key="content")
    return document


class DeploymentPlanStore:
    """Deployment plans: named, unversioned; each owns a master template and an environment."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    @staticmethod
    def _one(outcome: Outcome) -> DeploymentPlan:
        return DeploymentPlan.from_record(outcome.data, outcome.revision)

    def create(
        self, name: str, description: str | None = None, author: Author | None = None
    ) -> DeploymentPlan:
        """A plan with an empty master template and environment; NameAlreadyUsed if taken."""
        check_identifier(name, "name")
        check_description(description)
        record: dict[str, Any] = {
            "name": name,
            "description": description,
            "roles": [],
            "master_template": _file(heat.empty_master(description)),
            "environment_file": _file(heat.empty_environment()),
        }
        return self._one(self._driver.create(PLAN, record, author))

    def retrieve(self, uuid: str, at: At = None) -> DeploymentPlan:
        return self._one(self._driver.retrieve(PLAN, uuid, at))

    def retrieve_by_name(self, name: str, at: At = None) -> DeploymentPlan:
        return self._one(self._driver.retrieve_by_name(PLAN, name, at=at))

    def list(self, at: At = None) -> list[DeploymentPlan]:
        outcome = self._driver.list(PLAN, at=at)
        return [DeploymentPlan.from_record(r, outcome.revision) for r in outcome.data]

    def delete(self, uuid: str, author: Author | None = None) -> Revision:
        """Delete the plan, its master template and its environment."""
        return self._driver.delete(PLAN, uuid, author).revision

    def update_master_template(
        self, uuid: str, content: str, author: Author | None = None
    ) -> DeploymentPlan:
        master = check_content(content, "master template")
        return self._compose(
            uuid,
            "replace the master template",
            author,
            lambda plan, objects: (master, _environment(plan), plan["roles"]),
        )

    def update_environment(
        self, uuid: str, content: str, author: Author | None = None
    ) -> DeploymentPlan:
        environment = _check_environment(content)
        return self._compose(
            uuid,
            "replace the environment",
            author,
            lambda plan, objects: (_master(plan), environment, plan["roles"]),
        )

    # -- composition -------------------------------------------------------------------------
    def add_role(self, uuid: str, role_uuid: str, author: Author | None = None) -> DeploymentPlan:
        """Add a role version; Conflict if the plan already holds that version."""

        def compose(plan: dict, objects: Objects) -> tuple[dict, dict, list]:
            role = objects.get(ROLE, role_uuid)
            ns = heat.namespace(role["name"], role["version"])
            if any(r["uuid"] == role["uuid"] for r in plan["roles"]):
                raise Conflict(f"plan {plan['name']} already holds role {ns}", key="uuid")
            document = check_content(role["content"], f"role {ns}")
            objects.message = f"catalog: plan {plan['name']}: add role {ns}"
            master, env = heat.add_role(_master(plan), _environment(plan), ns, document)
            ref = {"uuid": role["uuid"], "name": role["name"], "version": role["version"]}
            return master, env, [*plan["roles"], ref]

        return self._compose(uuid, "add a role", author, compose)

    def remove_role(
        self, uuid: str, role_uuid: str, author: Author | None = None
    ) -> DeploymentPlan:
        """Remove exactly what a role version added; nothing happens if the plan lacks it."""

        def compose(plan: dict, objects: Objects) -> tuple[dict, dict, list]:
            held = [r for r in plan["roles"] if r["uuid"] == role_uuid]
            role = held[0] if held else objects.get(ROLE, role_uuid)
            ns = heat.namespace(role["name"], role["version"])
            objects.message = f"catalog: plan {plan['name']}: remove role {ns}"
            master, env = heat.remove_role(_master(plan), _environment(plan), ns)
            return master, env, [r for r in plan["roles"] if r["uuid"] != role["uuid"]]

        return self._compose(uuid, "remove a role", author, compose)

    def set_values(
        self, uuid: str, values: dict[str, Any], author: Author | None = None
    ) -> DeploymentPlan:
        """Set parameter values, all or nothing (see `heat.set_values`)."""

        def compose(plan: dict, objects: Objects) -> tuple[dict, dict, list]:
            objects.message = (
                f"catalog: plan {plan['name']}: set {', '.join(values) or 'no values'}"
            )
            env = heat.set_values(_master(plan), _environment(plan), values)
            return _master(plan), env, plan["roles"]

        return self._compose(uuid, "set values", author, compose)

    def _compose(self, uuid: str, what: str, author: Author | None, compose) -> DeploymentPlan:
        def change(objects: Objects) -> dict:
            plan = objects.get(PLAN, uuid)
            master, environment, roles = compose(plan, objects)
            updated = _updated(plan, master, environment, roles)
            if updated is not plan:
                objects.put(PLAN, updated)
            return updated

        revision = self._driver.transact(change, f"catalog: plan: {what}", author)[1]
        # Read back what was stored: hidden values are sealed on the way into git.
        plan = self.retrieve(uuid, at=revision.pin)
        return dataclasses.replace(plan, revision=revision)


def _file(document: dict) -> dict:
    return {"uuid": new_uuid(), "created_at": now(), "updated_at": None, "document": document}


def _master(plan: dict) -> dict:
    return plan["master_template"]["document"]


def _environment(plan: dict) -> dict:
    return plan["environment_file"]["document"]


def _updated(plan: dict, master: dict, environment: dict, roles: list) -> dict:
    """The plan record with its new parts, timestamps moved where something changed; the
    same record when nothing did."""
    if (master, environment, roles) == (_master(plan), _environment(plan), plan["roles"]):
        return plan
    stamp = now()
    updated = copy.deepcopy(plan)
    updated.update(roles=copy.deepcopy(roles), updated_at=stamp)
    for key, document in (("master_template", master), ("environment_file", environment)):
        if document != plan[key]["document"]:
            updated[key] = {
                **updated[key],
                "document": copy.deepcopy(document),
                "updated_at": stamp,
            }
    return updated
