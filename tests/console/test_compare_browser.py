"""The compare page on a real `gitstore serve` in Debian's Chromium: picked with the form,
both sides with levels and commit links, no console error, no serious accessibility
violation, every control reached with the Tab key, and no secret in the page."""

from __future__ import annotations

import pytest
from access.helpers import serve

from console.test_browser import (  # noqa: F401 - fixtures
    _assert_every_control_reached,
    _open,
    axe,
    browser,
    driver,
    shots,
)
from gitstore import Store
from gitstore.backend.repository import Author

SECRETS = ("pw-staging-secret", "pw-production-secret")


def _build(root) -> Store:
    """Staging (1) and production (2): web-1 and db-1 in both, old-1 in staging only."""
    store = Store.init(root)
    names = ["astute", "globals"]
    store.components.create({"name": "fuel", "resource_definitions": [{"name": n} for n in names]})
    alice = Author("alice", "alice@example.com")
    for env_id, name, nodes, mtu, secret in (
        (1, "staging", ["web-1", "db-1", "old-1"], 1500, SECRETS[0]),
        (2, "production", ["web-1", "db-1"], 9000, SECRETS[1]),
    ):
        store.environments.create(
            {"id": env_id, "name": name, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
        )
        store.nodes.create(env_id, [{"fqdn": f"{n}.example"} for n in nodes])
        document = {"net": {"mtu": mtu}, "db_password": secret, "ntp": ["ntp1"]}
        store.config.put(env_id, [], "astute", "values", document, alice)
    web = store.nodes.find("web-1.example", 1).data[0]["id"]
    store.config.put(1, [("nodes", str(web))], "astute", "overrides", {"ip": "10.0.0.1"}, alice)
    return store


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("compare")
    store = _build(workdir / "store")
    running = serve(store.root, workdir)
    yield running
    running.stop()


def test_pick_two_environments_and_read_the_differences(server, browser, axe, shots):  # noqa: F811
    page, problems = _open(browser, f"{server.url}/ui/environments/1")
    try:
        page.get_by_role("link", name="Compare with another environment").click()
        page.get_by_label("Environment B").select_option("2")
        page.get_by_role("button", name="Compare").click()
        page.wait_for_url(f"{server.url}/ui/environments/1/compare/2")
        page.screenshot(path=str(shots / "ui-compare.png"))  # docs/ui.md's picture
        web = page.locator('h3[data-node="web-1.example"]')
        assert "of A" in web.inner_text() and "of B" in web.inner_text()
        table = page.locator('table[aria-labelledby="global"]')
        mtu = table.locator('tr[data-key="net.mtu"] td')
        cells = mtu.evaluate_all("cells => cells.map(c => c.innerText.trim())")
        assert cells[2:4] == ["1500", "/ values"] and cells[5:7] == ["9000", "/ values"]
        assert page.locator('tr[data-key="db_password"]').first.inner_text().count("******") == 2
        assert page.locator("#only-a").inner_text() == "A only (1): old-1.example"
        content = page.content()
        assert not any(secret in content for secret in SECRETS)
        page.add_script_tag(path=str(axe))
        violations = page.evaluate(
            """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
                 .filter(v => ['serious', 'critical'].includes(v.impact))
                 .map(v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target).join(' ')})`)"""
        )
        assert violations == []
        _assert_every_control_reached(page)
        mtu.locator("a").last.click()  # B's commit
        page.wait_for_url(f"{server.url}/ui/environments/2/commits/**")
        assert "astute" in page.content()
    finally:
        page.close()
    assert problems == []


def test_one_node_with_a_version(server, browser):  # noqa: F811
    page, problems = _open(browser, f"{server.url}/ui/environments/1/compare/2")
    try:
        page.get_by_role("textbox", name="Node", exact=True).fill("web-1.example")
        page.get_by_label("Version of A").fill("3")
        page.get_by_role("button", name="Compare").click()
        page.wait_for_url("**/ui/environments/1/compare/2?node=web-1.example&version_a=3")
        assert page.locator("h2#global").count() == 0
        keys = page.locator('h3[data-node="web-1.example"] + table tr[data-key]')
        assert "ip" not in keys.evaluate_all("rows => rows.map(r => r.dataset.key)")
    finally:
        page.close()
    assert problems == []
