"""The node page of a real `gitstore serve` in Debian's Chromium: it loads without a console
error and a key opens to its provenance. Never downloads a browser (docs/ui.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from access.helpers import serve
from playwright import sync_api as playwright

from gitstore import Author, Store

CHROMIUM = Path("/usr/bin/chromium")
#: Flags that keep Chromium off the network it cannot reach here (/work/shared/FACTS.md).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def server(tmp_path):
    store = Store.init(tmp_path / "store")
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    who = Author("alice", "alice@example.com")
    store.config.put(1, [], "astute", "values", {"net": {"mtu": 1500}}, who)
    store.config.put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 9000}}, who)
    running = serve(store.root, tmp_path)
    yield running
    running.stop()


def test_node_page_loads_without_console_errors(server, tmp_path):
    assert CHROMIUM.exists(), ".ci/run installs Debian's chromium; install it to run this test"
    problems: list[str] = []
    with playwright.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(str(error)))
            response = page.goto(f"{server.url}/ui/environments/1/nodes/1?version=3")
            assert response is not None and response.status == 200
            key = page.locator('details[data-path="net.mtu"]')
            key.locator("summary").click()
            assert key.locator("dd.file").inner_text() == "nodes/1/overrides/astute.yaml:2"
            assert key.locator("dd.level").is_visible()
        finally:
            context.close()
    assert problems == []
