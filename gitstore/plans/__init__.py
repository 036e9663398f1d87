"""Heat templates, roles and deployment plans (the TripleO plan storage seed).

See README.md in this folder: models, stores, drivers, composition and the `Plans` service.
"""

from __future__ import annotations

from gitstore.plans import gate  # noqa: F401 - registers the push gate's rule for plans
from gitstore.plans.drivers import Driver, MemoryDriver
from gitstore.plans.errors import NameAlreadyUsed, UnknownName, UnknownUUID, UnknownVersion
from gitstore.plans.gitdriver import GitDriver
from gitstore.plans.models import DeploymentPlan, EnvironmentFile, Revision, Role, Template
from gitstore.plans.service import Plans
from gitstore.plans.stores import (
    DeploymentPlanStore,
    EnvironmentFileStore,
    RoleStore,
    TemplateStore,
)

__all__ = [
    "DeploymentPlan",
    "DeploymentPlanStore",
    "Driver",
    "EnvironmentFile",
    "EnvironmentFileStore",
    "GitDriver",
    "MemoryDriver",
    "NameAlreadyUsed",
    "Plans",
    "Revision",
    "Role",
    "RoleStore",
    "Template",
    "TemplateStore",
    "UnknownName",
    "UnknownUUID",
    "UnknownVersion",
]
