"""A blast radius of many nodes in the console: the commit page counts them and lists them a
page at a time (the REST diff has them all); a preview lists the first 50 with their changes
and names the others in a collapsed list. A short round of bench/scale_blast.py's 1,000."""

from __future__ import annotations

import re

import pytest

from console.forms import form_token
from gitstore.api.console import history
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

from .pages import rows

ALICE = Author("alice", "alice@example.com")
NODES = 55  # more than a preview lists with their changes (50)
SHADOWING = {7, 30}  # nodes whose own values set `net.mtu`


@pytest.fixture
def many(fuel_store):
    """NODES nodes with values of their own (two of them set net.mtu), then a global write
    of net.mtu: every node but the shadowing ones changes. Returns the write's commit."""
    changes = ChangeSet("facts of many nodes")
    for node in range(1, NODES + 1):
        mtu = "  mtu: 9000\n" if node in SHADOWING else ""
        text = f"fqdn: node-{node}.example\nnet:\n  vlan: {node}\n{mtu}"
        changes.put(f"nodes/{node}/values/astute.yaml", text.encode())
    fuel_store.environment_repo(1).update(lambda _: changes, ALICE)
    return fuel_store.config.put(1, [], "astute", "values", {"net": {"mtu": 1400}}, ALICE).commit


def _changed_nodes() -> list[str]:
    return [str(n) for n in range(1, NODES + 1) if n not in SHADOWING]


def _listed(client, url: str) -> list[str]:
    return [row["node"] for row in rows(client, url, "node").rows if row["class"] == ""]


def test_the_commit_page_counts_the_radius_and_pages_through_it(client, many, monkeypatch):
    monkeypatch.setattr(history, "RADIUS_PAGE", 20)
    url = f"/ui/environments/1/commits/{many}"
    page = client.get(url).get_data(as_text=True)
    assert 'data-radius-nodes="53"' in page
    assert "page 1 of 3" in page and f"/api/v1/config/environments/1/diff?from={many}~1" in page
    listed = [node for number in (1, 2, 3) for node in _listed(client, f"{url}?page={number}")]
    assert listed == _changed_nodes()  # every changed node once, in id order
    sections = re.findall(r'class="node-changes" data-node="(\d+)"', page)
    assert sections == _changed_nodes()[:20]  # the changes of the page's nodes only


def test_a_page_past_the_last_or_not_a_number_is_a_400_naming_it(client, many):
    for page in ("3", "0", "x"):
        response = client.get(f"/ui/environments/1/commits/{many}?page={page}")
        assert response.status_code == 400, page
        message = response.get_json()["message"]
        assert message.startswith(f"page {page}") or message.startswith(f"page {page!r}")


def test_a_preview_lists_50_nodes_with_changes_and_names_the_rest(client, many):
    edit = "/ui/environments/1/nodes/1/edit"
    data = {"resource": "astute", "key": "net.mtu", "level": "0", "op": "set", "value": "1300"}
    data.update(action="preview", csrf_token=form_token(client, edit))
    page = client.post(edit, data=data).get_data(as_text=True)
    changed = _changed_nodes()
    assert f"Nodes affected ({len(changed)})" in page
    assert re.findall(r'<tr data-node="([^"]+)">', page) == changed[:50]
    assert re.findall(r'class="more-node" href="[^"]+">(\d+)</a>', page) == changed[50:]
