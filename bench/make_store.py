"""Build a realistic benchmark store quickly: N nodes, C commits, K keys per node document.

The store is made the way an operator's would be, in two steps:

1. through the `gitstore` facade: `Store.init`, component `fuel` (resources `astute`,
   `globals`), environment 1 with hierarchy `[nodes]`, the global `astute` values (Fuel's real
   astute.yaml of a compute node, tests/data/fuel) and a small global override;
2. with `git fast-import` on top of that head: one commit adding every node's facts
   (`nodes/<i>/values/astute.yaml`, K keys) and inventory (`inventory/nodes/<i>.yaml`), then
   commits that each re-upload one node's facts (and, every 50th, change the global override)
   until main holds C commits.

Why fast-import rather than one pygit2 write per commit: each commit that touches a node
rewrites the `nodes/` tree, which holds N entries (~150 KB at 5,000 nodes). Written as loose
objects that is ~6.5 ms and ~200 KB of disk per commit (measured: 2 GB for 10,000 commits);
fast-import writes one delta-compressed pack instead (~30 MB, ~30 s). Only git's own tools and
the facade touch the repositories; nothing here imports pygit2.

Usage: .venv/bin/python bench/make_store.py ROOT [--nodes N] [--commits C] [--keys K]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from gitstore import Store  # noqa: E402 - after the path set-up for running as a script
from gitstore.backend.repository import Author  # noqa: E402

FUEL_ASTUTE = PROJECT / "tests" / "data" / "fuel" / "astute" / "compute.yaml"
ENV_ID = 1
AUTHOR = Author("bench", "bench@example.com")
EPOCH = 1_700_000_000  # fixed dates: the same arguments build the same commits
RESOURCES = ("astute", "globals")
#: Commits the facade makes before fast-import: environment, global values, global override.
FACADE_COMMITS = 3
GLOBAL_EVERY = 50


def fqdn(node: int) -> str:
    return f"node-{node}.bench.local"


def node_facts(node: int, keys: int, revision: int = 0) -> dict:
    """K keys of one node's facts: ids and names, then a mix of scalars, lists and mappings."""
    rng = random.Random(node)
    doc: dict = {"uid": str(node), "fqdn": fqdn(node), "facts_revision": revision}
    for index in range(max(keys - len(doc), 0)):
        kind = index % 4
        if kind == 0:
            value = f"value-{node}-{index}-{rng.randrange(10**6)}"
        elif kind == 1:
            value = rng.randrange(10**9)
        elif kind == 2:
            value = [f"10.{index % 250}.{node % 250}.{n}" for n in range(3)]
        else:
            value = {
                "enabled": bool(rng.randrange(2)),
                "port": 1000 + index,
                "address": f"192.168.{index % 250}.{node % 250}",
            }
        doc[f"fact_{index:04d}"] = value
    return doc


def inventory(node: int) -> dict:
    return {
        "id": node,
        "fqdn": fqdn(node),
        "roles": ["compute"],
        "pending_roles": [],
        "status": "ready",
    }


def _yaml(doc: dict) -> bytes:
    """Block YAML of a generated document (PyYAML's representer costs ~8 ms per node file)."""
    lines = []
    for key, value in doc.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines.extend(f"  {sub}: {_scalar(item)}" for sub, item in value.items())
        elif isinstance(value, list):
            lines.append(f"{key}:" if value else f"{key}: []")
            lines.extend(f"- {_scalar(item)}" for item in value)
        else:
            lines.append(f"{key}: {_scalar(value)}")
    return ("\n".join(lines) + "\n").encode()


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return f"'{value}'" if value.isdigit() else value


# -- step 1: the facade ----------------------------------------------------------------------
def create_with_facade(root: Path) -> Store:
    store = Store.init(root, author=AUTHOR)
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in RESOURCES]}, AUTHOR
    )
    store.environments.create(
        {"id": ENV_ID, "components": ["fuel"], "hierarchy_levels": ["nodes"]}, AUTHOR
    )
    astute = yaml.safe_load(FUEL_ASTUTE.read_text())
    store.config.put(ENV_ID, [], "astute", "values", astute, AUTHOR)
    store.config.put(ENV_ID, [], "astute", "overrides", {"debug": False}, AUTHOR)
    return store


# -- step 2: git fast-import -----------------------------------------------------------------
class _Stream:
    """A fast-import command stream with inline file data."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.when = EPOCH

    def commit(self, message: str, files: dict[str, bytes], parent: str | None = None) -> None:
        self.when += 60
        who = f"{AUTHOR.name} <{AUTHOR.email}> {self.when} +0000"
        text = message.encode()
        self.parts.append(
            f"commit refs/heads/main\nauthor {who}\ncommitter {who}\ndata {len(text)}\n".encode()
            + text
            + b"\n"
        )
        if parent:
            self.parts.append(f"from {parent}\n".encode())
        for path, data in files.items():
            self.parts.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def history(head: str, nodes: int, commits: int, keys: int) -> bytes:
    """The fast-import stream: every node in one commit, then one change per commit."""
    stream = _Stream()
    files = {}
    for node in range(1, nodes + 1):
        files[f"nodes/{node}/values/astute.yaml"] = _yaml(node_facts(node, keys))
        files[f"inventory/nodes/{node}.yaml"] = _yaml(inventory(node))
    stream.commit(f"facts: upload {nodes} nodes", files, parent=head)
    for index in range(max(commits - FACADE_COMMITS - 1, 0)):
        if index % GLOBAL_EVERY == GLOBAL_EVERY - 1:
            doc = {"debug": False, "bench_revision": index}
            stream.commit(
                "config: set global astute overrides", {"global/overrides/astute.yaml": _yaml(doc)}
            )
            continue
        node = index % nodes + 1
        stream.commit(
            f"facts: upload node {node}",
            {f"nodes/{node}/values/astute.yaml": _yaml(node_facts(node, keys, revision=index + 1))},
        )
    return stream.bytes()


def fast_import(git_dir: Path, stream: bytes) -> None:
    subprocess.run(
        ["git", "-C", str(git_dir), "fast-import", "--quiet", "--force"], input=stream, check=True
    )


def build(root: Path, nodes: int, commits: int, keys: int) -> Store:
    """Create the store at `root` (which must not hold one yet)."""
    if commits < FACADE_COMMITS + 1:
        raise SystemExit(f"--commits must be at least {FACADE_COMMITS + 1}")
    for doc in (node_facts(nodes, keys, 1), inventory(nodes)):
        if yaml.safe_load(_yaml(doc)) != doc:  # the hand-made emitter must round-trip
            raise SystemExit(f"bench/make_store.py writes wrong YAML for {doc}")
    store = create_with_facade(root)
    repo = store.environment_repo(ENV_ID)
    fast_import(repo.path, history(repo.head(), nodes, commits, keys))
    return store


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="folder for the new store (must not exist)")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=100)
    args = parser.parse_args(argv)
    if args.root.exists():
        raise SystemExit(f"{args.root} exists; give a new folder")
    started = time.monotonic()
    store = build(args.root, args.nodes, args.commits, args.keys)
    head = store.environment_repo(ENV_ID).snapshot()
    print(
        f"store {args.root}: {args.nodes} nodes, {head.version} commits, {args.keys} keys per "
        f"node, built in {time.monotonic() - started:.1f}s"
    )


if __name__ == "__main__":
    main()
