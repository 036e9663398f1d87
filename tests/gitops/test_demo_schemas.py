"""The demo store (sample_repo/) types its resources: the push gate refuses a wrong type.

Real `git push` over smart HTTP to real gunicorn serving a store built from the sample, as
`make demo` builds it.
"""

from __future__ import annotations

import pytest
import requests

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR

from .helpers import commit_files, git, start_gunicorn

ASTUTE = "global/values/astute.yaml"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("demo")
    store = Store.init(workdir / "root")
    store.importer.load_tree(SAMPLE_DIR)
    server = start_gunicorn(store.root, workdir)
    yield server
    server.stop()


def test_a_push_of_deployment_id_one_is_refused_naming_the_key(demo, tmp_path):
    work = tmp_path / "work"
    git("clone", "-q", f"{demo.url}/git/environments/1.git", str(work))
    text = (work / ASTUTE).read_text()
    assert "deployment_id: 1\n" in text
    commit_files(work, {ASTUTE: text.replace("deployment_id: 1\n", "deployment_id: one\n")})

    pushed = git("push", "origin", "main", cwd=work, check=False)

    assert pushed.returncode != 0
    assert "key 'deployment_id': 'one' is not of type 'integer'" in pushed.stderr
    assert "schema of resource 'astute'" in pushed.stderr
    served = requests.get(
        demo.url + "/api/v1/config/environments/1/resources/astute/values", timeout=10
    ).json()
    assert served["deployment_id"] == 1


def test_the_same_value_over_rest_is_refused_too(demo):
    url = demo.url + "/api/v1/config/environments/1/resources/astute/values/keys/set"
    got = requests.put(url, json=[["deployment_id", "one"]], timeout=10)
    assert got.status_code == 400
    assert "is not of type 'integer'" in got.text
