"""The console pages through the real Flask app: content, provenance equal to the REST explain
answer, the version carried in links, secrets masked, 404 for what does not exist."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from console.pages import leaf_paths
from gitstore.backend.repository import Author

ALICE = Author("alice", "alice@example.com")
BOB = Author("bob", "bob@example.com")
NODE_PAGE = "/ui/environments/1/nodes/1"
EXPLAIN = "/api/v1/config/environments/1/nodes/1/resources/astute/values?effective&explain"


@pytest.fixture
def history(fuel_store):
    """Version 2: global astute values by alice; version 3: node 1's override by bob."""
    config = fuel_store.config
    first = config.put(1, [], "astute", "values", {"net": {"mtu": 1500, "vlan": 10}}, ALICE)
    second = config.put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 9000}}, BOB)
    return first, second


class _Links(HTMLParser):
    """Every href of a page, and the provenance `<dd>`s of a key (`_why` names it)."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.keys: dict[str, dict[str, str]] = {}
        self._path: str | None = None
        self._field: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "data-head" not in attrs:  # "back to head" drops the version
            self.hrefs.append(attrs.get("href", ""))
        if tag == "dd" and self._path:
            self._field = attrs.get("class")

    def handle_endtag(self, tag):
        if tag == "dd":
            self._field = None

    def handle_data(self, data):
        if self._field and data.strip():
            field = self.keys[self._path]
            field[self._field] = (field.get(self._field, "") + data).strip()


def _page(client, url: str) -> _Links:
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    assert response.content_type.startswith("text/html")
    parser = _Links()
    parser.feed(response.get_data(as_text=True))
    return parser


def _why(client, url: str, path: str) -> dict[str, str]:
    """The provenance fields of key `path` of resource astute on the node page `url`, from the
    fragment the page fetches when the key is opened (the `data-why` URL of its tree)."""
    page = client.get(url).get_data(as_text=True)
    assert path in leaf_paths(page)
    base = re.search(r'<ul class="tree" data-why="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert "resource=astute" in base
    parser = _Links()
    parser.keys[path] = {}
    parser._path = path
    response = client.get(f"{base}&fragment=1&key={path}")
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    parser.feed(response.get_data(as_text=True))
    return parser.keys[path]


def test_environments_list_names_nodes_and_last_change(client, history):
    page = client.get("/ui/").get_data(as_text=True)
    assert 'href="/ui/environments/1"' in page
    assert history[1].commit[:10] in page and "bob" in page
    row = re.search(r"<tr>\s*<td><a[^>]*>1</a></td>.*?</tr>", page, re.S).group(0)
    assert re.search(r"<td>1</td>", row)  # one node: the nodes/1 folder


def test_environment_page_lists_levels_nodes_resources_and_commits(client, history):
    page = client.get("/ui/environments/1").get_data(as_text=True)
    assert re.search(r"<strong>nodes</strong>:\s*1 values", page)
    assert 'href="/ui/environments/1/nodes/1"' in page
    assert "<code>astute</code>" in page and "<code>override/plugins</code>" in page
    assert history[0].commit[:10] in page and history[1].commit[:10] in page


def test_node_provenance_equals_the_rest_explain_answer(client, history):
    explained = {item["path"]: item for item in client.get(EXPLAIN).get_json()["keys"]}
    keys = {path: _why(client, NODE_PAGE, path) for path in ("net.mtu", "net.vlan")}
    for path in ("net.mtu", "net.vlan"):
        why, shown = explained[path], keys[path]
        winner = why["layers"][why["winner"]]
        assert shown["commit"] == why["commit"]
        assert shown["author"] == why["author"]
        assert shown["date"] == why["date"]
        assert shown["file"] == f"{winner['file']}:{winner['line']}"
        assert shown["level"] == f"{winner['scope']} ({winner['kind']})"
    assert keys["net.mtu"]["author"] == "bob" and keys["net.vlan"]["author"] == "alice"
    assert keys["net.mtu"]["message"] == "config: set nodes/1 astute overrides (1 keys)"


def test_version_is_carried_in_every_console_link(client, history):
    pinned = f"{NODE_PAGE}?version=3"
    for url in ("/ui/?version=3", "/ui/environments/1?version=3", pinned):
        hrefs = [href for href in _page(client, url).hrefs if href.startswith("/ui/")]
        assert "/ui/environments/1?version=3" in hrefs, hrefs
        # a commit or label row links to its own version; every other link keeps the pin
        assert all("version=" in href for href in hrefs), (url, hrefs)


def test_a_version_shows_the_values_of_then(client, fuel_store, history):
    fuel_store.config.put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 1}}, BOB)
    then = _why(client, f"{NODE_PAGE}?version=3", "net.mtu")
    now = _why(client, NODE_PAGE, "net.mtu")
    assert then["commit"] == history[1].commit and now["commit"] != history[1].commit
    page = client.get(f"{NODE_PAGE}?version=3").get_data(as_text=True)
    assert '<code class="value">9000</code>' in page


def test_secrets_are_masked(client, fuel_store, history):
    response = client.patch("/api/v1/config/environments/1", json={"secret_keys": ["db.pass"]})
    assert response.status_code == 200, response.get_json()
    fuel_store.config.put(1, [], "globals", "values", {"db": {"pass": "hunter2-secret"}}, ALICE)
    page = client.get(NODE_PAGE).get_data(as_text=True)
    assert "db.pass" in leaf_paths(page)
    assert "hunter2-secret" not in page


@pytest.mark.parametrize(
    "url", ["/ui/environments/9", "/ui/environments/9/nodes/1", "/ui/environments/1/nodes/7"]
)
def test_unknown_environment_or_node_is_a_json_404(client, history, url):
    response = client.get(url)
    assert response.status_code == 404
    assert response.get_json()["status"] == 404


def test_the_style_sheet_is_served(client):
    with client.get("/ui/static/console.css") as response:
        assert response.status_code == 200 and response.content_type.startswith("text/css")


def test_the_version_form_left_blank_reads_the_head(client, history):
    assert _why(client, f"{NODE_PAGE}?version=", "net.mtu")["commit"] == history[1].commit
