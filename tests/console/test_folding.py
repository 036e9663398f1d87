"""Large subtrees of the node page are sent folded (issue 35: a controller's page in a 1,000-node
Fuel cluster was 5 MB): a node whose values hold a long list (`nodes`) and a mapping of many
small mappings (`network_metadata.nodes`), as Fuel's astute.yaml does, gets a small page whose
placeholders fetch the subtree (`.../subtree?resource=&key=`) at the page's commit, with the
page's filter and masking and the REST reads' access rules; a bad key path is a 4xx. Checked
with the Flask client and, opening the placeholders, in Debian's Chromium (with the axe-core
and keyboard checks of test_browser.py)."""

from __future__ import annotations

import json
import re

import pytest
from access.helpers import add_users, bearer, serve
from chromium import record_errors
from markupsafe import escape

from console.forms import ALICE, USERS, build_store, sign_in
from console.pages import leaf, leaf_paths
from console.test_browser import (  # noqa: F401 - fixtures
    _assert_every_control_reached,
    axe,
    browser,
    driver,
)
from gitstore import Store
from gitstore.api import create_app

NODE = "/ui/environments/1/nodes/1"
SUBTREE = f"{NODE}/subtree"
VALUES = "/api/v1/config/environments/1/nodes/1/resources/astute/values?effective"
#: Fuel's cluster lists at this many nodes: ~9,000 entries, 0.6 MB as one page unfolded.
LISTED = 1500
#: The node page of this node, folded (the 1,000-node bench's target is 400 KB).
MAX_PAGE_BYTES = 24 * 1024
SECRET = "hunter2-secret"
#: Keys of one mapping of scalars: shown a thousand at a time (render.PAGE_KEYS).
HOSTS = 2500


def _member(number: int) -> dict:
    return {"fqdn": f"node-{number}.example", "uid": str(number), "role": "compute"}


def _metadata(number: int) -> dict:
    roles = {name: f"10.{number // 250}.{number % 250}.{index}" for index, name in enumerate("abc")}
    return {"uid": str(number), "name": f"node-{number}", "network_roles": roles}


def _astute() -> dict:
    members = range(1, LISTED + 1)
    return {
        "net": {"mtu": 1500, "vlan": 10},
        "nodes": [_member(number) for number in members],
        "network_metadata": {
            "nodes": {f"node-{number}": _metadata(number) for number in members},
            "vips": {"management": "10.0.0.2"},
        },
    }


def _fill(store: Store) -> None:
    store.config.put(1, [], "astute", "values", _astute(), ALICE)
    many = {f"key_{index}": index for index in range(1200)}  # `db` folds, its secret inside
    hosts = {f"host-{index}": f"10.9.{index // 250}.{index % 250}" for index in range(HOSTS)}
    document = {"db": {"pass": SECRET, **many}, "hosts": hosts}
    store.config.put(1, [], "globals", "values", document, ALICE)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    """build_store's environment 1 (nodes 1-3, the secret `db.pass` of globals) with the
    cluster's lists in astute, on an open store."""
    store = build_store(tmp_path_factory.mktemp("folding") / "store")
    _fill(store)
    return store


@pytest.fixture(scope="module")
def client(store):
    return create_app({"TESTING": True}, store=store).test_client()


def _folds(page: str) -> dict[str, str]:
    """The folded subtrees of a page or fragment: their URL by key (the link's `key=`)."""
    found = {}
    for href in re.findall(r'<a class="fold" href="([^"]+)"', page):
        url = href.replace("&amp;", "&")
        found[re.search(r"[?&]key=([^&]+)", url).group(1)] = url
    return found


def _get(client, url: str, **kwargs) -> str:
    response = client.get(url, **kwargs)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_data(as_text=True)


# -- the page and its fragments ----------------------------------------------------------------
def test_the_cluster_lists_are_folded_and_the_page_is_small(client, store):
    response = client.get(NODE)
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and len(response.data) <= MAX_PAGE_BYTES
    assert {"net.mtu", "net.vlan"} <= set(leaf_paths(page))  # small mappings stay open
    assert "node-1500.example" not in page and "network_roles" not in page
    folds = _folds(page)
    assert set(folds) == {"nodes", "network_metadata", "db", "hosts"}
    head = store.environment_repo(1).head()
    assert all(f"version={head}" in url for url in folds.values())  # the page's revision
    assert "(a list of 1,500 items, 6,000 entries in all)" in page


