"""`gitstore init [--sample]`: an empty store, the sample deployment, and running it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from gitstore import Store, yamlio
from gitstore.configdb.importer import SAMPLE_DIR
from gitstore.configdb.values import Query

FUEL_RESOURCES = ["astute", "globals", "override/plugins", "override/node"]
FQDNS = {"1": "node-1.domain.tld", "2": "node-2.domain.tld", "3": "node-3.domain.tld"}


def init(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, ["init", *args], env=env)


def commits(repo) -> int:
    return sum(1 for _ in repo.first_parent_log())


def effective(store: Store, node: str, resource: str = "astute", **query):
    return store.config.read(
        1, [("nodes", node)], resource, "values", Query(effective=True, **query)
    ).data


@pytest.fixture
def sample_root(tmp_path) -> Path:
    root = tmp_path / "store"
    result = init("--root", str(root), "--sample")
    assert result.exit_code == 0, result.output
    return root


def test_init_creates_an_empty_store(tmp_path):
    root = tmp_path / "store"
    result = init("--root", str(root))
    assert result.exit_code == 0, result.output
    assert f"initialised gitstore at {root}" in result.output
    assert (root / "catalog.git" / "HEAD").is_file()
    assert (root / "environments").is_dir()
    store = Store(root)
    assert store.components.list().data == []
    assert store.environments.list().data == []


def test_init_reads_the_root_from_the_environment(tmp_path):
    root = tmp_path / "from-env"
    result = init(env={"GITSTORE_ROOT": str(root)})
    assert result.exit_code == 0, result.output
    assert (root / "catalog.git").is_dir()


def test_init_without_a_root_is_a_usage_error():
    result = init(env={"GITSTORE_ROOT": None})
    assert result.exit_code == 2
    assert "--root" in result.stderr


def test_sample_loads_the_fuel_component(sample_root):
    store = Store(sample_root)
    [component] = store.components.list().data
    assert component["name"] == "fuel"
    names = [d["name"] for d in component["resource_definitions"]]
    assert names == FUEL_RESOURCES


def test_sample_loads_environment_1_with_three_nodes(sample_root):
    store = Store(sample_root)
    assert store.environments.list().data == [
        {
            "id": 1,
            "name": "demo",
            "components": [1],
            "hierarchy_levels": ["nodes"],
            "merge": "deep",
            "release": 1,
            "plugins": [],
        }
    ]
    [level] = store.environments.levels(1).data
    assert level["name"] == "nodes"
    assert level["values"] == ["1", "2", "3"]


def test_sample_is_one_commit_per_repository(sample_root):
    store = Store(sample_root)
    assert commits(store.catalog()) == 2  # the empty catalog, then the sample's files
    assert commits(store.environment_repo(1)) == 1


@pytest.mark.parametrize("node_id", ["1", "2", "3"])
def test_nodes_answer_by_fqdn_as_by_id(sample_root, node_id):
    store = Store(sample_root)
    by_id = effective(store, node_id)
    assert effective(store, FQDNS[node_id]) == by_id
    assert by_id["fqdn"] == FQDNS[node_id]
    assert by_id["uid"] == node_id
    assert effective(store, FQDNS[node_id], "globals", key="node_name") == f"node-{node_id}"


def test_sample_shows_where_values_come_from(sample_root):
    store = Store(sample_root)
    assert effective(store, "3", key="libvirt_type", show_lookup=True) == ["kvm", "/nodes/3/"]
    assert effective(store, "1", key="libvirt_type", show_lookup=True) == ["qemu", "/"]
    ntp = effective(store, "2", key="external_ntp")
    assert ntp["ntp_list"] == "ntp1.example.org, ntp2.example.org"  # the global override
    assert ntp["metadata"]["label"] == "Upstream NTP"  # kept by the deep merge
    assert effective(store, "1", key="role") == "primary-controller"
    assert effective(store, "1", key="deployment_id") == 1


def test_sample_files_are_stored_as_written(sample_root):
    """Byte for byte, but for files with secrets: those are sealed (docs/secrets.md)."""
    store = Store(sample_root)
    snapshot = store.environment_repo(1).snapshot()
    source = SAMPLE_DIR / "environments" / "1"
    path = "nodes/3/overrides/astute.yaml"
    assert snapshot.read(path) == (source / path).read_bytes()
    path = "global/values/astute.yaml"
    written = (source / path).read_bytes()
    stored = snapshot.read(path)
    assert b"db_password: Toe5phw4" in written and b"Toe5phw4" not in stored
    revealed = store.config.read(1, [], "astute", "values", Query(reveal=True)).data
    assert revealed == yamlio.load(written)
    comments = [line for line in written.splitlines() if line.lstrip().startswith(b"#")]
    assert comments and all(line in stored for line in comments)


def test_rerun_keeps_data_and_changes_nothing(sample_root):
    store = Store(sample_root)
    store.config.update_keys(1, [("nodes", "2")], "astute", "overrides", "set", [["debug", True]])
    heads = (store.catalog().head(), store.environment_repo(1).head())

    result = init("--root", str(sample_root), "--sample")

    assert result.exit_code == 0, result.output
    assert "already initialised" in result.output
    assert "nothing changed" in result.output
    assert (store.catalog().head(), store.environment_repo(1).head()) == heads
    assert effective(store, "2", key="debug") is True


def test_sample_completes_a_store_made_without_it(tmp_path):
    root = tmp_path / "store"
    assert init("--root", str(root)).exit_code == 0
    result = init("--root", str(root), "--sample")
    assert result.exit_code == 0, result.output
    assert "environment 1: created" in result.output
    assert Store(root).environments.list().data[0]["id"] == 1


def test_sample_refuses_a_catalog_whose_ids_it_would_reuse(tmp_path):
    root = tmp_path / "store"
    Store.init(root).components.create({"name": "nova", "resource_definitions": []})

    result = init("--root", str(root), "--sample")

    assert result.exit_code == 1
    assert "component id 1 is already used" in result.stderr
    assert "Traceback" not in result.stderr
    store = Store(root)
    assert [c["name"] for c in store.components.list().data] == ["nova"]
    assert store.environments.list().data == []


def test_broken_sample_dir_names_the_file_and_loads_nothing(tmp_path):
    source = tmp_path / "sample"
    (source / "environments" / "1").mkdir(parents=True)
    (source / "environments" / "1" / "environment.yaml").write_text("id: [1\n")
    root = tmp_path / "store"

    result = init("--root", str(root), "--sample-dir", str(source))

    assert result.exit_code == 1
    assert "environments/1/environment.yaml" in result.stderr
    assert Store(root).environments.list().data == []


def test_sample_dir_environment_must_match_its_folder(tmp_path):
    source = tmp_path / "sample"
    (source / "environments" / "2").mkdir(parents=True)
    (source / "environments" / "2" / "environment.yaml").write_text("id: 1\nhierarchy: []\n")

    result = init("--root", str(tmp_path / "store"), "--sample-dir", str(source))

    assert result.exit_code == 1
    assert "does not match the folder name 2" in result.stderr
