"""A 1,000-node environment built in seconds, for the console's scale tests and
`bench/scale_console.py`: nodes that exist only as facts (ConfigDB's upload path), each a real
Fuel `astute.yaml` with its own id, fqdn, role and status, written in one commit by
`git fast-import` instead of a thousand writes through the facade.

Environment 1 has hierarchy `[nodes]` and component `fuel` (`astute`, `globals`); global
`astute` values are Fuel's compute node file. Node `i` holds the controller's file for
i <= CONTROLLERS, ceph-osd's for every tenth node, else the compute's, with `fqdn:
node-<i>.scale.local`, `uid: '<i>'`, and a status from STATUSES by `i`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from fuel_data import ASTUTE

from gitstore import Store
from gitstore.backend.repository import Author

ENV_ID = 1
AUTHOR = Author("scale", "scale@example.com")
CONTROLLERS = 3
STATUSES = ("ready", "ready", "ready", "provisioned", "error")


def fqdn(node: int) -> str:
    return f"node-{node}.scale.local"


def role(node: int) -> str:
    if node <= CONTROLLERS:
        return "controller"
    return "ceph-osd" if node % 10 == 0 else "compute"


def status(node: int) -> str:
    return STATUSES[node % len(STATUSES)]


def _template(name: str) -> str:
    return (ASTUTE / f"{name}.yaml").read_text()


def node_facts(node: int, templates: dict[str, str]) -> bytes:
    """Node `node`'s astute.yaml: its role's real file with its own top-level fields."""
    text = templates[role(node)]
    text = re.sub(r"(?m)^fqdn: .*$", f"fqdn: {fqdn(node)}", text)
    text = re.sub(r"(?m)^uid: .*$", f"uid: '{node}'", text)
    text = re.sub(r"(?m)^status: .*$", f"status: {status(node)}", text)
    text = re.sub(r"(?m)^role: .*$", f"role: {role(node)}", text)
    return text.encode()


def build(root: Path, nodes: int = 1000) -> Store:
    """A new store at `root` whose environment 1 has `nodes` nodes known by their facts."""
    store = Store.init(root, author=AUTHOR)
    names = ["astute", "globals"]
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in names]}, AUTHOR
    )
    store.environments.create(
        {"id": ENV_ID, "components": ["fuel"], "hierarchy_levels": ["nodes"]}, AUTHOR
    )
    store.config.put(ENV_ID, [], "astute", "values", yaml.safe_load(_template("compute")), AUTHOR)
    templates = {r: _template(r) for r in ("controller", "compute", "ceph-osd")}
    files = {
        f"nodes/{node}/values/astute.yaml": node_facts(node, templates)
        for node in range(1, nodes + 1)
    }
    repo = store.environment_repo(ENV_ID)
    _fast_import(repo.path, repo.head(), f"facts: upload {nodes} nodes", files)
    return store


def _fast_import(git_dir: Path, parent: str, message: str, files: dict[str, bytes]) -> None:
    who = f"{AUTHOR.name} <{AUTHOR.email}> 1700000000 +0000"
    text = message.encode()
    parts = [
        f"commit refs/heads/main\nauthor {who}\ncommitter {who}\ndata {len(text)}\n".encode(),
        text + b"\n",
        f"from {parent}\n".encode(),
    ]
    for path, data in files.items():
        parts.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    command = ["git", "-C", str(git_dir), "fast-import", "--quiet"]
    subprocess.run(command, input=b"".join(parts), check=True)
