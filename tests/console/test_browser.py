"""The console of a real `gitstore serve` in Debian's Chromium: the node page loads without a
console error and a key opens to its provenance; a user signs in, edits, previews and saves.
Never downloads a browser (docs/ui.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from access.helpers import add_users, password_of, serve
from playwright import sync_api as playwright

from console.forms import COOKIE, USERS, build_store
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


@pytest.fixture
def guarded_server(tmp_path):
    store = build_store(tmp_path / "store")
    add_users(store.root, USERS)
    running = serve(store.root, tmp_path)
    yield store, running
    running.stop()


def test_sign_in_edit_preview_and_save_in_a_browser(guarded_server, tmp_path):
    """Signed out, the node page leads to the sign-in form and back; the edit is previewed
    and saved as one commit by the user, all without a console error."""
    store, server = guarded_server
    head = store.environment_repo(1).head()
    problems: list[str] = []
    with playwright.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.goto(f"{server.url}/ui/environments/1/nodes/1")
            assert "/ui/login" in page.url
            page.get_by_label("User").fill("writer1")
            page.get_by_label("Password").fill(password_of("writer1"))
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{server.url}/ui/environments/1/nodes/1")
            cookie = next(c for c in context.cookies() if c["name"] == COOKIE)
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            key = page.locator('details[data-path="net.mtu"]')
            key.locator("summary").click()
            key.get_by_role("link", name="Edit").click()
            page.get_by_label("global").check()
            page.get_by_label("Value").fill("1400")
            page.get_by_role("button", name="Preview").click()
            affected = page.locator("table.nodes-affected tr[data-node]")
            assert affected.evaluate_all("rows => rows.map(r => r.dataset.node)") == ["1", "2"]
            assert store.environment_repo(1).head() == head  # previewed, not saved
            page.get_by_role("button", name="Save as one commit").click()
            page.wait_for_url("**/ui/environments/1/nodes/1?saved=*")
            assert page.locator("p.saved").is_visible()
            assert page.locator('details[data-path="net.mtu"] code.value').inner_text() == "1400"
        finally:
            context.close()
    repo = store.environment_repo(1)
    assert repo.parent(repo.head()) == head
    assert repo.snapshot().info().author == "writer1"
    assert problems == []
