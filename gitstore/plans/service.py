"""The plans service (`Store.plans`): what front ends call for templates, roles and plans.

It parses request bodies, calls the stores and renders their models as the API shows them,
each answer naming the catalog commit it was read at (`Served`). Hidden parameter values are
masked (`******`) unless the caller asks to reveal them; whoever may reveal is decided by the
front end (the REST layer requires the `secrets` role for `?reveal=1`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitstore import yamlio
from gitstore.backend.repository import Author
from gitstore.bodies import Body
from gitstore.errors import InvalidInput, NotFound
from gitstore.plans import heat
from gitstore.plans.drivers import Driver
from gitstore.plans.gitdriver import GitDriver
from gitstore.plans.hidden import ENVIRONMENT, MASTER, Hidden, plan_file
from gitstore.plans.models import DeploymentPlan, Revision, Template
from gitstore.plans.stores import (
    DeploymentPlanStore,
    EnvironmentFileStore,
    RoleStore,
    TemplateStore,
    VersionedStore,
)
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

#: The versioned stores the API serves, by the name of their route family.
FAMILIES = ("templates", "roles")


#: Bodies of the versioned stores (`templates`, `roles`) and of plans, by what they do.
_NEW_VERSION = {
    family: Body(family[:-1], ("name", "content", "description"), required=("name", "content"))
    for family in FAMILIES
}
_NEXT_VERSION = {
    family: Body(family[:-1], ("content", "description"), required=("content",))
    for family in FAMILIES
}
PLAN_BODY = Body("plan", ("name", "description"), required=("name",))
PLAN_ROLE_BODY = Body("plan role", ("uuid",), required=("uuid",))
#: An item of `PATCH /plans/<uuid>`'s list of parameter values.
PARAMETER_BODY = Body("parameter value", ("name", "value"), required=("name", "value"))


def parameter_values(body: Any) -> dict[str, Any]:
    """A PATCH body `[{name, value}, ...]` as {name: value}; every malformed item is named."""
    if not isinstance(body, list):
        raise InvalidInput("body must be a JSON list of {name, value} objects")
    values: dict[str, Any] = {}
    for index, item in enumerate(body):
        item = PARAMETER_BODY.check(item, f"item {index}")
        if not isinstance(item["name"], str) or not item["name"]:
            raise InvalidInput(f"item {index}: name must be a non-empty string", key="name")
        if item["name"] in values:
            raise InvalidInput(f"parameter {item['name']!r} is given twice", key=item["name"])
        values[item["name"]] = item["value"]
    return values


def _served(data: Any, revision: Revision | None, masked: tuple[str, ...] = ()) -> Served:
    if revision is None:
        return Served(data, masked=masked)
    return Served(data, revision.commit, revision.version, masked=masked)


class Plans:
    """Templates, roles and deployment plans of one Store (in its catalog repository)."""

    def __init__(self, repos: Repositories, secrets: Secrets, driver: Driver | None = None) -> None:
        self.driver = driver or GitDriver(repos, secrets)
        self.hidden = Hidden(secrets)
        self.templates = TemplateStore(self.driver)
        self.roles = RoleStore(self.driver)
        self.environment_files = EnvironmentFileStore(self.driver)
        self.deployments = DeploymentPlanStore(self.driver)

    def _family(self, family: str) -> VersionedStore:
        if family not in FAMILIES:
            raise NotFound(f"no versioned store {family!r}; use one of {', '.join(FAMILIES)}")
        return self.roles if family == "roles" else self.templates

    # -- templates and roles ---------------------------------------------------------------
    def list_versions(
        self, family: str, only_latest: bool = False, version: str | None = None
    ) -> Served:
        """Every version (or only each name's latest), without contents."""
        revision = self.driver.revision(version)
        found = self._family(family).list(only_latest, at=revision.pin)
        return _served([item.entity(content=False) for item in found], revision)

    def get_version(self, family: str, uuid: str, version: str | None = None) -> Served:
        item = self._family(family).retrieve(uuid, at=version)
        return _served(item.entity(), item.revision)

    def create_version(self, family: str, body: Any, author: Author | None = None) -> Served:
        """`{name, content, description?}` -> version 1 of a new name."""
        store = self._family(family)
        fields = _NEW_VERSION[family].check(body)
        item = store.create(fields["name"], fields["content"], fields.get("description"), author)
        return _served(item.entity(), item.revision)

    def update_version(
        self, family: str, uuid: str, body: Any, author: Author | None = None
    ) -> tuple[Served, bool]:
        """`{content, description?}` -> (the new version, True), or (the latest, False) when
        the content repeats the latest."""
        store = self._family(family)
        fields = _NEXT_VERSION[family].check(body)
        item = store.update(uuid, fields["content"], fields.get("description"), author)
        return _served(item.entity(), item.revision), bool(item.revision and item.revision.changed)

    def upload(
        self,
        family: str,
        name: str,
        content: str,
        description: str | None = None,
        author: Author | None = None,
    ) -> tuple[Served, bool]:
        """Create `name`, or add a version if it exists (the same content adds none)."""
        store = self._family(family)
        try:
            latest = store.retrieve_by_name(name)
        except NotFound:
            return self.create_version(
                family, {"name": name, "content": content, "description": description}, author
            ), True
        return self.update_version(
            family, latest.uuid, {"content": content, "description": description}, author
        )

    # -- plans -----------------------------------------------------------------------------
    def list_plans(
        self, version: str | None = None, reveal: bool = False, who: str | None = None
    ) -> Served:
        revision = self.driver.revision(version)
        views, masked = [], []
        for plan in self.deployments.list(at=revision.pin):
            view, paths = self._plan_view(plan, reveal, who)
            views.append(view)
            masked += [f"{plan.name}.{path}" for path in paths]
        return _served(views, revision, () if reveal else tuple(masked))

    def get_plan(
        self, uuid: str, version: str | None = None, reveal: bool = False, who: str | None = None
    ) -> Served:
        return self._plan_answer(self.deployments.retrieve(uuid, at=version), reveal, who)

    def create_plan(self, body: Any, author: Author | None = None) -> Served:
        fields = PLAN_BODY.check(body)
        plan = self.deployments.create(fields["name"], fields.get("description"), author)
        return self._plan_answer(plan)

    def delete_plan(self, uuid: str, author: Author | None = None) -> Served:
        return _served(None, self.deployments.delete(uuid, author))

    def add_role(self, uuid: str, body: Any, author: Author | None = None) -> Served:
        """`{uuid}` of a role version -> the plan holding it."""
        role_uuid = PLAN_ROLE_BODY.check(body)["uuid"]
        if not isinstance(role_uuid, str):
            raise InvalidInput("uuid must be a string", key="uuid")
        return self._plan_answer(self.deployments.add_role(uuid, role_uuid, author))

    def remove_role(self, uuid: str, role_uuid: str, author: Author | None = None) -> Served:
        return self._plan_answer(self.deployments.remove_role(uuid, role_uuid, author))

    def set_values(self, uuid: str, body: Any, author: Author | None = None) -> Served:
        plan = self.deployments.set_values(uuid, parameter_values(body), author)
        return self._plan_answer(plan)

    def export(
        self, uuid: str, version: str | None = None, reveal: bool = False, who: str | None = None
    ) -> Served:
        """`{plan.yaml, environment.yaml, provider-N-V.yaml...}`: what `heat stack-create`
        needs, hidden values masked unless `reveal`."""
        plan = self.deployments.retrieve(uuid, at=version)
        master, environment, paths = self._shown(plan, reveal, who, "export")
        environment = heat.with_every_parameter(plan.master_template.document, environment)
        files = {MASTER: _text(master), ENVIRONMENT: _text(environment)}
        for ref in plan.roles:
            files[heat.provider_file(ref.namespace)] = self._role_of(plan, ref.uuid).content
        return _served(files, plan.revision, () if reveal else tuple(paths))

    def _role_of(self, plan: DeploymentPlan, role_uuid: str) -> Template:
        try:
            return self.roles.retrieve(role_uuid, at=plan.revision.pin if plan.revision else None)
        except NotFound:
            raise NotFound(
                f"plan {plan.name} holds role {role_uuid}, which is no longer in "
                "the catalog; remove it from the plan",
                key="uuid",
            ) from None

    # -- hidden values ---------------------------------------------------------------------
    def _shown(
        self, plan: DeploymentPlan, reveal: bool, who: str | None, what: str
    ) -> tuple[dict, dict, list[str]]:
        """The plan's master template and environment as an answer shows them, and the
        `file:dotted.path` of every value masked (or revealed, which is audited)."""
        master_doc = plan.master_template.document
        paths = []
        shown = []
        for file, document in ((MASTER, master_doc), (ENVIRONMENT, plan.environment_file.document)):
            data, found = self.hidden.show(document, plan_file(plan.name, file), master_doc, reveal)
            shown.append(data)
            paths += [f"{file}:{path}" for path in found]
        if reveal:
            commit = plan.revision.commit if plan.revision else None
            self.hidden.record(who, f"plan {plan.name} {what}", commit, paths)
        return shown[0], shown[1], paths

    def _plan_view(
        self, plan: DeploymentPlan, reveal: bool, who: str | None
    ) -> tuple[dict, list[str]]:
        """The API's plan, and the dotted paths (of that view) it masked."""
        master, environment, paths = self._shown(plan, reveal, who, "view")
        view = {
            "uuid": plan.uuid,
            "name": plan.name,
            "description": plan.description,
            "created_at": plan.created_at,
            "updated_at": plan.updated_at,
            "roles": [ref.entity() for ref in plan.roles],
            "parameters": heat.plan_parameters(master, environment),
        }
        return view, [_view_path(path) for path in paths]

    def _plan_answer(
        self, plan: DeploymentPlan, reveal: bool = False, who: str | None = None
    ) -> Served:
        view, masked = self._plan_view(plan, reveal, who)
        return _served(view, plan.revision, () if reveal else tuple(masked))


def _view_path(path: str) -> str:
    """`environment.yaml:parameters.P` -> `parameters.P.value`; the master's paths
    (`plan.yaml:parameters.P.default`) are the view's already."""
    file, _, dotted = path.partition(":")
    return f"{dotted}.value" if file == ENVIRONMENT else dotted


def _text(document: dict) -> str:
    return yamlio.dump(document).decode("utf-8")
