"""The domain models: Template, Role, EnvironmentFile, DeploymentPlan, and a Revision.

Models are what the stores return. They know nothing of storage: a driver hands the stores plain
object dictionaries (records) and the stores build models from them. `parameters`,
`outputs` and `resource_registry` are derived from the Heat content on demand.

Each model also names the `revision` of the catalog it was read at or written in (not part of
its equality: the same object read at two commits is the same object).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gitstore import yamlio
from gitstore.plans import heat


@dataclass(frozen=True)
class Revision:
    """Where a read or write happened: a catalog commit (None in memory) and its version."""

    commit: str | None
    version: int
    changed: bool = False

    @property
    def pin(self) -> str | int:
        """What reads the same revision again, whatever was written since."""
        return self.commit or self.version


@dataclass(frozen=True)
class Template:
    """A named, versioned Heat template."""

    uuid: str
    name: str
    version: int | None
    content: str
    description: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    revision: Revision | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_record(cls, record: dict, revision: Revision | None = None) -> Template:
        return cls(
            uuid=record["uuid"],
            name=record["name"],
            version=record.get("version"),
            content=record["content"],
            description=record.get("description"),
            created_at=record.get("created_at"),
            updated_at=record.get("updated_at"),
            revision=revision,
        )

    @cached_property
    def document(self) -> dict:
        """The parsed content (a mapping)."""
        return yamlio.load_mapping(self.content, path=f"{self.name} version {self.version}")

    @property
    def parameters(self) -> dict[str, dict]:
        """Parameter name -> its Heat definition (type, default, hidden, ...)."""
        return dict(self.document.get("parameters") or {})

    @property
    def outputs(self) -> dict[str, dict]:
        return dict(self.document.get("outputs") or {})

    def entity(self, *, content: bool = True) -> dict:
        """The API's view: the record's fields (the content only when asked)."""
        entity: dict[str, Any] = {
            "uuid": self.uuid,
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        if content:
            entity["content"] = self.content
        return entity


class Role(Template):
    """A Heat template that can be added to deployment plans as a group of servers."""

    @property
    def namespace(self) -> str:
        return heat.namespace(self.name, self.version or 0)


@dataclass(frozen=True)
class EnvironmentFile:
    """A Heat environment: parameter values and a resource registry."""

    uuid: str
    content: str
    created_at: str | None = None
    updated_at: str | None = None
    revision: Revision | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_record(cls, record: dict, revision: Revision | None = None) -> EnvironmentFile:
        return cls(
            uuid=record["uuid"],
            content=record["content"],
            created_at=record.get("created_at"),
            updated_at=record.get("updated_at"),
            revision=revision,
        )

    @cached_property
    def document(self) -> dict:
        return yamlio.load_mapping(self.content, path=f"environment file {self.uuid}")

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.document.get("parameters") or {})

    @property
    def resource_registry(self) -> dict[str, str]:
        return dict(self.document.get("resource_registry") or {})


@dataclass(frozen=True)
class RoleRef:
    """A role version a plan holds."""

    uuid: str
    name: str
    version: int

    @property
    def namespace(self) -> str:
        return heat.namespace(self.name, self.version)

    def entity(self) -> dict:
        return {"uuid": self.uuid, "name": self.name, "version": self.version}


@dataclass(frozen=True)
class DeploymentPlan:
    """A master template and an environment, built up by adding roles."""

    uuid: str
    name: str
    master_template: Template
    environment_file: EnvironmentFile
    roles: tuple[RoleRef, ...] = ()
    description: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    revision: Revision | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_record(cls, record: dict, revision: Revision | None = None) -> DeploymentPlan:
        master, environment = record["master_template"], record["environment_file"]
        template = Template(
            uuid=master["uuid"],
            name=record["name"],
            version=None,
            content=_text(master["document"]),
            created_at=master.get("created_at"),
            updated_at=master.get("updated_at"),
            revision=revision,
        )
        env = EnvironmentFile(
            uuid=environment["uuid"],
            content=_text(environment["document"]),
            created_at=environment.get("created_at"),
            updated_at=environment.get("updated_at"),
            revision=revision,
        )
        return cls(
            uuid=record["uuid"],
            name=record["name"],
            master_template=template,
            environment_file=env,
            roles=tuple(_role_ref(r) for r in record["roles"]),
            description=record.get("description"),
            created_at=record.get("created_at"),
            updated_at=record.get("updated_at"),
            revision=revision,
        )

    @property
    def parameters(self) -> list[dict]:
        """Every master parameter with its value (stored form: hidden values as stored)."""
        return heat.plan_parameters(self.master_template.document, self.environment_file.document)

    @property
    def resource_registry(self) -> dict[str, str]:
        return self.environment_file.resource_registry


def _role_ref(item: dict) -> RoleRef:
    return RoleRef(uuid=item["uuid"], name=item["name"], version=item["version"])


def _text(document: dict) -> str:
    return yamlio.dump(document).decode("utf-8")
