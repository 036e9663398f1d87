"""Adoption end to end: a Puppet control repository imported, looked up by real Puppet, exported.

The control repository (tests/data/hiera-control, made by tests/hiera_import/make_control_repo.py)
has seven Hiera entries (node data, node eyaml secrets, role, OS family, datacenter, common
eyaml, common), 52 nodes, 561 keys, lookup_options with unique, hash, deep, knockout prefixes,
sorted and index-merged arrays and a pattern key, and 41 eyaml values made by the real
`eyaml encrypt` (one-line and block form).

For each node of the sample, one `puppet lookup --compile` looks every key up (site.pp), through:
the original hiera.yaml with Debian's hiera-eyaml backend; the gitstore backend against the
real server after `import hiera`; and the tree `export hiera` wrote. All three must answer the
same for every key. The sample is the first eight nodes: together they hold every role (one
without a file), both OS families, every datacenter, nodes with and without files of their
own, both nodes' eyaml files kinds, and every lookup_options variant of the data
(node variants are index % 8). Puppet's start-up is ~1 s of CPU per compile, so all 52 nodes
would take minutes (`ADOPTION_ALL_NODES=1` runs them all).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import yaml

from gitstore import Store
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.backend.changes import ChangeSet

from .conftest import AUTHOR, MISSING, PuppetSite, site_pp, start_gunicorn, stop

CONTROL = Path(__file__).resolve().parents[1] / "data" / "hiera-control"
KEYS = CONTROL / "keys"
#: `ADOPTION_ALL_NODES=1` compares every node (a few minutes), not the sample of eight.
SAMPLE = [
    f"node{i:03d}.example.com" for i in range(1, 53 if os.environ.get("ADOPTION_ALL_NODES") else 9)
]


def _node_facts() -> dict[str, dict]:
    return yaml.safe_load((CONTROL / "nodes.yaml").read_text())


def _fact(facts: dict, certname: str, variable: str):
    if variable in ("trusted.certname", "clientcert"):
        return certname
    value: object = facts
    for part in variable.removeprefix("facts.").split("."):
        value = value[part]  # type: ignore[index]
    return value


def _register_nodes(store: Store, variables: dict[str, str]) -> None:
    """Each node's inventory record names its level values, as its facts give them."""
    facts = _node_facts()

    def operation(snapshot):
        changes = ChangeSet("inventory: the control repository's nodes")
        for certname, node_facts in facts.items():
            record = {"fqdn": certname}
            for level, variable in variables.items():
                if level != "nodes":
                    record[level] = _fact(node_facts, certname, variable)
            changes.put(f"inventory/nodes/{certname}.yaml", yaml.safe_dump(record).encode())
        return changes

    store.environment_repo(1).update(operation, AUTHOR)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """A store with the control repository imported into environment 1, served by gunicorn."""
    base = tmp_path_factory.mktemp("adoption")
    store = Store.init(base / "store")
    plan = store.hiera_port.plan(
        CONTROL / "hiera.yaml",
        None,
        public_key=(KEYS / "public_key.pkcs7.pem").read_bytes(),
        private_key=(KEYS / "private_key.pkcs7.pem").read_bytes(),
    )
    store.hiera_port.apply(1, plan, AUTHOR)
    _register_nodes(store, plan.variables)
    access = AccessFile(store.root)
    access.add_user("puppet", parse_grants(["reader:env:1", "secrets:env:1"]), None)
    access.add_user("viewer", parse_grants(["reader:env:1"]), None)
    tokens = {user: access.create_token(user)[1] for user in ("puppet", "viewer")}
    server = start_gunicorn(store.root, base)
    yield store, plan, server, tokens
    stop(server)


def _original_environment(puppet: PuppetSite, keys: list[str]) -> str:
    config = yaml.safe_load((CONTROL / "hiera.yaml").read_text())
    config["defaults"]["datadir"] = str(CONTROL / "data")
    return _write_environment(puppet, "original", config, keys)


