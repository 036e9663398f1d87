"""Benchmark: the console's node view of a Fuel controller, warm, against the REST read of the
same node, and how soon headless Chromium can use the page.

The node has Fuel's astute.yaml of a compute node at global and of a controller at the node,
and four more resources from Fuel's other astute files (primary controller, primary mongo,
ceph-osd, the hiera overrides of its tasks): about 1,600 effective keys, every one with its
provenance (explain) in the page. Both URLs are served by one real `gitstore serve` (gunicorn,
the documented defaults) and asked in alternating rounds on one connection:

    node view   GET /ui/environments/1/nodes/1
    baseline    GET /api/v1/hiera/1/1            (the Hiera node document: the same values)

    RATIO console = node view median / baseline median
    targets: node view median <= 300 ms; DOMContentLoaded in Chromium <= 1000 ms

DOMContentLoaded is read from the page's navigation timing in Debian's Chromium (Playwright,
never a downloaded browser), median of the loads after a first one.

Usage:
  .venv/bin/python bench/console.py [--runs 20] [--loads 5]
  .venv/bin/python bench/console.py --smoke     # CI: a few requests, no browser (seconds)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours
from chromium import CHROMIUM, FLAGS  # noqa: E402 - how the suite starts Chromium
from fuel_data import ASTUTE, HIERA_OVERRIDE  # noqa: E402 - the vendored Fuel data

from gitstore import Store  # noqa: E402
from gitstore.backend.repository import Author

NODE_VIEW = "/ui/environments/1/nodes/1"
BASELINE = "/api/v1/hiera/1/1"
SERVER_TARGET_MS = 300.0
LOADED_TARGET_MS = 1000.0
#: Resource name -> (global document, node document) from Fuel's files.
RESOURCES = {
    "astute": ("astute/compute.yaml", "astute/controller.yaml"),
    "primary": (None, "astute/primary-controller.yaml"),
    "mongo": (None, "astute/primary-mongo.yaml"),
    "ceph": (None, "astute/ceph-osd.yaml"),
    "override/node": (None, "hiera-override"),
}


def _read(name: str | None) -> dict | None:
    if name is None:
        return None
    if name == "hiera-override":
        merged: dict = {}
        for path in sorted(HIERA_OVERRIDE.glob("*.yaml")):
            merged.update(yaml.safe_load(path.read_text()) or {})
        return merged
    return yaml.safe_load((ASTUTE / name.removeprefix("astute/")).read_text())


def build(root: Path, smoke: bool) -> int:
    """The store; returns the number of effective keys (leaves) of node 1."""
    store = Store.init(root)
    names = ["astute"] if smoke else list(RESOURCES)
    definitions = [{"name": name} for name in names]
    store.components.create({"name": "fuel", "resource_definitions": definitions})
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    who = Author("bench", "bench@example.com")
    for name in names:
        global_doc, node_doc = (_read(part) for part in RESOURCES[name])
        if smoke:
            global_doc, node_doc = {"net": {"mtu": 1500}}, {"net": {"mtu": 9000}, "x": [1]}
        if global_doc:
            store.config.put(1, [], name, "values", global_doc, who)
        store.config.put(1, [("nodes", "1")], name, "values", node_doc or {}, who)
    document = store.hiera.node_document(1, "1").data["resources"]
    return sum(_leaves(values) for values in document.values())


def _leaves(value) -> int:
    if isinstance(value, dict) and value:
        return sum(_leaves(child) for child in value.values())
    return 1


def server_times(server: harness.Server, runs: int) -> tuple[list[float], list[float]]:
    """Milliseconds per GET of the node view and of the baseline, in alternating rounds."""
    view, base = [], []
    for _ in range(runs):
        for path, into in ((NODE_VIEW, view), (BASELINE, base)):
            started = time.perf_counter()
            status, body, _ = server.get(path)
            into.append((time.perf_counter() - started) * 1000)
            if status != 200:
                raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
    return view, base


def dom_content_loaded(url: str, loads: int) -> list[float]:
    """Milliseconds from navigation start to DOMContentLoaded, per load after the first."""
    from playwright import sync_api as playwright

    took = []
    with tempfile.TemporaryDirectory() as profile, playwright.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        try:
            page = context.new_page()
            for number in range(loads + 1):
                page.goto(url, wait_until="load")
                timing = page.evaluate(
                    "() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
                )
                if number:
                    took.append(float(timing))
        finally:
            context.close()
    return took


def main() -> int:
    parser = harness.options(__doc__)
    parser.add_argument("--runs", type=int, default=20, help="GETs of each URL")
    parser.add_argument("--loads", type=int, default=5, help="page loads in Chromium")
    args = parser.parse_args()
    runs = 3 if args.smoke else args.runs
    with harness.scratch("console-bench-", args.workdir) as folder:
        keys = build(folder / "store", args.smoke)
        with harness.Server(
            folder / "store", workers=args.workers, worker_class=args.worker_class
        ) as server:
            size = server.warm([NODE_VIEW])
            server.warm([BASELINE])
            view, base = server_times(server, runs)
            loaded = [] if args.smoke else dom_content_loaded(server.url + NODE_VIEW, args.loads)
    view_ms, base_ms = statistics.median(view), statistics.median(base)
    loaded_ms = statistics.median(loaded) if loaded else 0.0
    ok = view_ms <= SERVER_TARGET_MS and loaded_ms <= LOADED_TARGET_MS
    harness.report(
        "console",
        view_ms / base_ms,
        f"node view <= {SERVER_TARGET_MS:g} ms, DOMContentLoaded <= {LOADED_TARGET_MS:g} ms",
        ok,
        f"{keys} effective keys: node view {view_ms:.1f} ms ({size} bytes of HTML), "
        f"baseline {base_ms:.1f} ms, DOMContentLoaded "
        + (f"{loaded_ms:.0f} ms" if loaded else "not measured (--smoke)")
        + f"; {harness.machine_load()}",
    )
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
