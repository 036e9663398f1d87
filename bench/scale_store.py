"""Real-shaped facts of a Fuel cluster of any size, and the store built from them.

Each node's `astute.yaml` is one of the sample's real files (tests/data/fuel/astute: controller,
compute, ceph-osd, mongo) given the node's own id, fqdn and addresses, and it lists every node
of the cluster (`nodes`, `network_metadata.nodes`) as Fuel writes them: the same text in every
file, ~1.5 MB per file at 1,000 nodes. Files are made as text, so the repeated keys of
`network_scheme.roles` stay as Fuel wrote them.

`write_cluster(folder, count)` writes `folder/<id>/astute.yaml` (and the small `globals.yaml`
Fuel's `globals` task writes beside it) for `count` nodes; the scale
bench uploads that folder with `gitstore facts upload --dir` (one commit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
ASTUTE = PROJECT / "tests" / "data" / "fuel" / "astute"
#: Templates by role, in the order nodes are given them (one controller in twenty).
ROLES = ("compute", "compute", "compute", "ceph-osd", "compute", "ceph-osd", "compute")
CONTROLLER_EVERY = 20
FIRST_ID = 1
_ENTRY_START = re.compile(r"\n(?=[^ \t\r\n#\-]|-[^ \t\r\n])")
_TEMPLATE_ID = "127"  # compute.yaml's node; others get their own by file
_ADDRESSES = re.compile(r"192\.168\.([01])\.(\d+)")


@dataclass(frozen=True)
class Node:
    id: int
    role: str

    @property
    def fqdn(self) -> str:
        return f"node-{self.id}.test.domain.local"

    def address(self, network: int) -> str:
        """The node's address on the management (0) or storage (1) network."""
        return f"10.{20 + network}.{self.id // 250}.{self.id % 250 + 1}"


def cluster(count: int) -> list[Node]:
    """`count` nodes: controllers first in every twenty, the rest computes and ceph-osds."""
    nodes = []
    for index in range(count):
        if index % CONTROLLER_EVERY == 0:
            role = "primary-controller" if index == 0 else "controller"
        else:
            role = ROLES[index % len(ROLES)]
        nodes.append(Node(FIRST_ID + index, role))
    return nodes


def _entries(text: str) -> dict[str, str]:
    """Top-level entries of a facts file, by key (text kept as written)."""
    chunks = _ENTRY_START.split(text)
    return {chunk.split(":", 1)[0]: chunk.rstrip("\n") + "\n" for chunk in chunks}


def _templates() -> dict[str, dict[str, str]]:
    return {
        path.stem: _entries(path.read_text())
        for path in sorted(ASTUTE.glob("*.yaml"))
        if path.stem in {*ROLES, "controller", "primary-controller"}
    }


def _nodes_entry(nodes: list[Node]) -> str:
    lines = ["nodes:"]
    for node in nodes:
        lines += [
            f"- fqdn: {node.fqdn}",
            f"  internal_address: {node.address(0)}",
            "  internal_netmask: 255.255.0.0",
            f"  name: node-{node.id}",
            f"  role: {node.role}",
            f"  storage_address: {node.address(1)}",
            "  storage_netmask: 255.255.0.0",
            f"  swift_zone: '{node.id}'",
            f"  uid: '{node.id}'",
            f"  user_node_name: Untitled ({node.id % 256:02x}:{node.id // 256:02x})",
        ]
    return "\n".join(lines) + "\n"


def _metadata_entry(nodes: list[Node], template: str) -> str:
    """`network_metadata` listing every node, each with the network roles the sample gives
    its first node (addresses made the node's own); `vips` as the template has them."""
    head, _, vips = template.partition("\n  vips:")
    first = head.split("\n    node-", 2)[1]  # the sample's first node's block
    block = "\n".join(line for line in first.split("\n")[1:] if line.startswith("      "))
    lines = ["network_metadata:", "  nodes:"]
    for node in nodes:
        body = _ADDRESSES.sub(lambda m, node=node: node.address(int(m.group(1))), block)
        body = re.sub(r"uid: '\d+'", f"uid: '{node.id}'", body)
        body = re.sub(r"fqdn: \S+", f"fqdn: {node.fqdn}", body)
        body = re.sub(r"name: node-\d+", f"name: node-{node.id}", body)
        body = re.sub(r"node_roles:\n\s+- \S+", f"node_roles:\n        - {node.role}", body)
        lines += [f"    node-{node.id}:", body]
    return "\n".join(lines) + "\n  vips:" + vips


def _own_entries(node: Node, template: dict[str, str]) -> dict[str, str]:
    own = dict(template)
    own["fqdn"] = f"fqdn: {node.fqdn}\n"
    own["uid"] = f"uid: '{node.id}'\n"
    own["role"] = f"role: {node.role}\n"
    own["user_node_name"] = f"user_node_name: node {node.id}\n"
    scheme = own["network_scheme"]
    own["network_scheme"] = _ADDRESSES.sub(lambda m: node.address(int(m.group(1))), scheme)
    return own


def write_cluster(folder: Path, count: int) -> list[Node]:
    """`folder/<id>/astute.yaml` for a cluster of `count` nodes; the nodes."""
    nodes = cluster(count)
    templates = _templates()
    listed = {
        "nodes": _nodes_entry(nodes),
        "network_metadata": _metadata_entry(nodes, templates["compute"]["network_metadata"]),
    }
    for node in nodes:
        template = templates[node.role if node.role in templates else "compute"]
        entries = {**_own_entries(node, template), **listed}
        target = folder / str(node.id)
        target.mkdir(parents=True, exist_ok=True)
        with open(target / "astute.yaml", "w") as out:
            out.writelines(entries[key] for key in template)
        (target / "globals.yaml").write_text(_globals(node))
    return nodes


def _globals(node: Node) -> str:
    """What Fuel's `globals` task computes for the node alone (sample_repo's node 1 has one)."""
    return (
        f"node_name: node-{node.id}\nnode_role: {node.role}\nroles:\n  - {node.role}\n"
        f"primary_controller: {str(node.role == 'primary-controller').lower()}\n"
        f"internal_address: {node.address(0)}\nstorage_address: {node.address(1)}\n"
    )
