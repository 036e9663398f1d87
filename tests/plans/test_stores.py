"""The stores' contract, run against both drivers (the catalog repository and memory).

The seed's behaviours: versioned create, duplicate names, update makes a version (latest + 1),
lookups and their errors, only_latest, isolation between stores, identical reloads, reads at an
earlier revision, environment files, and plans with their cascade delete.
"""

from __future__ import annotations

import pytest

from gitstore.errors import Conflict, InvalidInput, NotFound, UnknownRevision
from gitstore.plans import NameAlreadyUsed, Role, UnknownName, UnknownUUID, UnknownVersion
from gitstore.plans.drivers import ROLE

from .conftest import COMPUTE, COMPUTE_V2, CONTROLLER

MISSING = "00000000-0000-4000-8000-000000000000"


# -- versioned stores ----------------------------------------------------------------------------
def test_create_makes_version_1_and_keeps_the_content_verbatim(stores):
    role = stores.roles.create("compute", COMPUTE, "Compute nodes")
    assert isinstance(role, Role)
    assert (role.name, role.version, role.description) == ("compute", 1, "Compute nodes")
    assert role.content == COMPUTE  # comments and layout kept
    assert role.created_at and role.updated_at is None
    assert set(role.parameters) == {"Image", "Flavor", "NovaPassword"}
    assert role.revision.changed
    assert stores.roles.retrieve(role.uuid) == role


def test_an_existing_name_is_name_already_used(stores):
    stores.roles.create("compute", COMPUTE)
    with pytest.raises(NameAlreadyUsed) as caught:
        stores.roles.create("compute", CONTROLLER)
    assert isinstance(caught.value, Conflict) and "compute" in caught.value.message
    assert [r.version for r in stores.roles.list()] == [1]


def test_update_makes_the_next_version_and_keeps_the_old_one(stores):
    first = stores.roles.create("compute", COMPUTE, "v1")
    second = stores.roles.update(first.uuid, COMPUTE_V2)
    assert second.uuid != first.uuid
    assert (second.name, second.version, second.description) == ("compute", 2, "v1")
    assert "Debug" in second.parameters
    assert stores.roles.retrieve(first.uuid).content == COMPUTE
    # Updating through an old version's uuid still makes latest + 1.
    third = stores.roles.update(first.uuid, COMPUTE_V2 + "# three\n", "v3")
    assert (third.version, third.description) == (3, "v3")


def test_identical_content_makes_no_new_version(stores):
    first = stores.roles.create("compute", COMPUTE)
    again = stores.roles.update(first.uuid, COMPUTE)
    assert again == first and not again.revision.changed
    assert again.revision.version == first.revision.version
    second = stores.roles.update(first.uuid, COMPUTE_V2)
    assert stores.roles.update(first.uuid, COMPUTE_V2) == second  # the latest, not version 1
    assert [r.version for r in stores.roles.list()] == [1, 2]


def test_retrieve_by_name_latest_or_version_and_its_errors(stores):
    first = stores.roles.create("compute", COMPUTE)
    second = stores.roles.update(first.uuid, COMPUTE_V2)
    assert stores.roles.retrieve_by_name("compute") == second
    assert stores.roles.retrieve_by_name("compute", 1) == first
    with pytest.raises(UnknownName):
        stores.roles.retrieve_by_name("storage")
    with pytest.raises(UnknownVersion) as caught:
        stores.roles.retrieve_by_name("compute", 3)
    assert isinstance(caught.value, NotFound) and "3" in caught.value.message


@pytest.mark.parametrize("uuid", [MISSING, "not-a-uuid", "../../etc"])
def test_unknown_uuids(stores, uuid):
    stores.roles.create("compute", COMPUTE)
    with pytest.raises(UnknownUUID):
        stores.roles.retrieve(uuid)
    with pytest.raises(UnknownUUID):
        stores.roles.update(uuid, COMPUTE_V2)
    with pytest.raises(UnknownUUID):
        stores.roles.delete(uuid)


def test_list_every_version_or_only_the_latest(stores):
    compute = stores.roles.create("compute", COMPUTE)
    stores.roles.update(compute.uuid, COMPUTE_V2)
    stores.roles.create("controller", CONTROLLER)
    assert [(r.name, r.version) for r in stores.roles.list()] == [
        ("compute", 1),
        ("compute", 2),
        ("controller", 1),
    ]
    assert [(r.name, r.version) for r in stores.roles.list(only_latest=True)] == [
        ("compute", 2),
        ("controller", 1),
    ]


def test_stores_are_isolated(stores):
    template = stores.templates.create("compute", COMPUTE)
    assert stores.roles.list() == []
    with pytest.raises(UnknownUUID):
        stores.roles.retrieve(template.uuid)
    role = stores.roles.create("compute", CONTROLLER)  # the same name in another store
    assert stores.templates.retrieve_by_name("compute").content == COMPUTE
    assert stores.roles.retrieve_by_name("compute") == role


def test_delete_removes_one_version(stores):
    first = stores.roles.create("compute", COMPUTE)
    second = stores.roles.update(first.uuid, COMPUTE_V2)
    stores.roles.delete(first.uuid)
    assert stores.roles.list() == [second]
    stores.roles.delete(second.uuid)
    assert stores.roles.list() == []
    with pytest.raises(UnknownName):
        stores.roles.retrieve_by_name("compute")


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("", "content"),
        ("just: [a, mapping", "does not parse"),
        ("- a list\n", "mapping"),
        ("parameters: {}\n", "heat_template_version"),
        ("heat_template_version: 2015-04-30\nparameters:\n  P: {default: 1}\n", "no type"),
        ("heat_template_version: 2015-04-30\nparameters: [a]\n", "parameters must be a mapping"),
        (
            "heat_template_version: 2015-04-30\nparameters:\n  a::b: {type: string}\n",
            "parameter name 'a::b'",
        ),
    ],
)
def test_content_that_is_not_a_heat_template_is_refused(stores, content, fragment):
    with pytest.raises(InvalidInput) as caught:
        stores.roles.create("compute", content)
    assert fragment in caught.value.message
    assert stores.roles.list() == []