def test_a_folded_mapping_opens_to_its_keys_folded_again_when_crowded(client):
    metadata = _get(client, _folds(_get(client, NODE))["network_metadata"] + "&fragment=1")
    assert "<html" not in metadata
    assert leaf_paths(f'<ul class="tree">{metadata}</ul>') == ["vips.management"]
    listed = _get(client, _folds(metadata)["network_metadata.nodes"] + "&fragment=1")
    inner = _folds(listed)  # 1,500 small mappings: each folded, one line each, 1,000 at once
    assert len(inner) == 1000 and "network_roles" not in listed
    assert "Show keys 1,001–1,500 of 1,500</a></li>" in listed
    one = _get(client, inner["network_metadata.nodes.node-7"] + "&fragment=1")
    paths = leaf_paths(f'<ul class="tree">{one}</ul>')
    assert paths == ["uid", "name", "network_roles.a", "network_roles.b", "network_roles.c"]
    assert '<code class="value">&quot;10.0.7.1&quot;</code>' in one


def test_a_folded_list_opens_to_the_value_rest_serves(client):
    fragment = _get(client, _folds(_get(client, NODE))["nodes"] + "&fragment=1")
    shown = re.fullmatch(r'<code class="value">(.*)</code>\s*', fragment, re.S).group(1)
    served = client.get(VALUES).get_json()["nodes"]
    assert shown == escape(json.dumps(served, ensure_ascii=False))


def test_without_javascript_a_placeholder_links_to_the_subtree_page(client):
    page = _get(client, _folds(_get(client, NODE))["network_metadata"])
    assert "<h1><code>astute</code> <code>network_metadata</code> at node 1" in page
    assert '<ul class="tree" data-prefix="network_metadata"' in page
    assert 'href="/ui/environments/1/nodes/1?version=' in page  # the node page, same commit
    assert "network_metadata.nodes" in _folds(page)


def test_the_filter_searches_folded_subtrees_too(client):
    page = _get(client, f"{NODE}?filter=NODE-1234")
    paths = leaf_paths(page)
    assert [p for p in paths if p.startswith("network_metadata.")] == [
        "network_metadata.nodes.node-1234.uid",
        "network_metadata.nodes.node-1234.name",
        "network_metadata.nodes.node-1234.network_roles.a",
        "network_metadata.nodes.node-1234.network_roles.b",
        "network_metadata.nodes.node-1234.network_roles.c",
    ]  # small once filtered: shown open
    folds = _folds(page)
    assert set(folds) == {"nodes"}  # the list holds it, and stays a value (whole, folded)
    assert "filter=NODE-1234" in folds["nodes"]
    assert "net.mtu" not in paths


def test_a_placeholder_reads_the_revision_of_its_page(client, store):
    link = _folds(_get(client, NODE))["network_metadata"]
    store.config.put(1, [], "astute", "values", {"net": {"mtu": 1500}}, ALICE)
    try:
        assert "vips" in _get(client, link + "&fragment=1")  # the page's commit, not the head
        assert client.get(SUBTREE + "?resource=astute&key=network_metadata").status_code == 404
    finally:
        _fill(store)


@pytest.mark.parametrize(
    ("query", "status", "named"),
    [
        ("resource=astute&key=no_such_key", 404, "no_such_key"),
        ("resource=astute&key=network_metadata.nodes.node-9999", 404, "node-9999"),
        ("resource=astute&key=nodes.3", 404, "nodes.3"),  # a list is a leaf: no key into it
        ("resource=astute&key=net.mtu", 400, "net.mtu"),  # a value, nothing to open
        ("resource=astute&key=net..mtu", 400, "net..mtu"),
        ("resource=astute&key=" + "a" * 5000, 400, "longer than"),
        ("resource=astute&key=" + ".".join(["a"] * 65), 400, "segments"),
        ("resource=globals&key=hosts&start=x", 400, "start"),
        ("resource=globals&key=hosts&start=-1", 400, "start"),
        ("resource=globals&key=hosts&start=2500", 400, "start"),
        ("key=net", 400, "resource"),
        ("resource=nothing&key=net", 404, "nothing"),
        ("resource=astute&key=net&version=no-such-version", 422, "no-such-version"),
    ],
)
def test_a_bad_key_path_is_a_4xx_naming_it(client, query, status, named):
    for fragment in ("", "&fragment=1"):
        response = client.get(f"{SUBTREE}?{query}{fragment}")
        assert response.status_code == status, response.get_data(as_text=True)[:300]
        error = response.get_json()
        assert error["status"] == status and named in error["message"]


