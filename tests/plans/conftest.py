"""Fixtures of the plan tests: Heat role templates, and the stores over either driver."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gitstore.plans import (
    DeploymentPlanStore,
    Driver,
    EnvironmentFileStore,
    GitDriver,
    MemoryDriver,
    RoleStore,
    TemplateStore,
)

COMPUTE = """\
heat_template_version: 2015-04-30
description: A compute node  # kept byte for byte
parameters:
  Image:
    type: string
    default: overcloud-full
    label: Image
    description: Glance image of the node
  Flavor:
    type: string
    constraints:
      - allowed_values: [baremetal, m1.large]
  NovaPassword:
    type: string
    hidden: true
    description: The nova service password
resources:
  server:
    type: OS::Nova::Server
    properties:
      image: {get_param: Image}
      flavor: {get_param: Flavor}
      metadata:
        password: {get_param: NovaPassword}
outputs:
  address:
    description: The node's address
    value: {get_attr: [server, first_address]}
"""

CONTROLLER = """\
heat_template_version: 2015-04-30
description: A controller node
parameters:
  Image:
    type: string
    default: overcloud-full
  AdminPassword:
    type: string
    hidden: true
    default: changeme
  VipCount:
    type: number
    default: 2
resources:
  server:
    type: OS::Nova::Server
    properties:
      image: {get_param: Image}
      metadata:
        admin: {get_param: AdminPassword}
        vips: {get_param: VipCount}
"""

#: A second compute version: one parameter more.
COMPUTE_V2 = COMPUTE.replace(
    "resources:\n", "  Debug:\n    type: boolean\n    default: false\nresources:\n", 1
)


@dataclass
class Stores:
    driver: Driver
    templates: TemplateStore
    roles: RoleStore
    environments: EnvironmentFileStore
    plans: DeploymentPlanStore


@pytest.fixture(params=["git", "memory"])
def stores(request, tmp_path) -> Stores:
    """The four stores over one driver: the catalog repository of a real store, or memory."""
    if request.param == "git":
        from gitstore import Store

        store = Store.init(tmp_path / "store")
        driver: Driver = GitDriver(store.repos, store.secrets)
    else:
        driver = MemoryDriver()
    return Stores(
        driver,
        TemplateStore(driver),
        RoleStore(driver),
        EnvironmentFileStore(driver),
        DeploymentPlanStore(driver),
    )
