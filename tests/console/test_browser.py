"""The console's pages on a real `gitstore serve` in Debian's Chromium (never a downloaded
browser, docs/ui.md): every page loads without a console error, axe-core finds no serious or
critical accessibility violation, every control is reached with the Tab key, and a key opens
to its provenance; a user signs in, edits, previews and saves. Each page is saved as a PNG: to
a temporary folder, or to the folder GITSTORE_SCREENSHOTS names
(`GITSTORE_SCREENSHOTS=docs/img` refreshes the docs' pictures).

axe-core comes from the npm registry, pinned in `tests/console/package.json`; the set-up
installs it with npm when `node_modules` is missing (`.ci/run` does too).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from access.helpers import add_users, password_of, serve
from chromium import CHROMIUM, FLAGS, record_errors
from fuel_data import newton_release
from playwright import sync_api as playwright

from console.forms import COOKIE, USERS, build_store
from console.pages import leaf
from gitstore import Store
from gitstore.backend.repository import Author

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
AXE = HERE / "node_modules" / "axe-core" / "axe.min.js"
#: Read when the module is collected: the suite's fixtures clear GITSTORE_* variables.
SCREENSHOTS = os.environ.get("GITSTORE_SCREENSHOTS")
#: The pages checked, by the name of their screenshot (`docs/img/ui-<name>.png`).
PAGES = {
    "environments": "/ui/",
    "environment": "/ui/environments/1",
    "node": "/ui/environments/1/nodes/1",
    "node-pinned": "/ui/environments/1/nodes/1?version=3",
    "diff": "/ui/environments/1/nodes/2/diff?from=2&to=5",
    "history": "/ui/environments/1/nodes/2/history?resource=astute&key=net.mtu",
    "commit": "/ui/environments/1/commits/5",
    "search": "/ui/environments/1/search?q=mtu",
    "graph": "/ui/environments/1/graph",
    "edit": "/ui/environments/1/nodes/1/edit?resource=astute&key=net.mtu",
    "revert": "/ui/environments/1/commits/5/revert",
    "login": "/ui/login",
}
#: What a control is, and which of them the Tab key must reach (visible ones; in a radio
#: group the Tab key stops on the checked button only, arrows move within the group).
_CONTROLS = """() => {
  const all = [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, summary')];
  // Chromium gives the content of a closed <details> boxes too: it is hidden all the same.
  const collapsed = e => {
    for (let d = e.closest('details:not([open])'); d;
         d = d.parentElement && d.parentElement.closest('details:not([open])')) {
      const summary = d.querySelector(':scope > summary');
      if (!(summary && summary.contains(e))) return true;
    }
    return false;
  };
  const shown = all.filter(e => e.getClientRects().length > 0 && !collapsed(e)
    && !(e.type === 'radio' && !e.checked && document.querySelector(
      `input[type=radio][name="${e.name}"]:checked`)));
  shown.forEach((e, i) => e.setAttribute('data-control', i));
  return shown.length;
}"""


def _task(task_id: str, **fields) -> dict:
    return {"id": task_id, "type": "shell", "version": "2.1.0", "roles": "*", **fields}


def _build(root: Path) -> Store:
    """Environment 1 with history (versions 2-6), a secret, a release graph, two nodes."""
    store = Store.init(root)
    names = ["astute", "globals"]
    store.components.create({"name": "fuel", "resource_definitions": [{"name": n} for n in names]})
    store.releases.create(newton_release())
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    alice, bob = Author("alice", "alice@example.com"), Author("bob", "bob@example.com")
    put = store.config.put
    put(1, [], "astute", "values", {"net": {"mtu": 1500, "vlan": 10}, "ntp": ["ntp1"]}, alice)
    put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 9000}}, bob)
    put(1, [("nodes", "2")], "astute", "values", {"hostname": "node-2"}, bob)
    put(1, [], "astute", "values", {"net": {"mtu": 1400, "vlan": 10}, "ntp": ["ntp1"]}, alice)
    store.environments.update(1, {"secret_keys": ["db.pass"], "release": 1})
    put(1, [], "globals", "values", {"db": {"pass": "hunter2-secret"}}, alice)
    tasks = [_task("netconfig"), _task("database", requires=["netconfig"])]
    store.graphs.create("release", 1, "default", {"tasks": tasks})
    for node_id, roles in (("1", ["controller"]), ("2", ["compute"])):
        store.nodes.create(
            1, {"id": int(node_id), "fqdn": f"node-{node_id}.example", "roles": roles}
        )
    return store


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("browser")
    store = _build(workdir / "store")
    running = serve(store.root, workdir)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def axe() -> Path:
    """axe-core's script, installed with npm from tests/console/package.json if missing."""
    if not AXE.exists():
        npm = shutil.which("npm")
        assert npm, ".ci/run installs Debian's nodejs and npm; install them to run this test"
        command = [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"]
        subprocess.run(command, cwd=HERE, check=True, capture_output=True, timeout=300)
    assert AXE.exists()
    return AXE


@pytest.fixture(scope="module")
def driver():
    """Playwright's driver, one per module: its sync API allows only one at a time."""
    assert CHROMIUM.exists(), ".ci/run installs Debian's chromium; install it to run this test"
    with playwright.sync_playwright() as running:
        yield running


def _launch(driver, profile: Path):
    return driver.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        headless=True,
        args=FLAGS,
        viewport={"width": 1280, "height": 900},
    )


@pytest.fixture(scope="module")
def browser(driver, tmp_path_factory):
    context = _launch(driver, tmp_path_factory.mktemp("profile"))
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path_factory.mktemp("screenshots")
    folder = folder if folder.is_absolute() else PROJECT / folder
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(browser, url: str) -> tuple[playwright.Page, list[str]]:
    page = browser.new_page()
    problems = record_errors(page)
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    return page, problems


@pytest.mark.parametrize("name", list(PAGES))
def test_page_loads_clean_accessible_and_keyboard_reachable(server, browser, axe, shots, name):
    page, problems = _open(browser, server.url + PAGES[name])
    try:
        if name == "node":  # the picture shows a key open to its provenance (fetched)
            page.locator(leaf("net.mtu")).locator("summary").click()
            page.locator(leaf("net.mtu")).locator("dd.file").wait_for()
        page.screenshot(path=str(shots / f"ui-{name}.png"))
        assert "hunter2-secret" not in page.content()
        page.add_script_tag(path=str(axe))
        violations = page.evaluate(
            """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
                 .filter(v => ['serious', 'critical'].includes(v.impact))
                 .map(v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target).join(' ')})`)"""
        )
        assert violations == []
        _assert_every_control_reached(page)
    finally:
        page.close()
    assert problems == []


def _assert_every_control_reached(page: playwright.Page) -> None:
    """Tab from the top of the page through every control (plus the graph's task links,
    which are not counted: an SVG link is focusable too, so a few more presses are given)."""
    count = page.evaluate(_CONTROLS)
    extra = page.evaluate("() => document.querySelectorAll('svg a').length")
    reached: set[str] = set()
    for _ in range(count + extra + 2):
        page.keyboard.press("Tab")
        marker = page.evaluate("() => document.activeElement.getAttribute('data-control')")
        if marker is not None:
            reached.add(marker)
    assert reached == {str(index) for index in range(count)}


def test_a_key_opens_to_its_provenance(server, browser):
    page, problems = _open(browser, f"{server.url}/ui/environments/1/nodes/1?version=3")
    try:
        key = page.locator(leaf("net.mtu"))
        key.locator("summary").press("Enter")  # the keyboard opens it, as a click would
        assert key.locator("dd.file").inner_text() == "nodes/1/overrides/astute.yaml:2"
        assert key.locator("dd.level").is_visible()
    finally:
        page.close()
    assert problems == []


def test_a_task_of_the_graph_leads_to_its_row(server, browser):
    page, problems = _open(browser, f"{server.url}/ui/environments/1/graph")
    try:
        page.locator("svg a").first.click()
        assert page.evaluate("() => location.hash").startswith("#task-")
        target = page.evaluate("() => document.querySelector(location.hash).dataset.task")
        assert target in ("netconfig", "database")
    finally:
        page.close()
    assert problems == []


@pytest.fixture
def guarded_server(tmp_path):
    store = build_store(tmp_path / "store")
    add_users(store.root, USERS)
    running = serve(store.root, tmp_path)
    yield store, running
    running.stop()


def test_sign_in_edit_preview_and_save_in_a_browser(driver, guarded_server, tmp_path):
    """Signed out, the node page leads to the sign-in form and back; the edit is previewed
    and saved as one commit by the user, all without a console error."""
    store, server = guarded_server
    head = store.environment_repo(1).head()
    context = _launch(driver, tmp_path / "profile")
    try:
        page = context.new_page()
        problems = record_errors(page)
        page.goto(f"{server.url}/ui/environments/1/nodes/1")
        assert "/ui/login" in page.url
        page.get_by_label("User").fill("writer1")
        page.get_by_label("Password").fill(password_of("writer1"))
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{server.url}/ui/environments/1/nodes/1")
        cookie = next(c for c in context.cookies() if c["name"] == COOKIE)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        key = page.locator(leaf("net.mtu"))
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
        assert page.locator(leaf("net.mtu")).locator("code.value").inner_text() == "1400"
    finally:
        context.close()
    repo = store.environment_repo(1)
    assert repo.parent(repo.head()) == head
    assert repo.snapshot().info().author == "writer1"
    assert problems == []


def test_a_sign_in_without_a_return_page_lands_on_a_readable_page(driver, guarded_server, tmp_path):
    """writer1 holds grants on environment 1 only: the environment list would be a JSON 403."""
    _, server = guarded_server
    context = _launch(driver, tmp_path / "profile")
    try:
        page = context.new_page()
        page.goto(f"{server.url}/ui/login")
        page.get_by_label("User").fill("writer1")
        page.get_by_label("Password").fill(password_of("writer1"))
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{server.url}/ui/environments/1")
        assert page.locator("h1").inner_text().startswith("Environment 1")
    finally:
        context.close()
