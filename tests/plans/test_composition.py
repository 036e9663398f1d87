"""Plan composition through DeploymentPlanStore, against both drivers.

Adding a role (master template and environment contents), the same role twice, unknown ids,
removing a role, two roles and two versions of one role side by side, setting values (all or
nothing).
"""

from __future__ import annotations

import threading

import pytest

from gitstore.errors import Conflict, InvalidInput
from gitstore.plans import UnknownUUID

from .conftest import COMPUTE, COMPUTE_V2, CONTROLLER

MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def plan_and_roles(stores):
    plan = stores.plans.create("overcloud")
    compute = stores.roles.create("compute", COMPUTE)
    controller = stores.roles.create("controller", CONTROLLER)
    return plan, compute, controller


def test_add_role_composes_the_master_template(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    plan = stores.plans.add_role(plan.uuid, compute.uuid)
    master = plan.master_template.document
    assert list(master["parameters"]) == [
        "compute-1::Image",
        "compute-1::Flavor",
        "compute-1::NovaPassword",
        "compute-1::count",
        "compute-1::removal_policies",
    ]
    assert master["parameters"]["compute-1::Flavor"] == {
        "type": "string",
        "constraints": [{"allowed_values": ["baremetal", "m1.large"]}],
    }
    assert master["parameters"]["compute-1::NovaPassword"]["hidden"] is True
    assert master["parameters"]["compute-1::count"]["type"] == "number"
    assert master["parameters"]["compute-1::removal_policies"]["type"] == "json"
    assert master["resources"] == {
        "compute-1-servers": {
            "type": "OS::Heat::ResourceGroup",
            "properties": {
                "count": {"get_param": "compute-1::count"},
                "removal_policies": {"get_param": "compute-1::removal_policies"},
                "resource_def": {
                    "type": "Tuskar::compute-1",
                    "properties": {
                        "Image": {"get_param": "compute-1::Image"},
                        "Flavor": {"get_param": "compute-1::Flavor"},
                        "NovaPassword": {"get_param": "compute-1::NovaPassword"},
                    },
                },
            },
        }
    }
    assert master["outputs"] == {
        "compute-1::address": {
            "description": "The node's address",
            "value": {"get_attr": ["compute-1-servers", "address"]},
        }
    }


def test_add_role_composes_the_environment(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    plan = stores.plans.add_role(plan.uuid, compute.uuid)
    assert plan.environment_file.document == {
        "parameters": {
            "compute-1::Image": "overcloud-full",
            "compute-1::count": 1,
            "compute-1::removal_policies": [],
        },
        "resource_registry": {"Tuskar::compute-1": "provider-compute-1.yaml"},
    }
    assert [r.entity() for r in plan.roles] == [
        {"uuid": compute.uuid, "name": "compute", "version": 1}
    ]
    assert stores.plans.retrieve(plan.uuid) == plan


def test_plan_parameters_view(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    plan = stores.plans.add_role(plan.uuid, compute.uuid)
    image = next(p for p in plan.parameters if p["name"] == "compute-1::Image")
    assert image == {
        "name": "compute-1::Image",
        "label": "Image",
        "default": "overcloud-full",
        "description": "Glance image of the node",
        "hidden": False,
        "value": "overcloud-full",
        "constraints": [],
        "parameter_type": "string",
    }


def test_the_same_role_twice_is_a_conflict(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    added = stores.plans.add_role(plan.uuid, compute.uuid)
    with pytest.raises(Conflict) as caught:
        stores.plans.add_role(plan.uuid, compute.uuid)
    assert "compute-1" in caught.value.message
    assert stores.plans.retrieve(plan.uuid) == added


def test_unknown_plan_or_role(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    with pytest.raises(UnknownUUID):
        stores.plans.add_role(MISSING, compute.uuid)
    with pytest.raises(UnknownUUID) as caught:
        stores.plans.add_role(plan.uuid, MISSING)
    assert "role" in caught.value.message
    with pytest.raises(UnknownUUID):
        stores.plans.add_role(plan.uuid, plan.uuid)  # a plan is not a role
    with pytest.raises(UnknownUUID):
        stores.plans.remove_role(plan.uuid, MISSING)
    assert stores.plans.retrieve(plan.uuid) == plan


def test_remove_role_removes_exactly_what_it_added(stores, plan_and_roles):
    plan, compute, controller = plan_and_roles
    with_controller = stores.plans.add_role(plan.uuid, controller.uuid)
    stores.plans.add_role(plan.uuid, compute.uuid)
    removed = stores.plans.remove_role(plan.uuid, compute.uuid)
    assert removed.master_template.document == with_controller.master_template.document
    assert removed.environment_file.document == with_controller.environment_file.document
    assert removed.roles == with_controller.roles
    # Removing a role the plan does not hold changes nothing and is no error.
    again = stores.plans.remove_role(plan.uuid, compute.uuid)
    assert again == removed and not again.revision.changed


def test_two_versions_of_one_role_do_not_collide(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    compute2 = stores.roles.update(compute.uuid, COMPUTE_V2)
    stores.plans.add_role(plan.uuid, compute.uuid)
    plan = stores.plans.add_role(plan.uuid, compute2.uuid)
    master, env = plan.master_template.document, plan.environment_file.document
    assert {"compute-1-servers", "compute-2-servers"} == set(master["resources"])
    assert "compute-2::Debug" in master["parameters"]
    assert "compute-1::Debug" not in master["parameters"]
    assert env["resource_registry"] == {
        "Tuskar::compute-1": "provider-compute-1.yaml",
        "Tuskar::compute-2": "provider-compute-2.yaml",
    }
    plan = stores.plans.remove_role(plan.uuid, compute.uuid)
    assert set(plan.master_template.document["resources"]) == {"compute-2-servers"}
    assert all(not n.startswith("compute-1::") for n in plan.master_template.parameters)
    assert [r.version for r in plan.roles] == [2]


def test_set_values(stores, plan_and_roles):
    plan, compute, controller = plan_and_roles
    stores.plans.add_role(plan.uuid, compute.uuid)
    stores.plans.add_role(plan.uuid, controller.uuid)
    plan = stores.plans.set_values(plan.uuid, {"compute-1::count": 3, "controller-1::VipCount": 4})
    values = {p["name"]: p["value"] for p in plan.parameters}
    assert values["compute-1::count"] == 3 and values["controller-1::VipCount"] == 4
    assert values["controller-1::count"] == 1  # the other role is untouched


def test_set_values_is_all_or_nothing_and_names_every_unknown(stores, plan_and_roles):
    plan, compute, _ = plan_and_roles
    plan = stores.plans.add_role(plan.uuid, compute.uuid)
    with pytest.raises(InvalidInput) as caught:
        stores.plans.set_values(plan.uuid, {"compute-1::count": 5, "nope": 1, "compute-1::Nope": 2})
    assert "nope" in caught.value.message and "compute-1::Nope" in caught.value.message
    assert [e["key"] for e in caught.value.errors] == ["nope", "compute-1::Nope"]
    assert stores.plans.retrieve(plan.uuid) == plan


def test_a_role_that_declares_count_cannot_join_a_plan(stores):
    plan = stores.plans.create("overcloud")
    role = stores.roles.create("odd", CONTROLLER.replace("  VipCount:", "  count:"))
    with pytest.raises(InvalidInput) as caught:
        stores.plans.add_role(plan.uuid, role.uuid)
    assert "count" in caught.value.message


def test_concurrent_writers_lose_nothing(stores):
    """Roles added from several threads at once all land (a lost race is run again)."""
    plan = stores.plans.create("overcloud")
    roles = [stores.roles.create(f"role{i}", CONTROLLER) for i in range(6)]
    failures = []

    def add(role_uuid: str) -> None:
        try:
            stores.plans.add_role(plan.uuid, role_uuid)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=add, args=(role.uuid,)) for role in roles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    held = stores.plans.retrieve(plan.uuid)
    assert sorted(r.name for r in held.roles) == [f"role{i}" for i in range(6)]
    registry = held.environment_file.resource_registry
    assert set(registry) == {f"Tuskar::role{i}-1" for i in range(6)}
