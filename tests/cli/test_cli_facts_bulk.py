"""`gitstore facts upload`: machine-written facts (repeated keys) and the bulk `--dir` form.

Issue 35 items 1 and "Bulk facts upload", issue 40 item 1: a real Fuel `astute.yaml` repeats
keys in `network_scheme.roles` and lists every node of the cluster. Every test runs local and
over HTTP (the `gs` fixture).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml
from cli_helpers import PROJECT, assert_failure

from gitstore.configdb.values import Query

sys.path.insert(0, str(PROJECT / "bench"))
import scale_store  # noqa: E402 - bench/ is not a package

FIXTURE = PROJECT / "tests" / "data" / "facts" / "repeated-roles.yaml"
COMPUTE = PROJECT / "tests" / "data" / "fuel" / "astute" / "compute.yaml"


def commits(store, env_id: int = 1) -> int:
    return store.environment_repo(env_id).snapshot().version


def effective(store, node: str, resource: str = "astute") -> dict:
    query = Query(effective=True, reveal=True)
    return store.config.read(1, [("nodes", node)], resource, "values", query).data


def own(store, node: str | None, resource: str = "astute") -> dict:
    pairs = [("nodes", node)] if node else []
    return store.config.read(1, pairs, resource, "values", Query(reveal=True)).data


def test_repeated_keys_upload_keeping_the_last_value_with_one_warning_each(gs, tmp_path):
    folder = tmp_path / "hiera"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "astute.yaml")
    result = gs.ok("facts", "upload", "-e", "1", "-n", "1", "--dir", str(folder))
    assert own(gs.store, "1") == yaml.safe_load(FIXTURE.read_text())
    assert own(gs.store, "1")["network_scheme"]["roles"]["mgmt/vip"] == "br-ex"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    path = folder / "astute.yaml"
    assert warnings == [
        f"warning: {path}: key network_scheme.roles.storage is repeated (lines 9 and 13); "
        "the value of line 13 is kept",
        f"warning: {path}: key network_scheme.roles.mgmt/vip is repeated (lines 10 and 14); "
        "the value of line 14 is kept",
        f"warning: {path}: key network_scheme.roles.neutron/mesh is repeated (lines 11 and 15); "
        "the value of line 15 is kept",
    ]


def test_a_real_fuel_compute_node_uploads(gs, tmp_path):
    folder = tmp_path / "hiera"
    folder.mkdir()
    shutil.copy(COMPUTE, folder / "astute.yaml")
    result = gs.ok("facts", "upload", "-e", "1", "-n", "127", "--dir", str(folder))
    assert result.stderr.count("warning:") == 2
    assert effective(gs.store, "127") == yaml.safe_load(COMPUTE.read_text())


def test_documents_people_write_stay_strict(gs, tmp_path):
    text = FIXTURE.read_text()
    result = gs("config", "set", "-e", "1", "-r", "astute", "--format", "yaml", input=text)
    assert_failure(result, "key 'storage' is repeated in one mapping")


def _cluster(tmp_path: Path, count: int) -> tuple[Path, list]:
    folder = tmp_path / "cluster"
    return folder, scale_store.write_cluster(folder, count)


def test_bulk_upload_is_one_commit_and_every_node_reads_what_its_file_said(gs, tmp_path):
    folder, nodes = _cluster(tmp_path, 4)
    before = commits(gs.store)
    result = gs.ok("facts", "upload", "-e", "1", "--dir", str(folder))
    assert commits(gs.store) == before + 1
    assert "uploaded 4 nodes (8 files) to environment 1" in result.stdout
    assert result.stderr.count("warning:") == 8  # two repeated role keys in each file
    for node in nodes:
        expected = yaml.safe_load((folder / str(node.id) / "astute.yaml").read_text())
        assert effective(gs.store, str(node.id)) == expected
        assert "nodes" not in own(gs.store, str(node.id))  # the cluster's list is stored once
    assert set(own(gs.store, None)) == {"nodes", "network_metadata"}
    hiera = gs.store.hiera.node_document(1, "2", reveal=True, who="test").data
    expected = yaml.safe_load((folder / "2" / "astute.yaml").read_text())
    assert hiera["resources"]["astute"] == expected


def test_a_node_whose_lists_differ_gets_its_own_and_the_others_keep_theirs(gs, tmp_path):
    folder, nodes = _cluster(tmp_path, 3)
    gs.ok("facts", "upload", "-e", "1", "--dir", str(folder))
    changed = tmp_path / "one"
    changed.mkdir()
    text = (folder / "2" / "astute.yaml").read_text()
    (changed / "astute.yaml").write_text(text.replace("swift_zone: '3'", "swift_zone: 'z3'"))
    gs.ok("facts", "upload", "-e", "1", "-n", "2", "--dir", str(changed))
    assert effective(gs.store, "2") == yaml.safe_load((changed / "astute.yaml").read_text())
    for node in ("1", "3"):
        expected = yaml.safe_load((folder / node / "astute.yaml").read_text())
        assert effective(gs.store, node) == expected
    assert "nodes" not in own(gs.store, None)


def test_one_broken_file_refuses_the_whole_upload_naming_node_and_file(gs, tmp_path):
    folder, _ = _cluster(tmp_path, 3)
    broken = folder / "2" / "globals.yaml"
    broken.write_text("a: [1\n")
    before = commits(gs.store)
    result = gs("facts", "upload", "-e", "1", "--dir", str(folder))
    assert_failure(result, f"node 2: {broken}: ")
    assert "nothing uploaded" in result.stderr
    assert commits(gs.store) == before


def test_a_folder_naming_no_known_node_is_refused_when_there_is_an_inventory(gs, tmp_path):
    gs.store.nodes.create(1, {"id": 1, "fqdn": "node-1.test.domain.local", "roles": []})
    folder, _ = _cluster(tmp_path, 2)
    before = commits(gs.store)
    result = gs("facts", "upload", "-e", "1", "--dir", str(folder))
    assert_failure(result, "cannot find node '2'")
    assert commits(gs.store) == before
    shutil.rmtree(folder / "2")
    (folder / "1").rename(folder / "node-1.test.domain.local")
    gs.ok("facts", "upload", "-e", "1", "--dir", str(folder))
    assert effective(gs.store, "1")["fqdn"] == "node-1.test.domain.local"


@pytest.mark.parametrize(
    ("layout", "fragment"),
    [({}, "no node folders"), ({"1": {}}, "node 1: no *.yaml files")],
)
def test_bulk_input_that_holds_nothing_is_refused(gs, tmp_path, layout, fragment):
    folder = tmp_path / "empty"
    folder.mkdir()
    for node in layout:
        (folder / node).mkdir()
    assert_failure(gs("facts", "upload", "-e", "1", "--dir", str(folder)), fragment)


def test_values_json_cannot_carry_round_trip_exactly(gs, tmp_path):
    """A date and an integer key read back as PyYAML read them, one node or many."""
    text = "built: 2016-05-04\nvlans:\n  101: mgmt\nuid: '1'\n"
    single = tmp_path / "single"
    single.mkdir()
    (single / "astute.yaml").write_text(text)
    gs.ok("facts", "upload", "-e", "1", "-n", "1", "--dir", str(single))
    assert own(gs.store, "1") == yaml.safe_load(text)
    folder = tmp_path / "many"
    for node in ("2", "3"):
        (folder / node).mkdir(parents=True)
        (folder / node / "astute.yaml").write_text(text.replace("'1'", f"'{node}'"))
    gs.ok("facts", "upload", "-e", "1", "--dir", str(folder))
    assert own(gs.store, "3") == yaml.safe_load(text.replace("'1'", "'3'"))
