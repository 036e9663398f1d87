"""The console at 1,000 nodes known only by their facts (tests/scale_env.py, built once per
module): the environment page's node list (fqdn, roles, status; filters; pages), the node page
of a controller (its size, the values tree's filter, a key's provenance fetched when opened,
expand and collapse), through the Flask client and in Debian's Chromium on a real
`gitstore serve`; the search page at 1,280 px with long keys and values; and the sample's
deployment graph of 204 tasks, drawn and fitted to its box."""

from __future__ import annotations

import pytest
import scale_env
from access.helpers import serve
from chromium import CHROMIUM, FLAGS, record_errors
from playwright import sync_api as playwright

from console.pages import leaf, leaf_paths, rows
from gitstore import Store
from gitstore.api import create_app
from gitstore.backend.repository import Author
from gitstore.configdb.importer import SAMPLE_DIR

ENV = "/ui/environments/1"
CONTROLLER = f"{ENV}/nodes/2"
#: A controller's page without inlined provenance (issue 35: ~1.5 MB with it).
MAX_NODE_PAGE_BYTES = 400 * 1024
#: Environment 2 of the module's store: a value that is a long list and a long dotted key.
LONG_KEY = ".".join(f"segment_{i}_of_a_long_dotted_path" for i in range(8))


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    """The 1,000-node store, with environment 2 holding long keys and values to search."""
    store = scale_env.build(tmp_path_factory.mktemp("scale") / "store")
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    nested: dict = {}
    here = nested
    for segment in LONG_KEY.split(".")[:-1]:
        here = here.setdefault(segment, {})
    here[LONG_KEY.split(".")[-1]] = "needle-at-the-end"
    hosts = [f"node-{i}.a-rather-long-domain-name.example.net" for i in range(300)]
    author = Author("scale", "scale@example.com")
    store.config.put(2, [], "astute", "values", {"hosts": hosts, **nested}, author)
    return store


@pytest.fixture(scope="module")
def client(scale):
    return create_app({"TESTING": True}, store=scale).test_client()


# -- the environment page ---------------------------------------------------------------------
def test_the_first_page_lists_fifty_nodes_with_fqdn_roles_and_status(client):
    listed = rows(client, ENV, "node").rows
    assert [row["node"] for row in listed] == [str(n) for n in range(1, 51)]
    for row in listed:
        node = int(row["node"])
        assert row["fqdn"] == scale_env.fqdn(node)
        assert row["roles"] == scale_env.role(node)
        assert row["status"] == scale_env.status(node)
    page = client.get(ENV).get_data(as_text=True)
    assert "Nodes 1–50 of 1000" in page and "Page 1 of 20" in page
    rest = client.get("/api/v1/config/environments/1/nodes?limit=50").get_json()
    shown = [(r["node"], r["fqdn"], r["roles"], r["status"]) for r in listed]
    assert shown == [(n["id"], n["fqdn"], ", ".join(n["roles"]), n["status"]) for n in rest]


def test_filters_and_pages_select_nodes(client):
    url = f"{ENV}?role=ceph-osd&status=ready&fqdn_contains=NODE-1&page=2&per_page=5"
    listed = rows(client, url, "node").rows
    expected = [
        str(n)
        for n in range(1, 1001)
        if scale_env.role(n) == "ceph-osd"
        and scale_env.status(n) == "ready"
        and "node-1" in scale_env.fqdn(n)
    ]
    assert [row["node"] for row in listed] == expected[5:10]
    page = client.get(url).get_data(as_text=True)
    assert f"Nodes 6–10 of {len(expected)} matching (of 1000)" in page
    assert 'rel="next"' in page and 'rel="prev"' in page


def test_a_page_past_the_last_is_empty_and_says_so(client):
    page = client.get(f"{ENV}?page=21").get_data(as_text=True)
    assert "No node on page 21: the list has 20 pages of 1000." in page
    assert rows(client, f"{ENV}?page=21", "node").rows == []


@pytest.mark.parametrize(
    ("query", "word"),
    [("per_page=501", "per_page"), ("page=0", "page"), ("page=x", "page"), ("per_page=²", "")],
)
def test_a_bad_page_is_a_400_naming_it(client, query, word):
    response = client.get(f"{ENV}?{query}")
    assert response.status_code == 400
    assert word in response.get_json()["message"]


def test_the_environment_page_links_its_commit(client, scale):
    head = scale.environment_repo(1).head()
    page = client.get(ENV).get_data(as_text=True)
    assert f'href="{ENV}/commits/{head}"' in page


