"""Heat documents of a deployment plan: checking role templates and composing a plan. Pure.

A plan is a master template (`plan.yaml`) and an environment (`environment.yaml`). Adding role N
at version V puts everything of the role under the namespace `N-V`, so two versions of one role
never collide (the version is part of every name; the reference implementation dropped it from
the group id):

- master parameters `N-V::P` for each role parameter P (its whole definition kept: type,
  default, constraints, label, hidden, description), plus `N-V::count` and
  `N-V::removal_policies`;
- a resource `N-V-servers` of type `OS::Heat::ResourceGroup` whose `resource_def` has type
  `Tuskar::N-V` and passes each P as `{get_param: N-V::P}`;
- master outputs `N-V::O` for each role output O (the group's list of the members' values);
- environment `parameters` holding each default, and the registry entry
  `Tuskar::N-V: provider-N-V.yaml`.

Every function returns new documents and never changes its inputs (they may be shared, cached
parses of stored blobs).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from gitstore.errors import Conflict, InvalidInput

HEAT_TEMPLATE_VERSION = "2015-04-30"
RESOURCE_GROUP = "OS::Heat::ResourceGroup"
SEPARATOR = "::"
COUNT = "count"
REMOVAL_POLICIES = "removal_policies"
#: What a masked hidden value reads as; sent back in a write it means "unchanged".
MASK = "******"
#: Role parameter names become `N-V::P` names in plans, headers and key paths: keep them plain.
_PARAMETER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_TEMPLATE_KEYS = ("heat_template_version", "HeatTemplateFormatVersion", "AWSTemplateFormatVersion")


# -- names -----------------------------------------------------------------------------------
def namespace(name: str, version: int) -> str:
    """`compute-2`: the prefix of everything role `name` at `version` adds to a plan."""
    return f"{name}-{version}"


def provider_file(ns: str) -> str:
    return f"provider-{ns}.yaml"


def resource_type(ns: str) -> str:
    return f"Tuskar::{ns}"


def group_id(ns: str) -> str:
    return f"{ns}-servers"


def qualified(ns: str, name: str) -> str:
    return f"{ns}{SEPARATOR}{name}"


# -- checking uploaded templates ---------------------------------------------------------------
def check_template(doc: Any, label: str) -> dict:
    """`doc` if it reads as a Heat template; InvalidInput naming the bad part otherwise."""
    if not isinstance(doc, dict):
        raise InvalidInput(f"{label}: a Heat template must be a mapping", key="content")
    if not any(key in doc for key in _TEMPLATE_KEYS):
        raise InvalidInput(
            f"{label}: not a Heat template (no heat_template_version)", key="content"
        )
    for section in ("parameters", "resources", "outputs"):
        _check_section(doc, section, label)
    for name, spec in (doc.get("parameters") or {}).items():
        if not _PARAMETER.match(name):
            raise InvalidInput(
                f"{label}: parameter name {name!r} may contain only letters, "
                "digits, '_', '.' and '-'",
                key="content",
            )
        if "type" not in spec:
            raise InvalidInput(f"{label}: parameter {name!r} has no type", key="content")
    return doc


def _check_section(doc: dict, section: str, label: str) -> None:
    value = doc.get(section)
    if value is None:
        return
    if not isinstance(value, dict):
        raise InvalidInput(f"{label}: {section} must be a mapping", key="content")
    for name, spec in value.items():
        if not isinstance(name, str) or not isinstance(spec, dict):
            raise InvalidInput(
                f"{label}: {section} entry {name!r} must be a named mapping", key="content"
            )


# -- an empty plan ---------------------------------------------------------------------------
def empty_master(description: str | None = None) -> dict:
    """The master template of a plan without roles."""
    master: dict[str, Any] = {"heat_template_version": HEAT_TEMPLATE_VERSION}
    if description:
        master["description"] = description
    master.update(parameters={}, resources={}, outputs={})
    return master


def empty_environment() -> dict:
    return {"parameters": {}, "resource_registry": {}}


# -- composition -----------------------------------------------------------------------------
def has_role(environment: Mapping, ns: str) -> bool:
    return resource_type(ns) in (environment.get("resource_registry") or {})


def add_role(master: Mapping, environment: Mapping, ns: str, role: Mapping) -> tuple[dict, dict]:
    """The plan with the role template `role` added under namespace `ns`; Conflict if present."""
    if has_role(environment, ns):
        raise Conflict(f"role {ns} is already in the plan", key="uuid")
    role_parameters = role.get("parameters") or {}
    for reserved in (COUNT, REMOVAL_POLICIES):
        if reserved in role_parameters:
            raise InvalidInput(
                f"role {ns} declares parameter {reserved!r}, which the plan uses "
                "for its resource group",
                key="uuid",
            )
    plan, env = copy.deepcopy(dict(master)), copy.deepcopy(dict(environment))
    parameters = plan.setdefault("parameters", {})
    values = env.setdefault("parameters", {})
    for name, spec in role_parameters.items():
        parameters[qualified(ns, name)] = copy.deepcopy(spec)
        if "default" in spec:
            values[qualified(ns, name)] = copy.deepcopy(spec["default"])
    parameters.update(_group_parameters(ns))
    values.update({qualified(ns, COUNT): 1, qualified(ns, REMOVAL_POLICIES): []})
    plan.setdefault("resources", {})[group_id(ns)] = _group(ns, role_parameters)
    outputs = plan.setdefault("outputs", {})
    for name, spec in (role.get("outputs") or {}).items():
        outputs[qualified(ns, name)] = _output(ns, name, spec)
    env.setdefault("resource_registry", {})[resource_type(ns)] = provider_file(ns)
    return plan, env


def _group_parameters(ns: str) -> dict:
    return {
        qualified(ns, COUNT): {
            "type": "number",
            "default": 1,
            "label": f"{ns} count",
            "description": f"How many {ns} servers to deploy.",
            "constraints": [{"range": {"min": 0}}],
        },
        qualified(ns, REMOVAL_POLICIES): {
            "type": "json",
            "default": [],
            "label": f"{ns} removal policies",
            "description": f"Which {ns} servers to remove first when scaling down.",
        },
    }


def _group(ns: str, role_parameters: Mapping) -> dict:
    passed = {name: {"get_param": qualified(ns, name)} for name in role_parameters}
    return {
        "type": RESOURCE_GROUP,
        "properties": {
            "count": {"get_param": qualified(ns, COUNT)},
            "removal_policies": {"get_param": qualified(ns, REMOVAL_POLICIES)},
            "resource_def": {"type": resource_type(ns), "properties": passed},
        },
    }


def _output(ns: str, name: str, spec: Mapping) -> dict:
    output: dict[str, Any] = {}
    if spec.get("description"):
        output["description"] = spec["description"]
    output["value"] = {"get_attr": [group_id(ns), name]}
    return output


def remove_role(master: Mapping, environment: Mapping, ns: str) -> tuple[dict, dict]:
    """The plan without anything of namespace `ns` (unchanged if the role is not in it)."""
    prefix = qualified(ns, "")

    def without(section: Any, keep) -> dict:
        return {k: v for k, v in (section or {}).items() if keep(k)}

    master, environment = dict(master), dict(environment)
    master["parameters"] = without(master.get("parameters"), lambda k: not k.startswith(prefix))
    master["resources"] = without(master.get("resources"), lambda k: k != group_id(ns))
    master["outputs"] = without(master.get("outputs"), lambda k: not k.startswith(prefix))
    environment["parameters"] = without(
        environment.get("parameters"), lambda k: not k.startswith(prefix)
    )
    environment["resource_registry"] = without(
        environment.get("resource_registry"), lambda k: k != resource_type(ns)
    )
    return copy.deepcopy(master), copy.deepcopy(environment)


def set_values(master: Mapping, environment: Mapping, values: Mapping[str, Any]) -> dict:
    """The environment with `values` set, all or nothing.

    Any name the master template does not declare is an InvalidInput that lists every unknown
    name. The mask sent back for a hidden parameter leaves its value as it is.
    """
    declared = master.get("parameters") or {}
    unknown = [name for name in values if name not in declared]
    if unknown:
        raise InvalidInput(
            f"unknown plan parameter{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            key="name",
            errors=[
                {"key": name, "message": f"plan has no parameter {name!r}"} for name in unknown
            ],
        )
    env = copy.deepcopy(dict(environment))
    current = env.setdefault("parameters", {})
    for name, value in values.items():
        if value == MASK and declared[name].get("hidden"):
            continue
        current[name] = copy.deepcopy(value)
    return env


# -- reading a plan ----------------------------------------------------------------------------
#: What an exported environment holds for a parameter that has no value yet.
UNSET = ""


def with_every_parameter(master: Mapping, environment: Mapping) -> dict:
    """`environment` whose `parameters` list every parameter of the master template (every
    role's), in its order: the value set, else empty, so an operator sees what to fill in (as
    Tuskar's plan environment did). A hidden value stays as the environment shows it (masked
    unless revealed)."""
    values = environment.get("parameters") or {}
    declared = master.get("parameters") or {}
    parameters = {name: values.get(name, UNSET) for name in declared}
    parameters.update((name, value) for name, value in values.items() if name not in declared)
    return {**environment, "parameters": parameters}


def hidden_names(master: Mapping) -> list[str]:
    """The master parameters marked `hidden: true`."""
    return [
        name
        for name, spec in (master.get("parameters") or {}).items()
        if isinstance(spec, dict) and spec.get("hidden") is True
    ]


def plan_parameters(master: Mapping, environment: Mapping) -> list[dict]:
    """Each master parameter as the API shows it, its value from the environment."""
    values = environment.get("parameters") or {}
    found = []
    for name, spec in (master.get("parameters") or {}).items():
        found.append(
            {
                "name": name,
                "label": spec.get("label"),
                "default": spec.get("default"),
                "description": spec.get("description"),
                "hidden": bool(spec.get("hidden", False)),
                "value": values.get(name),
                "constraints": spec.get("constraints") or [],
                "parameter_type": spec.get("type"),
            }
        )
    return found