def test_a_long_mapping_shows_a_thousand_keys_at_a_time(client):
    url, fragments, seen = _folds(_get(client, NODE))["hosts"], 0, []
    while url:
        fragment = _get(client, url + "&fragment=1")
        seen += leaf_paths(f'<ul class="tree">{fragment}</ul>')
        fragments += 1
        more = re.search(r'<li class="more"><a class="more" href="([^"]+)"', fragment)
        url = more.group(1).replace("&amp;", "&") if more else None
    assert fragments == 3 and seen == [f"host-{index}" for index in range(HOSTS)]
    page = _get(client, f"{SUBTREE}?resource=globals&key=hosts&start=2000")
    assert "Show keys" not in page and len(leaf_paths(page)) == 500


def test_a_resource_with_many_keys_shows_a_thousand_then_a_link(tmp_path):
    store = build_store(tmp_path / "store")
    wide = {f"key_{index}": index for index in range(1500)}
    store.config.put(1, [], "astute", "values", wide, ALICE)
    client = create_app({"TESTING": True}, store=store).test_client()
    page = _get(client, NODE)
    assert [p for p in leaf_paths(page) if p.startswith("key_")] == list(wide)[:1000]
    assert "Show keys 1,001–1,500 of 1,500" in page
    link = re.search(r'<a class="more" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert "resource=astute" in link and "key=&" in link  # the resource's own keys
    rest = _get(client, link + "&fragment=1")
    assert leaf_paths(f'<ul class="tree">{rest}</ul>') == list(wide)[1000:]


# -- secrets and access ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """The same environment on a guarded store: build_store's users, and a reader of
    environment 2 only."""
    store = build_store(tmp_path_factory.mktemp("guarded") / "store")
    _fill(store)
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    tokens = add_users(store.root, {**USERS, "reader2": ["reader:env:2"]})
    return create_app({"TESTING": True}, store=store), tokens


def test_a_folded_subtree_masks_secrets_as_the_page_does(guarded):
    app, tokens = guarded
    reader = bearer(tokens["reader"])
    page = _get(app.test_client(), NODE, headers=reader)
    assert SECRET not in page
    link = _folds(page)["db"]
    for url in (link, link + "&fragment=1"):
        shown = _get(app.test_client(), url, headers=reader)
        assert (
            SECRET not in shown and '<code>pass</code>: <code class="value">&quot;******' in shown
        )
    keeper = app.test_client()
    sign_in(keeper, "keeper")
    revealed = keeper.get(NODE + "?reveal=1").get_data(as_text=True)
    assert SECRET not in revealed  # folded: the page does not carry it
    link = _folds(revealed)["db"]
    assert "reveal=1" in link
    answer = keeper.get(link + "&fragment=1")
    assert answer.status_code == 200 and SECRET in answer.get_data(as_text=True)
    assert answer.headers["Cache-Control"] == "private, no-store"


def test_a_folded_subtree_follows_the_access_rules(guarded):
    app, tokens = guarded
    url = f"{SUBTREE}?resource=globals&key=db&fragment=1"
    assert app.test_client().get(url).status_code == 401
    assert app.test_client().get(url, headers=bearer(tokens["reader2"])).status_code == 403
    writer = app.test_client()
    sign_in(writer, "writer1")
    assert writer.get(url).status_code == 200
    assert writer.get(url + "&reveal=1").status_code == 403  # revealing needs `secrets`
    assert app.test_client().get(url, headers=bearer(tokens["reader"])).status_code == 200


# -- in Chromium -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(store, tmp_path_factory):
    running = serve(store.root, tmp_path_factory.mktemp("serve"))
    yield running
    running.stop()


@pytest.fixture
def page(browser):  # noqa: F811
    page = browser.new_page()
    problems = record_errors(page)
    yield page
    page.close()
    assert problems == []


def test_opening_folded_subtrees_in_a_browser_shows_their_entries(server, page):
    page.goto(server.url + NODE)
    metadata = page.locator(leaf("network_metadata"))
    assert metadata.get_attribute("open") is None and "folded" in metadata.get_attribute("class")
    metadata.locator("summary").first.click()
    page.locator(leaf("network_metadata.vips.management")).wait_for()
    page.locator(leaf("network_metadata.nodes")).locator("summary").first.click()
    node = page.locator(leaf("network_metadata.nodes.node-734"))
    node.locator("summary").first.click()
    key = page.locator(leaf("network_metadata.nodes.node-734.network_roles.b"))
    assert key.locator("code.value").inner_text() == '"10.2.234.1"'
    key.locator("summary").press("Enter")  # its provenance: the path runs through the folds
    assert key.locator("dd.file").inner_text().startswith("global/values/astute.yaml:")
    listed = page.locator(leaf("nodes"))
    listed.locator("summary").click()
    value = listed.locator("summary code.value")
    value.filter(has_text="node-1500.example").wait_for()
    assert listed.locator("dd.file").inner_text().startswith("global/values/astute.yaml:")


def test_the_next_keys_of_a_long_mapping_load_in_place(server, page):
    page.goto(server.url + NODE)
    page.locator(leaf("hosts")).locator("summary").first.click()
    page.locator(leaf("hosts.host-999")).wait_for()
    assert page.locator(leaf("hosts.host-1000")).count() == 0
    page.get_by_role("link", name="Show keys 1,001–2,000 of 2,500").click()
    page.locator(leaf("hosts.host-1999")).wait_for()
    assert page.url == server.url + NODE  # fetched in place, not followed
    key = page.locator(leaf("hosts.host-1500"))
    key.locator("summary").click()
    assert key.locator("dd.file").inner_text().startswith("global/values/globals.yaml:")


def test_expand_all_leaves_unopened_folds_folded(server, page):
    page.goto(server.url + NODE)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.get_by_role("button", name="Expand all").click()
    folded = "ul.tree details.folded"
    assert page.evaluate(f"() => document.querySelectorAll('{folded}[open]').length") == 0
    assert page.evaluate("() => document.querySelectorAll('ul.tree details.map[open]').length")
    assert not [url for url in requests if "/subtree" in url]
    page.locator(leaf("db")).locator("summary").first.click()
    page.locator(leaf("db.key_500")).wait_for()
    page.get_by_role("button", name="Collapse all").click()
    assert page.evaluate("() => document.querySelectorAll('ul.tree details.map[open]').length") == 0
    page.get_by_role("button", name="Expand all").click()
    assert page.locator(leaf("db")).get_attribute("open") is not None  # fetched: it opens
    assert page.locator(leaf("network_metadata")).get_attribute("open") is None


@pytest.mark.parametrize("opened", [True, False])
def test_folded_pages_are_accessible_and_keyboard_reachable(server, page, axe, opened):  # noqa: F811
    """The node page with a folded mapping opened (its keys fetched, one folded again), and
    the subtree's own page that a browser without JavaScript reaches."""
    if opened:
        page.goto(server.url + NODE)
        page.locator(leaf("network_metadata")).locator("summary").first.click()
        page.locator(leaf("network_metadata.vips.management")).wait_for()
    else:
        page.goto(f"{server.url}{SUBTREE}?resource=astute&key=network_metadata")
    assert SECRET not in page.content()
    page.add_script_tag(path=str(axe))
    violations = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
             .filter(v => ['serious', 'critical'].includes(v.impact))
             .map(v => `${v.id}: ${v.help} (${v.nodes.map(n => n.target).join(' ')})`)"""
    )
    assert violations == []
    _assert_every_control_reached(page)


def test_the_subtree_page_filters_its_keys(client):
    url = f"{SUBTREE}?resource=astute&key=network_metadata.nodes&filter=node-1234"
    page = _get(client, url)
    assert 'name="key" value="network_metadata.nodes"' in page  # the form keeps the subtree
    assert leaf_paths(page) == [
        "node-1234.uid",
        "node-1234.name",
        "node-1234.network_roles.a",
        "node-1234.network_roles.b",
        "node-1234.network_roles.c",
    ]
