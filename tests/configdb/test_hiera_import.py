"""`import hiera` refuses bad input with the file, line and key, and writes nothing.

Real files in a temporary control repository, the real store; the eyaml values are the ones the
real `eyaml encrypt` made for tests/data/hiera-control.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cli.main import cli
from gitstore import Store
from gitstore.errors import InvalidInput

CONTROL = Path(__file__).resolve().parents[1] / "data" / "hiera-control"
KEYS = CONTROL / "keys"


@pytest.fixture
def repo(tmp_path):
    """A small control repository: common, one role file, one eyaml file of the real repo."""
    (tmp_path / "data/role").mkdir(parents=True)
    config = {
        "version": 5,
        "defaults": {"datadir": "data", "data_hash": "yaml_data"},
        "hierarchy": [
            {"name": "Role", "path": "role/%{facts.role}.yaml"},
            {"name": "Secrets", "lookup_key": "eyaml_lookup_key", "path": "common.eyaml"},
            {"name": "Common", "path": "common.yaml"},
        ],
    }
    (tmp_path / "hiera.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (tmp_path / "data/common.yaml").write_text("a::b::c: 1\nplain: x\n")
    (tmp_path / "data/role/web.yaml").write_text("a::b::c: 2\n")
    shutil.copy(CONTROL / "data/common.eyaml", tmp_path / "data/common.eyaml")
    return tmp_path


def _plan(store: Store, repo: Path, **keys):
    return store.hiera_port.plan(
        repo / "hiera.yaml",
        None,
        public_key=(KEYS / "public_key.pkcs7.pem").read_bytes(),
        private_key=keys.get("private", (KEYS / "private_key.pkcs7.pem").read_bytes()),
    )


def _refusal(store, repo, **keys) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        _plan(store, repo, **keys)
    return caught.value


def _edit_config(repo: Path, change) -> None:
    config = yaml.safe_load((repo / "hiera.yaml").read_text())
    change(config)
    (repo / "hiera.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture
def store(tmp_path_factory):
    return Store.init(tmp_path_factory.mktemp("store"))


def test_a_good_repository_plans_levels_resources_and_secrets(store, repo):
    plan = _plan(store, repo)
    assert plan.hierarchy == ["role"]
    assert plan.resources == ["a/b", "common", "profile/app3", "profile/backup", "profile/db"]
    assert plan.secrets == 19
    assert "common secret" not in repr(plan.summary())


@pytest.mark.parametrize("version", [3, 4, None])
def test_hiera_3_or_4_is_refused_naming_the_line(store, repo, version):
    _edit_config(repo, lambda c: c.update(version=version) if version else c.pop("version"))
    error = _refusal(store, repo)
    assert "hiera.yaml line" in error.message and "key version" in error.message
    assert "only Hiera 5" in error.message


def test_an_unknown_backend_is_refused_naming_entry_line_and_key(store, repo):
    _edit_config(repo, lambda c: c["hierarchy"][0].update(data_hash="mybackend"))
    error = _refusal(store, repo)
    assert "line 8, key hierarchy.0.data_hash" in error.message
    assert "mybackend" in error.message


@pytest.mark.parametrize("function", ["lookup('role')", "alias('x')"])
def test_a_function_in_a_path_is_refused(store, repo, function):
    _edit_config(repo, lambda c: c["hierarchy"][0].update(path=f"role/%{{{function}}}.yaml"))
    error = _refusal(store, repo)
    assert "key hierarchy.0.path" in error.message and "a level can only be named" in error.message


def test_an_eyaml_value_of_another_key_pair_names_file_line_and_key(store, repo, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    import subprocess

    subprocess.run(["eyaml", "createkeys"], cwd=other, check=True, capture_output=True)
    error = _refusal(store, repo, private=(other / "keys/private_key.pkcs7.pem").read_bytes())
    assert "common.eyaml line 1, key profile::db::password_00" in error.message
    assert "cannot be decrypted" in error.message


def test_an_eyaml_value_without_a_private_key_is_refused(store, repo):
    with pytest.raises(InvalidInput, match="no --eyaml-private-key"):
        store.hiera_port.plan(repo / "hiera.yaml", None)


def test_yaml_that_does_not_parse_names_the_file_and_line(store, repo):
    (repo / "data/role/web.yaml").write_text("a::b::c: 2\nbroken: [1, 2\n")
    error = _refusal(store, repo)
    assert "role/web.yaml" in error.message and "line 3" in error.message


def test_a_path_leaving_the_datadir_is_refused(store, repo):
    (repo / "secret.yaml").write_text("stolen: 1\n")
    _edit_config(repo, lambda c: c["hierarchy"][2].update(path="../secret.yaml"))
    assert "outside the datadir" in _refusal(store, repo).message


def test_a_symlink_leaving_the_datadir_is_refused(store, repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "db.yaml"
    outside.write_text("stolen: 1\n")
    (repo / "data/role/db.yaml").symlink_to(outside)
    assert "outside the datadir" in _refusal(store, repo).message


def test_cli_refusal_writes_nothing_and_dry_run_writes_nothing(store, repo):
    (repo / "data/role/web.yaml").write_text("broken: [\n")
    args = ["--root", str(store.root), "import", "hiera", "--hiera-config"]
    args += [str(repo / "hiera.yaml"), "--env", "5"]
    args += ["--eyaml-private-key", str(KEYS / "private_key.pkcs7.pem")]
    args += ["--eyaml-public-key", str(KEYS / "public_key.pkcs7.pem")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "role/web.yaml" in result.output
    assert store.environment_ids() == []
    (repo / "data/role/web.yaml").write_text("a::b::c: 2\n")
    result = CliRunner().invoke(cli, [*args, "--dry-run", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert '"secrets": 19' in result.output and "common secret" not in result.output
    assert store.environment_ids() == []
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert store.environment_repo(5).snapshot().version == 1  # one commit


def test_lossy_mapping_is_refused_without_allow_lossy(store, repo):
    _edit_config(repo, lambda c: c["hierarchy"].insert(0, {"name": "g", "glob": "nodes/*.yaml"}))
    args = ["--root", str(store.root), "import", "hiera", "--hiera-config"]
    args += [str(repo / "hiera.yaml"), "--env", "5"]
    args += ["--eyaml-private-key", str(KEYS / "private_key.pkcs7.pem")]
    args += ["--eyaml-public-key", str(KEYS / "public_key.pkcs7.pem")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "glob" in result.output and "--allow-lossy" in result.output
    assert store.environment_ids() == []
    assert CliRunner().invoke(cli, [*args, "--allow-lossy"]).exit_code == 0
