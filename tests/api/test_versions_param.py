"""`version=N|<revision>` on every GET, the headers naming what was served, reads never write."""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse
from pathlib import Path

import pytest
import yaml
from short_ids import short_id

from .helpers import API, ENV, assert_error

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"

CATALOG_GETS = [
    f"{API}/components",
    f"{API}/components/1",
    f"{API}/resource_definitions",
    f"{API}/resource_definitions/1",
    f"{API}/resource_definitions?component_id=1",
]
ENV_GETS = [
    ENV,
    f"{ENV}/hierarchy_levels",
    f"{ENV}/hierarchy_levels/nodes",
    f"{ENV}/resources/astute/values",
    f"{ENV}/nodes/1/resources/astute/overrides",
    f"{ENV}/nodes/1/resources/astute/values?effective",
    f"{ENV}/nodes/1/resources/astute/values?effective&show_lookup",
]


@pytest.fixture
def node_one(client):
    """Node 1 holds data (another resource's), so reads of it are reads of a known node."""
    assert client.put(f"{ENV}/nodes/1/resources/globals/values", json={"n": 1}).status_code == 204


def _with(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


@pytest.mark.parametrize("url", CATALOG_GETS + ENV_GETS)
def test_every_get_names_its_commit_and_version(fuel_store, client, node_one, url):
    repo = fuel_store.catalog() if url in CATALOG_GETS else fuel_store.environment_repo(1)
    response = client.get(url)
    assert response.status_code == 200
    assert response.headers["X-Gitstore-Commit"] == repo.head()
    assert response.headers["X-Gitstore-Version"] == str(repo.depth(repo.head()))


@pytest.mark.parametrize("url", CATALOG_GETS + ENV_GETS)
def test_every_get_accepts_version_forms(fuel_store, client, node_one, url):
    repo = fuel_store.catalog() if url in CATALOG_GETS else fuel_store.environment_repo(1)
    head = repo.head()
    number = str(repo.depth(head))
    for version in (number, head, short_id(head), "main", "HEAD"):
        response = client.get(_with(url, f"version={version}"))
        assert response.status_code == 200, (version, response.get_data(as_text=True))
        assert response.headers["X-Gitstore-Commit"] == head
        assert response.headers["X-Gitstore-Version"] == number


@pytest.mark.parametrize("url", CATALOG_GETS + ENV_GETS)
def test_unknown_version_is_404_naming_it(client, url):
    for version in ("nope", "99", "0", "main~50", "deadbeef", "-1"):
        assert_error(client.get(_with(url, f"version={version}")), 404, version)


@pytest.mark.parametrize("url", [CATALOG_GETS[0], ENV_GETS[3]])
def test_empty_version_is_400(client, url):
    assert_error(client.get(_with(url, "version=")), 400, "version")


@pytest.mark.parametrize("version", ["a%20b", "%1F", "a%1Fb", "%C2%85", "%C2%A0", "main%E2%80%A8"])
def test_a_version_with_a_space_or_control_character_is_400_as_the_spec_says(client, version):
    """No revision holds a space or a control character; the served document's pattern for
    `version` refuses them too, whichever regex dialect reads it (schemathesis generated
    `%1F`: not a space to JSON Schema's `\\s`, but one to Python's `str.strip`)."""
    spec = yaml.safe_load(OPENAPI.read_text())
    pattern = spec["components"]["parameters"]["Version"]["schema"]["pattern"]
    text = urllib.parse.unquote(version)
    assert not re.search(pattern, text)
    assert_error(client.get(f"{ENV_GETS[3]}?version={version}"), 400, "version")


def test_catalog_versions(client):
    client.post(f"{API}/components", json={"name": "nova"})
    assert [c["name"] for c in client.get(f"{API}/components?version=2").get_json()] == ["fuel"]
    assert client.get(f"{API}/components?version=1").get_json() == []
    assert_error(client.get(f"{API}/components/2?version=main~1"), 404, "2")
    now = client.get(f"{API}/components?version=3")
    assert [c["name"] for c in now.get_json()] == ["fuel", "nova"]
    assert now.headers["X-Gitstore-Version"] == "3"


def test_environment_versions(client):
    url = f"{ENV}/nodes/1/resources/astute/values"
    first = client.put(url, json={"v": 1}).headers["X-Gitstore-Commit"]
    client.put(url, json={"v": 2})
    client.put(ENV, json={"name": "later"})
    assert client.get(f"{url}?version=2").get_json() == {"v": 1}
    assert client.get(f"{url}?version={first}").get_json() == {"v": 1}
    assert client.get(f"{url}?version={short_id(first, 10)}").get_json() == {"v": 1}
    assert client.get(f"{url}?version=main~1").get_json() == {"v": 2}
    assert client.get(f"{url}?version=1").get_json() == {}
    assert client.get(f"{url}?version=main~2&effective&key=v").get_json() == 1
    assert client.get(f"{ENV}?version=3").get_json()["name"] is None
    assert client.get(f"{ENV}/hierarchy_levels/nodes?version=1").get_json()["values"] == []


def test_version_names_a_tag(fuel_store, client):
    url = f"{ENV}/resources/globals/values"
    commit = client.put(url, json={"t": 1}).headers["X-Gitstore-Commit"]
    client.put(url, json={"t": 2})
    git = ["git", "-C", str(fuel_store.environment_path(1))]
    subprocess.run([*git, "tag", "release-1", commit], check=True, env=os.environ)
    response = client.get(f"{url}?version=release-1")
    assert response.get_json() == {"t": 1}
    assert response.headers["X-Gitstore-Commit"] == commit


def test_version_refers_to_the_repository_addressed(client):
    client.put(f"{ENV}/resources/astute/values", json={"x": 1})
    client.put(f"{ENV}/resources/astute/values", json={"x": 2})
    client.put(f"{ENV}/resources/astute/values", json={"x": 3})
    # The catalog has 2 commits; the environment 4: version=4 exists only for the environment.
    assert client.get(f"{ENV}/resources/astute/values?version=4").get_json() == {"x": 3}
    assert_error(client.get(f"{API}/components?version=4"), 404, "4")


def test_head_answers_like_get_without_a_body(fuel_store, client, node_one):
    url = f"{ENV}/nodes/1/resources/astute/values?effective"
    response = client.head(url)
    assert response.status_code == 200 and response.get_data() == b""
    assert response.headers["X-Gitstore-Commit"] == fuel_store.environment_repo(1).head()


def test_an_unchanged_answer_is_304_with_its_etag(client, node_one):
    url = f"{ENV}/nodes/1/resources/astute/values?effective"
    first = client.get(url)
    again = client.get(url, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    client.put(f"{ENV}/resources/astute/values", json={"changed": True})
    assert client.get(url, headers={"If-None-Match": first.headers["ETag"]}).status_code == 200


def test_a_get_keeps_every_precondition_and_its_length(client, node_one):
    url = f"{ENV}/nodes/1/resources/astute/values?effective"
    first = client.get(url)
    etag = first.headers["ETag"]
    assert first.headers["Content-Length"] == str(len(first.get_data()))
    assert client.get(url, headers={"If-Match": '"another"'}).status_code == 412
    assert client.get(url, headers={"If-Match": etag}).status_code == 200
    # A range is not offered: the whole answer, whatever If-Range says.
    ranged = client.get(url, headers={"Range": "bytes=0-1", "If-Range": etag})
    assert ranged.status_code in (200, 304) and "Content-Range" not in ranged.headers
    assert client.get(url, headers={"Range": "bytes=0-1"}).get_data() == first.get_data()


def _repository_state(root) -> dict[str, float]:
    """Every file below the store root with its size and modification time."""
    state = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name == "gitstore-write.lock":
                continue
            path = os.path.join(folder, name)
            stat = os.stat(path)
            state[path] = (stat.st_size, stat.st_mtime_ns)
    return state


def test_reads_never_write(fuel_store, client, inventory):
    client.put(f"{ENV}/nodes/1/resources/astute/values", json={"a": {"b": [1]}})
    before = _repository_state(fuel_store.root)
    urls = (
        CATALOG_GETS
        + ENV_GETS
        + [
            f"{ENV}/nodes/42/resources/astute/values",
            f"{ENV}/nodes/node-3.domain.tld/resources/globals/overrides?effective",
            f"{ENV}/nodes/new-node/resources/astute/values?effective&show_lookup&key=a",
            f"{ENV}/nodes/1/resources/astute/values?key=a.b.0",
            f"{ENV}/nodes/1/resources/astute/values?key=a.missing",
            f"{ENV}/nodes/1/resources/astute/values/keys/set",
            f"{ENV}/nodes/1/resources/astute/values?version=1",
            f"{API}/environments",
        ]
    )
    statuses = {client.get(url).status_code for url in urls}
    assert statuses == {200, 404, 405, 409}  # 404: nodes 42 and new-node are unknown
    assert _repository_state(fuel_store.root) == before


@pytest.mark.parametrize(
    "url",
    [
        f"{API}/environments",
        "/api/v1/clusters",
        "/api/v1/nodes",
        "/api/v1/transactions",
        "/api/v1/status",
        f"{ENV}/labels",
    ],
)
def test_a_read_that_has_no_version_refuses_one_naming_it(client, url):
    # They answered 200 whatever `version` said (`labels?version=garbage` listed the labels).
    assert_error(client.get(f"{url}?version=2"), 400, "version", "takes no")


def test_a_commit_off_main_has_no_version_number(fuel_store, client):
    # A review branch's commit was given its depth on its own chain: the number of another
    # commit of main ("version 8" named two commits).
    repo = fuel_store.environment_repo(1)
    url = f"{ENV}/resources/astute/values"
    assert client.put(url, json={"on": "main"}).status_code == 204
    base = repo.head()
    assert client.put(url, json={"on": "branch"}).status_code == 204
    branch = repo.head()
    subprocess.run(["git", "update-ref", "refs/heads/review", branch], cwd=repo.path, check=True)
    subprocess.run(["git", "update-ref", "refs/heads/main", base], cwd=repo.path, check=True)
    assert client.put(url, json={"on": "main again"}).status_code == 204
    on_main = client.get(url)
    at_branch = client.get(f"{url}?version=review")
    assert at_branch.get_json() == {"on": "branch"}
    assert at_branch.headers["X-Gitstore-Commit"] == branch
    assert "X-Gitstore-Version" not in at_branch.headers
    number = on_main.headers["X-Gitstore-Version"]
    assert client.get(f"{url}?version={number}").headers["X-Gitstore-Commit"] != branch
    by_id = client.get(f"{url}?version={base}")
    assert int(by_id.headers["X-Gitstore-Version"]) == int(number) - 1