def _write_environment(puppet: PuppetSite, name: str, config: dict, keys: list[str]) -> str:
    """A Puppet environment of `config` (eyaml key paths made absolute) and site.pp."""
    for entry in [config.get("defaults", {}), *config["hierarchy"]]:
        options = entry.get("options") or {}
        for option in ("pkcs7_private_key", "pkcs7_public_key"):
            if option in options:
                options[option] = str(KEYS / Path(options[option]).name)
    folder = puppet.base / "code/environments" / name
    (folder / "manifests").mkdir(parents=True, exist_ok=True)
    (folder / "hiera.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "manifests/site.pp").write_text(site_pp(keys))
    return name


def _compile_all(puppet: PuppetSite, environment: str, keys: list[str]) -> dict[str, dict]:
    facts = _node_facts()

    def one(certname: str) -> tuple[str, dict]:
        result = puppet.lookup(environment, certname, keys[0], facts=facts[certname])
        assert result.returncode == 0 and result.probe is not None, result.output[-2000:]
        return certname, result.probe

    first = dict([one(SAMPLE[0])])  # alone: two first runs race to make Puppet's vardir
    with ThreadPoolExecutor(2) as pool:
        return {**first, **dict(pool.map(one, SAMPLE[1:]))}


@pytest.fixture(scope="module")
def original(imported, puppet):
    """What Puppet with the original hiera.yaml and hiera-eyaml answers, per sampled node."""
    keys = sorted(imported[1].keys)
    return _compile_all(puppet, _original_environment(puppet, keys), keys)


def _differences(expected: dict, actual: dict) -> dict:
    return {
        (node, key): (expected[node][key], actual[node].get(key))
        for node in expected
        for key in expected[node]
        if expected[node][key] != actual[node].get(key)
    }


def test_the_sample_covers_every_level_and_key(original, imported):
    _, plan, _, _ = imported
    assert len(plan.keys) >= 500 and plan.secrets >= 20
    assert len(_node_facts()) >= 50
    found = {key for answers in original.values() for key, v in answers.items() if v != MISSING}
    assert found == plan.keys  # every key is answered for some sampled node
    levels = {(f["level"], f["value"]) for f in plan.files}
    facts = _node_facts()
    for level, variable in plan.variables.items():
        values = {str(_fact(facts[node], node, variable)) for node in SAMPLE}
        with_files = {value for lvl, value in levels if lvl == level}
        if level != "nodes":
            assert with_files <= values, level  # every file of the level is read by a sample


def test_gitstore_backend_answers_what_hiera_and_eyaml_answer(original, imported, puppet):
    _, plan, server, tokens = imported
    keys = sorted(plan.keys)
    hierarchy = [{"name": name, "uri": name} for name in plan.resources]
    env = puppet.environment(
        "gitstore",
        {"url": server.url, "environment": 1, "ssl_ca_file": None, "token": tokens["puppet"]},
        keys=keys,
        hierarchy=hierarchy,
    )
    answers = _compile_all(puppet, env, keys)
    assert _differences(original, answers) == {}
    secret = answers[SAMPLE[0]]["profile::db::password_03"]
    assert secret == "common secret 3 ünïcode"


def test_exported_tree_answers_the_same(original, imported, puppet, tmp_path):
    store, plan, _, _ = imported
    keys = sorted(plan.keys)
    out = tmp_path / "export"
    result = store.hiera_port.export(
        1, out, public_key=(KEYS / "public_key.pkcs7.pem").read_bytes(), who="test"
    )
    assert result["secrets"] >= 41
    exported = (out / "data").rglob("*.yaml")
    assert not any("common secret" in path.read_text() for path in exported)
    config = yaml.safe_load((out / "hiera.yaml").read_text())
    config["defaults"]["datadir"] = str(out / "data")
    env = _write_environment(puppet, "exported", config, keys)
    assert _differences(original, _compile_all(puppet, env, keys)) == {}


def test_export_without_a_key_or_reveal_is_refused(imported, tmp_path):
    store = imported[0]
    from gitstore.errors import Forbidden

    with pytest.raises(Forbidden, match="secret values"):
        store.hiera_port.export(1, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_keys_are_test_keys_only():
    """The checked-in private key is the test repository's own, made by eyaml createkeys."""
    assert (KEYS / "private_key.pkcs7.pem").read_text().startswith("-----BEGIN RSA PRIVATE KEY")
    assert shutil.which("eyaml") is not None


# -- eyaml values pushed later --------------------------------------------------------------
def _git(*args, cwd=None):
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def _push_eyaml(store: Store, tmp_path: Path, value: str, file: str) -> tuple[int, str]:
    work = tmp_path / "work"
    if not work.exists():
        _git("clone", "-q", str(store.root / "environments/1.git"), str(work))
        _git("config", "user.email", "ops@example.com", cwd=work)
        _git("config", "user.name", "ops", cwd=work)
    target = work / file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"profile::db::pushed_secret: {value}\nprofile::db::pushed_plain: 1\n")
    _git("add", "-A", cwd=work)
    _git("commit", "-qm", "an eyaml value", cwd=work)
    return _git("push", "origin", "HEAD:main", cwd=work)


def _eyaml_encrypt(text: str, public: Path) -> str:
    done = subprocess.run(
        ["eyaml", "encrypt", "-o", "string", "-s", text, "--pkcs7-public-key", str(public)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_pushed_eyaml_value_is_sealed_revealed_to_holders_and_masked_to_others(
    imported, tmp_path
):
    store, _, server, tokens = imported
    value = _eyaml_encrypt("pushed later", KEYS / "public_key.pkcs7.pem")
    file = "global/values/profile/db.yaml"
    code, output = _push_eyaml(store, tmp_path, value, file)
    assert code == 0, output
    repo = store.environment_repo(1)
    deadline = time.monotonic() + 30
    while "seal" not in repo.snapshot().info().message and time.monotonic() < deadline:
        time.sleep(0.2)
    stored = repo.snapshot().read(file).decode()
    assert "ENC[v1,aesgcm" in stored and "PKCS7" not in stored and "pushed later" not in stored

    def read(user):
        response = requests.get(
            f"{server.url}/api/v1/hiera/1/{SAMPLE[0]}?resources=profile/db",
            headers={"Authorization": f"Bearer {tokens[user]}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return response.json()["resources"]["profile/db"]["profile::db::pushed_secret"]

    assert read("puppet") == "pushed later"
    assert read("viewer") == "******"


def test_a_pushed_eyaml_value_of_another_key_is_refused_naming_file_line_and_key(
    imported, tmp_path
):
    store = imported[0]
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["eyaml", "createkeys"], cwd=other, check=True, capture_output=True)
    value = _eyaml_encrypt("wrong key", other / "keys/public_key.pkcs7.pem")
    before = store.environment_repo(1).head()
    code, output = _push_eyaml(store, tmp_path, value, "role/web/values/profile/db.yaml")
    assert code != 0
    assert "role/web/values/profile/db.yaml:1: key 'profile::db::pushed_secret'" in output
    assert "cannot decrypt" in output
    assert store.environment_repo(1).head() == before