# -- the node page ----------------------------------------------------------------------------
def test_a_controller_page_is_small_and_carries_no_provenance(client, scale):
    response = client.get(CONTROLLER)
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and len(response.data) <= MAX_NODE_PAGE_BYTES
    assert len(leaf_paths(page)) > 400
    assert 'class="provenance"' not in page  # fetched when a key is opened
    head = scale.environment_repo(1).head()
    assert f'href="{ENV}/commits/{head}"' in page


def test_the_filter_box_keeps_matching_keys_and_values(client):
    page = client.get(f"{CONTROLLER}?filter=node-2.scale").get_data(as_text=True)
    paths = leaf_paths(page)
    assert "fqdn" in paths and len(paths) < 20
    page = client.get(f"{CONTROLLER}?filter=no-such-text-anywhere").get_data(as_text=True)
    assert "No key or value contains" in page


# -- in Chromium ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(scale, tmp_path_factory):
    running = serve(scale.root, tmp_path_factory.mktemp("serve"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    assert CHROMIUM.exists(), ".ci/run installs Debian's chromium; install it to run this test"
    with playwright.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    problems = record_errors(page)
    yield page
    page.close()
    assert problems == []


def test_the_node_list_filters_and_pages_in_a_browser(server, page):
    page.goto(server.url + ENV)
    table = page.locator("table.nodes tbody tr")
    assert table.count() == 50
    page.get_by_label("Role").select_option("compute")
    page.get_by_label("Status").select_option("error")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**role=compute**")
    roles = page.locator("table.nodes td.roles").all_inner_texts()
    statuses = page.locator("table.nodes td.status").all_inner_texts()
    assert len(roles) == 50 and set(roles) == {"compute"} and set(statuses) == {"error"}
    page.get_by_label("FQDN contains").fill("node-10")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**fqdn_contains=node-10**")
    fqdns = page.locator("table.nodes td.fqdn").all_inner_texts()
    assert fqdns and all("node-10" in fqdn for fqdn in fqdns)


def test_a_key_of_a_controller_loads_its_provenance_when_opened(server, page):
    page.goto(server.url + CONTROLLER)
    key = page.locator(leaf("fqdn"))
    assert key.locator("dd.file").count() == 0
    key.locator("summary").press("Enter")
    assert key.locator("dd.file").inner_text() == "nodes/2/values/astute.yaml:71"
    assert key.locator("dd.commit a").get_attribute("href").startswith(f"{ENV}/commits/")
    timing = page.evaluate(
        "() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
    )
    assert timing > 0


def test_collapse_all_and_expand_all(server, page):
    page.goto(server.url + CONTROLLER)
    mappings = "ul.tree details.map"
    count_open = f"() => document.querySelectorAll('{mappings}[open]').length"
    total = page.evaluate(f"() => document.querySelectorAll('{mappings}').length")
    assert total > 50 and page.evaluate(count_open) == total
    page.get_by_role("button", name="Collapse all").click()
    assert page.evaluate(count_open) == 0
    page.get_by_role("button", name="Expand all").click()
    assert page.evaluate(count_open) == total


def test_search_hits_show_excerpts_and_fit_a_1280_px_window(server, page):
    for text in ("node-299", "needle"):
        page.goto(f"{server.url}/ui/environments/2/search?q={text}")
        hit = page.locator("tr.hit").first
        assert hit.locator("mark").inner_text().lower() == text
        assert len(hit.locator("code.value").inner_text()) < 200  # an excerpt, not 300 hosts
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 1280, (text, width)


# -- the sample's deployment graph (204 tasks) ------------------------------------------------
@pytest.fixture(scope="module")
def sample_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sample")
    store = Store.init(folder / "store")
    store.importer.load_tree(SAMPLE_DIR)
    running = serve(store.root, folder)
    yield running
    running.stop()


def test_the_sample_graph_is_drawn_fitted_to_its_box_with_zoom(sample_server, page):
    page.goto(f"{sample_server.url}/ui/environments/1/graph")
    assert page.locator("#no-drawing").count() == 0, page.locator("#no-drawing").inner_text()
    assert page.locator("svg a").count() >= 204
    box = page.locator("figure.graph").evaluate("f => f.clientWidth")
    fitted = page.locator("figure.graph svg").evaluate("s => s.getBoundingClientRect().width")
    assert 0 < fitted <= box
    page.get_by_role("button", name="Zoom in").click()
    zoomed = page.locator("figure.graph svg").evaluate("s => s.getBoundingClientRect().width")
    assert zoomed == pytest.approx(2 * fitted, rel=0.01)
    page.get_by_role("button", name="Fit").click()
    assert page.locator("figure.graph svg").evaluate(
        "s => s.getBoundingClientRect().width"
    ) == pytest.approx(fitted, rel=0.01)
