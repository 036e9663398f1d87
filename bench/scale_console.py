"""Benchmark: the console at 1,000 nodes known only by their facts (issues 35 and 40).

Builds (or takes `--root` of) an environment of 1,000 nodes written as facts only, each a real
Fuel `astute.yaml` with its own id, fqdn, role and status (`tests/scale_env.py`, one commit
by `git fast-import`), serves it with `gitstore serve` and measures on loopback:

    environment page, first page   GET /ui/environments/1          cold (a worker's first) and warm
    environment page, filtered     GET /ui/environments/1?role=compute&status=error&page=3
    node page of a controller      GET /ui/environments/1/nodes/2  time and bytes of HTML
    a key's provenance             GET .../nodes/2/why?resource=astute&key=fqdn&fragment=1
    the largest folded subtree     GET .../nodes/2/subtree?...&fragment=1 of each placeholder
                                   of the node page (the cluster's lists, when nodes list them)
    DOMContentLoaded               the node page in Debian's Chromium (median after a first load)

    targets: environment page <= 300 ms; node page <= 400 KB of HTML, DOMContentLoaded <= 1 s

It prints the table, then `RATIO scale_console`: the environment page's warm time over its
target (below 1 meets it).

Usage:
  .venv/bin/python bench/scale_console.py [--runs 10] [--loads 5] [--root STORE]
  .venv/bin/python bench/scale_console.py --smoke     # 50 nodes, a few requests, no browser
"""

from __future__ import annotations

import html
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours
import scale_env  # noqa: E402 - the 1,000-node environment the console tests use
from chromium import CHROMIUM, FLAGS  # noqa: E402 - how the suite starts Chromium

ENV_PAGE = "/ui/environments/1"
FILTERED = "/ui/environments/1?role=compute&status=error&page=3"
ENV_TARGET_MS = 300.0
NODE_PAGE_TARGET_BYTES = 400 * 1024
LOADED_TARGET_MS = 1000.0


def timed_get(server: harness.Server, path: str) -> tuple[float, int]:
    """Milliseconds of one GET of `path`, and the size of its body."""
    started = time.perf_counter()
    status, body, _ = server.get(path)
    took = (time.perf_counter() - started) * 1000
    if status != 200:
        raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
    return took, len(body)


def warm_ms(server: harness.Server, path: str, runs: int) -> float:
    server.warm([path])  # every worker has served it once
    return statistics.median(timed_get(server, path)[0] for _ in range(runs))


def dom_content_loaded(url: str, loads: int) -> float:
    """Median milliseconds from navigation start to DOMContentLoaded, after a first load."""
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
    return statistics.median(took)


def largest_fold(server: harness.Server, node_page: str, runs: int) -> tuple[str, float, int]:
    """The key of the node page's folded subtree whose fragment is the largest, its warm
    milliseconds and bytes; ("", 0, 0) when the page folds nothing."""
    _, page, _ = server.get(node_page)
    sizes = []
    for href in re.findall(r'<a class="fold" href="([^"]+)"', page.decode()):
        url = html.unescape(href) + "&fragment=1"
        sizes.append((timed_get(server, url)[1], url))
    if not sizes:
        return "", 0.0, 0
    size, url = max(sizes)
    return url.split("key=", 1)[1].split("&", 1)[0], warm_ms(server, url, runs), size


def measure(root: Path, args) -> list[tuple[str, str, str, bool]]:
    """(what, measured, target, met) rows, on a server of its own for `root`."""
    runs = 3 if args.smoke else args.runs
    with harness.Server(root, workers=args.workers, worker_class=args.worker_class) as server:
        return measure_server(server, runs, None if args.smoke else args.loads)


def measure_server(
    server: harness.Server, runs: int, loads: int | None, node: int = 2
) -> list[tuple[str, str, str, bool]]:
    """(what, measured, target, met) rows of environment 1 served by `server` (bench/scale.py
    passes its own); `node` is a controller's id; `loads` None skips Chromium."""
    node_page = f"/ui/environments/1/nodes/{node}"
    why = f"{node_page}/why?resource=astute&key=fqdn&fragment=1"
    cold, _ = timed_get(server, ENV_PAGE)
    env_ms = warm_ms(server, ENV_PAGE, runs)
    filtered_ms = warm_ms(server, FILTERED, runs)
    node_ms = warm_ms(server, node_page, runs)
    node_bytes = timed_get(server, node_page)[1]
    why_ms = warm_ms(server, why, runs)
    fold_key, fold_ms, fold_bytes = largest_fold(server, node_page, runs)
    loaded = None if loads is None else dom_content_loaded(server.url + node_page, loads)
    kb = node_bytes / 1024
    return [
        ("environment page, first page, cold", f"{cold:.0f} ms", "-", True),
        (
            "environment page, first page, warm",
            f"{env_ms:.1f} ms",
            f"<= {ENV_TARGET_MS:g} ms",
            env_ms <= ENV_TARGET_MS,
        ),
        ("environment page, filtered, page 3", f"{filtered_ms:.1f} ms", "-", True),
        ("node page of a controller, warm", f"{node_ms:.1f} ms", "-", True),
        (
            "node page of a controller, HTML",
            f"{kb:.0f} KB",
            f"<= {NODE_PAGE_TARGET_BYTES // 1024} KB",
            node_bytes <= NODE_PAGE_TARGET_BYTES,
        ),
        ("a key's provenance (fragment), warm", f"{why_ms:.1f} ms", "-", True),
        (
            "the node page's largest folded subtree (fragment), warm",
            f"{fold_key}: {fold_ms:.1f} ms, {fold_bytes / 1024:.0f} KB" if fold_key else "none",
            "-",
            True,
        ),
        (
            "node page DOMContentLoaded (Chromium)",
            "not measured (--smoke)" if loaded is None else f"{loaded:.0f} ms",
            f"<= {LOADED_TARGET_MS:g} ms",
            loaded is None or loaded <= LOADED_TARGET_MS,
        ),
    ]


def main() -> int:
    parser = harness.options(__doc__)
    parser.add_argument("--root", type=Path, help="a store built by this bench (environment 1)")
    parser.add_argument("--nodes", type=int, default=1000, help="nodes of the built store")
    parser.add_argument("--runs", type=int, default=10, help="warm GETs of each page")
    parser.add_argument("--loads", type=int, default=5, help="page loads in Chromium")
    args = parser.parse_args()
    with harness.scratch("scale-console-", args.workdir) as folder:
        root = args.root
        if root is None:
            started = time.monotonic()
            root = folder / "store"
            scale_env.build(root, 50 if args.smoke else args.nodes)
            print(f"built {root}: {time.monotonic() - started:.1f} s", flush=True)
        rows = measure(root, args)
    width = max(len(row[0]) for row in rows)
    print(f"{'what':<{width}}  {'measured':>22}  {'target':>11}  met")
    for what, value, target, met in rows:
        print(f"{what:<{width}}  {value:>22}  {target:>11}  {'yes' if met else 'NO'}")
    ok = all(row[3] for row in rows)
    env_ms = float(rows[1][1].split()[0])
    harness.report(
        "scale_console",
        env_ms / ENV_TARGET_MS,
        f"environment page <= {ENV_TARGET_MS:g} ms, node page <= "
        f"{NODE_PAGE_TARGET_BYTES // 1024} KB, DOMContentLoaded <= {LOADED_TARGET_MS:g} ms",
        ok,
        f"(the ratio: the environment page's warm time over its target); {harness.machine_load()}",
    )
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