@pytest.mark.parametrize("name", ["", "a/b", "..", ".hidden", "with space"])
def test_bad_names_are_refused(stores, name):
    with pytest.raises(InvalidInput):
        stores.roles.create(name, COMPUTE)


def test_reads_at_an_earlier_revision(stores):
    first = stores.roles.create("compute", COMPUTE)
    stores.roles.update(first.uuid, COMPUTE_V2)
    at_first = first.revision.pin
    assert [r.version for r in stores.roles.list(at=at_first)] == [1]
    assert stores.roles.retrieve_by_name("compute", at=at_first) == first
    with pytest.raises(UnknownRevision):
        stores.roles.list(at="999")


def test_a_failing_change_stores_nothing(stores):
    role = stores.roles.create("compute", COMPUTE)

    def change(objects):
        objects.remove(ROLE, role.uuid)
        raise Conflict("changed my mind")

    with pytest.raises(Conflict):
        stores.driver.transact(change, "nothing")
    assert stores.roles.list() == [role]
    assert stores.driver.revision().version == role.revision.version


# -- environment files ----------------------------------------------------------------------------
def test_environment_files(stores):
    env = stores.environments.create("parameters:\n  A: 1\nresource_registry:\n  X: x.yaml\n")
    assert env.parameters == {"A": 1} and env.resource_registry == {"X": "x.yaml"}
    updated = stores.environments.update(env.uuid, "parameters:\n  A: 2\n")
    assert updated.uuid == env.uuid and updated.parameters == {"A": 2} and updated.updated_at
    assert stores.environments.list() == [updated]
    with pytest.raises(InvalidInput):
        stores.environments.update(env.uuid, "parameters: [1]\n")
    stores.environments.delete(env.uuid)
    with pytest.raises(UnknownUUID):
        stores.environments.retrieve(env.uuid)


# -- plans ----------------------------------------------------------------------------------------
def test_plan_create_makes_an_empty_master_template_and_environment(stores):
    plan = stores.plans.create("overcloud", "The overcloud")
    assert (plan.name, plan.description, plan.roles, plan.parameters) == (
        "overcloud",
        "The overcloud",
        (),
        [],
    )
    master = plan.master_template.document
    assert master["heat_template_version"] and master["description"] == "The overcloud"
    assert master["parameters"] == master["resources"] == {}
    assert plan.environment_file.document == {"parameters": {}, "resource_registry": {}}
    assert stores.plans.retrieve(plan.uuid) == plan
    assert stores.plans.retrieve_by_name("overcloud") == plan
    assert stores.plans.list() == [plan]


def test_plan_names_are_unique(stores):
    stores.plans.create("overcloud")
    with pytest.raises(NameAlreadyUsed):
        stores.plans.create("overcloud")


def test_plan_delete_removes_its_template_and_environment(stores):
    plan = stores.plans.create("overcloud")
    role = stores.roles.create("compute", COMPUTE)
    stores.plans.add_role(plan.uuid, role.uuid)
    stores.plans.delete(plan.uuid)
    assert stores.plans.list() == []
    with pytest.raises(UnknownUUID):
        stores.plans.retrieve(plan.uuid)
    stores.roles.delete(role.uuid)  # no plan holds it any more


def test_a_role_in_a_plan_cannot_be_deleted(stores):
    plan = stores.plans.create("overcloud")
    role = stores.roles.create("compute", COMPUTE)
    stores.plans.add_role(plan.uuid, role.uuid)
    with pytest.raises(Conflict) as caught:
        stores.roles.delete(role.uuid)
    assert "overcloud" in caught.value.message
    assert stores.roles.retrieve(role.uuid) == role


def test_plan_master_template_and_environment_can_be_replaced(stores):
    plan = stores.plans.create("overcloud")
    replaced = stores.plans.update_environment(plan.uuid, "parameters: {A: 1}\n")
    assert replaced.environment_file.parameters == {"A": 1}
    assert replaced.environment_file.uuid == plan.environment_file.uuid
    replaced = stores.plans.update_master_template(plan.uuid, COMPUTE)
    assert "Image" in replaced.master_template.parameters
    # The stored file keeps the key order of the file it replaced: compare documents.
    stored = stores.plans.retrieve(plan.uuid)
    assert stored.master_template.document == replaced.master_template.document


# -- the driver interface itself ---------------------------------------------------------------
def test_the_driver_speaks_object_dictionaries(stores):
    driver = stores.driver
    created = driver.create(ROLE, {"name": "r", "content": "c1", "description": None})
    record = created.data
    assert (record["name"], record["version"], record["content"]) == ("r", 1, "c1")
    assert driver.retrieve(ROLE, record["uuid"]).data == record
    newer = driver.update(ROLE, record["uuid"], {"content": "c2"}).data
    assert (newer["version"], newer["content"]) == (2, "c2")
    assert driver.retrieve_by_name(ROLE, "r").data == newer
    assert driver.retrieve_by_name(ROLE, "r", 1).data == record
    assert [r["version"] for r in driver.list(ROLE).data] == [1, 2]
    assert [r["version"] for r in driver.list(ROLE, only_latest=True).data] == [2]
    assert driver.list(ROLE, at=created.revision.pin).data == [record]
    driver.delete(ROLE, newer["uuid"])
    assert driver.list(ROLE).data == [record]
    assert driver.view().revision.version == driver.revision().version
