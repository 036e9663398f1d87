"""Node groups, networks and VIPs of an environment (docs/upgrade.md).

    network/networks.yaml   {node_groups: [{name}],
                             networks: [{name, node_group, cidr, gateway, ip_ranges, vlan, meta}]}
    network/vips.yaml       {vips: [{name, network, ip, namespace}]}

Nodes name their addresses by network name (`ip_addresses: {management: 192.168.0.3/24}`), so
a node that moves to another environment keeps its addresses as long as that environment has
networks of the same names.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.errors import InvalidInput
from gitstore.served import Served
from gitstore.upgrade.settings import write_file
from gitstore.validation import TreeCheck

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

NETWORKS = "network/networks.yaml"
VIPS = "network/vips.yaml"
FIELDS = ("node_groups", "networks", "vips")
NETWORK_BODY = Body("network", FIELDS)
NETWORK_ENTRY = Body(
    "network entry", ("name", "node_group", "cidr", "gateway", "ip_ranges", "vlan", "meta")
)
VIP_ENTRY = Body("VIP", ("name", "network", "ip", "namespace"))


# -- shapes -----------------------------------------------------------------------------------
def check_network(body: Any) -> dict:
    """`{node_groups, networks, vips}`, each a list of well-formed, consistent entries."""
    body = NETWORK_BODY.check(body)
    for name in FIELDS:
        if not isinstance(body.get(name, []), list):
            raise InvalidInput(f"network field {name!r} must be a list", key=name)
    groups = _check_groups(body.get("node_groups") or [])
    networks = [
        _check_entry(n, f"networks[{i}]", NETWORK_ENTRY, _NETWORK_CHECKS)
        for i, n in enumerate(body.get("networks") or [])
    ]
    _check_network_refs(networks, groups)
    vips = [
        _check_entry(v, f"vips[{i}]", VIP_ENTRY, _VIP_CHECKS)
        for i, v in enumerate(body.get("vips") or [])
    ]
    _check_vip_refs(vips, {n["name"] for n in networks})
    return {"node_groups": [{"name": g} for g in groups], "networks": networks, "vips": vips}


def _check_groups(groups: list) -> list[str]:
    names = []
    for index, group in enumerate(groups):
        if not isinstance(group, dict) or set(group) != {"name"}:
            raise InvalidInput(
                f"node_groups[{index}] must be an object {{name}}", key="node_groups"
            )
        names.append(_text(group["name"], f"node_groups[{index}].name"))
    _unique(names, "node group")
    return names


def _check_entry(
    entry: Any, where: str, body: Body, checks: dict[str, Callable[[Any, str], Any]]
) -> dict:
    entry = body.check(entry, where)
    for name, check in checks.items():
        check(entry.get(name), f"{where}.{name}")
    return entry


def _check_network_refs(networks: list[dict], groups: list[str]) -> None:
    for index, network in enumerate(networks):
        if network.get("node_group") is not None and network["node_group"] not in groups:
            raise InvalidInput(
                f"networks[{index}].node_group {network['node_group']!r} is not one of node_groups",
                key="networks",
            )
    _unique([(n["name"], n.get("node_group")) for n in networks], "network in a node group")


def _check_vip_refs(vips: list[dict], networks: set[str]) -> None:
    for index, vip in enumerate(vips):
        if vip["network"] not in networks:
            raise InvalidInput(
                f"vips[{index}].network {vip['network']!r} is not one of the networks", key="vips"
            )
    _unique([v["name"] for v in vips], "VIP")


def _unique(items: list, what: str) -> None:
    seen = set()
    for item in items:
        if item in seen:
            raise InvalidInput(f"{what} {item!r} is given twice", key=what)
        seen.add(item)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{where} must be a non-empty string", key=where)
    return value


def _optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return lambda value, where: None if value is None else check(value, where)


def _cidr(value: Any, where: str) -> None:
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError as exc:
        raise InvalidInput(
            f"{where} {value!r} is not a network like 10.0.0.0/24", key=where
        ) from exc


def _address(value: Any, where: str) -> None:
    try:
        ipaddress.ip_interface(str(value))
    except ValueError as exc:
        raise InvalidInput(f"{where} {value!r} is not an IP address", key=where) from exc


def _ranges(value: Any, where: str) -> None:
    if not isinstance(value, list):
        raise InvalidInput(f"{where} must be a list of [first, last] pairs", key=where)
    for index, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise InvalidInput(f"{where}[{index}] must be a [first, last] pair", key=where)
        for address in pair:
            _address(address, f"{where}[{index}]")


def _vlan(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4094:
        raise InvalidInput(f"{where} must be an integer from 0 to 4094 or null", key=where)


def _mapping(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise InvalidInput(f"{where} must be an object", key=where)


def _string(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string or null", key=where)


_NETWORK_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "name": _text,
    "node_group": _optional(_text),
    "cidr": _optional(_cidr),
    "gateway": _optional(_address),
    "ip_ranges": _optional(_ranges),
    "vlan": _optional(_vlan),
    "meta": _optional(_mapping),
}
_VIP_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "name": _text,
    "network": _text,
    "ip": _optional(_address),
    "namespace": _optional(_string),
}


# -- reading and writing ----------------------------------------------------------------------
def read_network(snapshot: Snapshot) -> dict:
    """`{node_groups, networks, vips}` of one commit (empty lists where files are absent)."""
    networks = snapshot.read_mapping(NETWORKS) or {}
    vips = snapshot.read_mapping(VIPS) or {}
    return {
        "node_groups": list(networks.get("node_groups") or []),
        "networks": list(networks.get("networks") or []),
        "vips": list(vips.get("vips") or []),
    }


def put_network(
    secrets: Secrets, env_id: int, changes: ChangeSet, snapshot: Snapshot, network: dict
) -> None:
    write_file(
        secrets,
        env_id,
        changes,
        snapshot,
        NETWORKS,
        {"node_groups": network["node_groups"], "networks": network["networks"]},
    )
    write_file(secrets, env_id, changes, snapshot, VIPS, {"vips": network["vips"]})


def network_names(snapshot: Snapshot) -> set[str]:
    return {n.get("name") for n in read_network(snapshot)["networks"]}


def remap_addresses(addresses: dict, names: set[str], node: Any) -> dict:
    """A node's `ip_addresses` for an environment whose networks are `names`.

    Addresses are kept by network name; an environment that declares no networks takes them as
    they are. A network the target lacks is an error naming it: an address is never dropped.
    """
    if not names:
        return dict(addresses)
    missing = sorted(set(addresses) - names)
    if missing:
        raise InvalidInput(
            f"node {node}: networks {', '.join(missing)} of its ip_addresses do "
            "not exist in the target environment",
            key="ip_addresses",
        )
    return dict(addresses)


def copy_vips(vips: list[dict], names: set[str]) -> list[dict]:
    """The VIPs whose network exists among `names` (all of them when `names` is empty)."""
    return [dict(v) for v in vips if not names or v.get("network") in names]


class Networks:
    """`GET|PUT /clusters/<id>/network`: node groups, networks and VIPs together."""

    def __init__(self, repos: Repositories, secrets: Secrets) -> None:
        self._repos = repos
        self._secrets = secrets

    def get(self, env_id: int, version: str | None = None) -> Served:
        snapshot = self._repos.environment_repo(env_id).snapshot(version)
        inputs = (snapshot.object_id(NETWORKS), snapshot.object_id(VIPS))
        return Served(read_network(snapshot), snapshot.commit_id, snapshot.version, inputs)

    def put(self, env_id: int, body: Any, author: Author | None = None) -> Served:
        """Replace node groups, networks and VIPs (a field left out becomes empty)."""
        network = check_network(body)

        def operation(snapshot: Snapshot) -> ChangeSet:
            changes = ChangeSet(f"environment {env_id}: set node groups, networks and VIPs")
            put_network(self._secrets, env_id, changes, snapshot, network)
            return changes

        self._repos.environment_repo(env_id).update(operation, author or self._repos.default_author)
        return self.get(env_id)


# -- the push gate ----------------------------------------------------------------------------
def network_files(tree: TreeCheck) -> None:
    """Pushed node groups, networks and VIPs have the shapes the API writes."""
    networks, vips = tree.mapping(NETWORKS), tree.mapping(VIPS)
    if networks is None and vips is None:
        return  # absent, or already reported as not a mapping
    body = {**(networks or {}), "vips": (vips or {}).get("vips") or []}
    try:
        check_network(body)
    except InvalidInput as exc:
        about_vips = exc.key in ("vips", "VIP") and vips is not None
        tree.report(VIPS if about_vips or networks is None else NETWORKS, exc.message)
