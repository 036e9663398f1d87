"""The access file's keystone section: parsed with the rest of the file, kept by edits.

No Keystone needed: a bad section fails closed before any token is looked at.
"""

from __future__ import annotations

import pytest
import yaml

from gitstore import Store
from gitstore.access.keystone import KeystoneUser
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app
from gitstore.errors import Forbidden

from .conftest import RULES


def _with_section(root, section) -> AccessFile:
    access = AccessFile(root)
    access.add_user("ops", parse_grants(["admin"]), "ops-pw")
    data = yaml.safe_load(access.path.read_text())
    data["keystone"] = section
    access.path.write_text(yaml.safe_dump(data))
    return access


def _who(name="alice", project="cloud-1", roles=("member",)) -> KeystoneUser:
    return KeystoneUser(name, "Default", project, "Default", frozenset(roles))


def test_rules_map_projects_roles_and_users(tmp_path):
    policy = _with_section(tmp_path, {"rules": RULES}).policy()
    assert [str(g) for g in policy.keystone_identity(_who()).grants] == ["writer:env:1"]
    puppet = policy.keystone_identity(_who("puppet", "service", ["reader"]))
    assert [str(g) for g in puppet.grants] == ["reader", "secrets"]
    admin = policy.keystone_identity(_who("root", "admin", ["admin", "member"]))
    assert [str(g) for g in admin.grants] == ["admin"]
    with pytest.raises(Forbidden, match="'bob' .*'demo'; roles: member\\) matches no rule"):
        policy.keystone_identity(_who("bob", "demo"))
    with pytest.raises(Forbidden):  # a member of admin is not its admin
        policy.keystone_identity(_who("eve", "admin", ["member"]))


def test_a_rule_names_a_domain_for_user_and_project(tmp_path):
    rules = [{"user": "deployer", "domain": "ops", "grants": ["writer:env:2"]}]
    policy = _with_section(tmp_path, {"rules": rules}).policy()
    other = KeystoneUser("deployer", "ops", None, None, frozenset())
    assert [str(g) for g in policy.keystone_identity(other).grants] == ["writer:env:2"]
    with pytest.raises(Forbidden):
        policy.keystone_identity(_who("deployer"))  # the same name in domain Default


def test_a_system_rule_matches_system_scoped_tokens_only(tmp_path):
    policy = _with_section(tmp_path, {"rules": RULES}).policy()
    system = KeystoneUser("root", "Default", None, None, frozenset({"admin"}), system="all")
    identity = policy.keystone_identity(system)
    assert [str(g) for g in identity.grants] == ["admin"]
    assert identity.via == "keystone (system all)"
    unscoped = KeystoneUser("root", "Default", None, None, frozenset({"admin"}))
    with pytest.raises(Forbidden, match="no project \\(unscoped\\)"):
        policy.keystone_identity(unscoped)
    with pytest.raises(Forbidden, match="system 'all'; roles: member\\) matches no rule"):
        policy.keystone_identity(
            KeystoneUser("eve", "Default", None, None, frozenset({"member"}), system="all")
        )


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ({"rules": [{"system": "domain", "grants": ["admin"]}]}, "system must be one of: all"),
        (
            {"rules": [{"system": "all", "project": "x", "grants": ["admin"]}]},
            "project or to the system, not both",
        ),
        ({"rules": [{"project": "x", "grants": ["boss"]}]}, "role 'boss'"),
        ({"rules": [{"grants": ["reader"]}]}, "keystone.rules[0] must name a user"),
        ({"rules": [{"user": "x", "grants": []}]}, "keystone.rules[0].grants"),
        ({"rules": [{"user": "x", "rolez": "y", "grants": ["reader"]}]}, "'rolez'"),
        ({"rulez": []}, "one key, rules"),
        (["a list"], "keystone must be a mapping"),
    ],
)
def test_a_bad_section_fails_closed_naming_the_bad_part(tmp_path, section, named):
    store = Store.init(tmp_path / "store")
    _with_section(store.root, section)
    client = create_app({"TESTING": True}, store=store).test_client()
    answer = client.get("/api/v1/config/environments", auth=("ops", "ops-pw"))
    assert answer.status_code == 503
    assert named in answer.get_json()["message"]


def test_user_and_token_edits_keep_the_section(tmp_path):
    access = _with_section(tmp_path, {"rules": RULES})
    access.add_user("later", parse_grants(["reader"]), "later-pw")
    access.create_token("later")
    assert yaml.safe_load(access.path.read_text())["keystone"] == {"rules": RULES}
    assert len(access.policy().keystone) == len(RULES)
