"""Benchmark: comparing two environments costs a page of nodes, not the environment's size.

Two environments like an original and its upgrade seed: every node has Fuel's astute.yaml of a
compute node at global (with its secrets sealed) and a small document of its own; in B the
global mtu differs and every tenth node has a changed value. In a 200-node and a 1,000-node
pair, with a fresh Store each run (the comparison's caches empty; the process's caches of
parsed blobs and merged documents stay warm after the first run, as in a serving worker):

    first   the first page of 100 nodes: reads every node record of both sides once (the node
            index, kept by the inventory's tree id) and compares the global level
    next    the second page (offset 100): 100 more nodes, the index and global level known
    warm    the second page again (the cached answer)

    RATIO compare = next, 1,000 nodes / next, 200 nodes    (target <= 1.5: a page costs its
                                                            nodes, not the environment's)
    and warm / next at 1,000 nodes (the cached answer)

Usage:
  .venv/bin/python bench/compare.py [--runs 3]
  .venv/bin/python bench/compare.py --smoke     # CI: 120 and 150 nodes, one run (seconds)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuel_data import ASTUTE  # noqa: E402 - the vendored Fuel data

from gitstore import Store  # noqa: E402
from gitstore.versions.compare import CompareQuery

PAGE = 100


def build(root: Path, nodes: int) -> Path:
    """Environments 1 and 2 with `nodes` inventory nodes each (same fqdns, other ids)."""
    store = Store.init(root)
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    compute = yaml.safe_load((ASTUTE / "compute.yaml").read_text())
    for env_id in (1, 2):
        store.environments.create(
            {"id": env_id, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
        )
        created = store.nodes.create(
            env_id, [{"fqdn": f"node-{n}.example"} for n in range(nodes)]
        ).data
        mtu = 1500 if env_id == 1 else 9000
        documents = {((), "astute", "values"): {**compute, "mtu": mtu}}
        for number, node in enumerate(created):
            changed = env_id == 2 and number % 10 == 0
            own = {"ip": f"10.0.{number // 250}.{number % 250}", "rack": "r2" if changed else "r1"}
            documents[((("nodes", str(node["id"])),), "astute", "values")] = own
        store.config.write_many(env_id, documents, f"environment {env_id}: {nodes} nodes")
    return root


def page(root: Path, runs: int) -> tuple[float, float, float]:
    """(first, next, warm) seconds, medians of `runs` fresh Stores (see the docstring)."""
    found: list[list[float]] = [[], [], []]
    for _ in range(runs):
        store = Store(root)
        for index, offset in enumerate((0, PAGE, PAGE)):
            started = time.perf_counter()
            data = store.comparisons.compare(1, 2, CompareQuery(offset=offset, limit=PAGE)).data
            found[index].append(time.perf_counter() - started)
            assert data["nodes"] and data["page"]["matched"] > PAGE
    first, following, warm = (statistics.median(times) for times in found)
    return first, following, warm


def main(argv: list[str]) -> int:
    smoke = "--smoke" in argv
    runs = 1 if smoke else int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 3
    sizes = (120, 150) if smoke else (200, 1000)
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for size in sizes:
            root = build(Path(folder) / f"store-{size}", size)
            results[size] = page(root, runs)
            first, following, warm = (seconds * 1000 for seconds in results[size])
            print(f"{size:5d} nodes: first page {first:7.1f} ms, next page {following:6.1f} ms, "
                  f"warm {warm:5.2f} ms")  # fmt: skip
    small, large = results[sizes[0]], results[sizes[1]]
    print(
        f"RATIO compare {large[1] / small[1]:.2f} (target <= 1.5) next page, "
        f"{sizes[1]} / {sizes[0]} nodes; warm / next {large[2] / large[1]:.4f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
