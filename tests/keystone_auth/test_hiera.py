"""`puppet lookup` through the gitstore Hiera backend with a Keystone identity (real Puppet 7,
real Keystone, real `gitstore serve --keystone-url`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from access.helpers import serve
from hiera.conftest import COMPUTE, FQDN, MODULE, PuppetSite, build_fuel_store

from gitstore.access.policy import AccessFile

from .conftest import RULES, USERS, serve_args

KEYS = ["management_vip", "libvirt_type"]
#: A token issued to the Hiera backend (its User-Agent), in the Keystone's request log.
HIERA_LOGIN = "POST /v3/auth/tokens gitstore-hiera"


@pytest.fixture(scope="module")
def fuel(cloud, tmp_path_factory):
    """(server, puppet site): the Hiera tests' Fuel store, Keystone rules only, served."""
    base = tmp_path_factory.mktemp("ks-hiera")
    store = build_fuel_store(base / "store")
    access = AccessFile(store.root)
    access.path.write_text(yaml.safe_dump({"version": 1, "keystone": {"rules": RULES}}))
    server = serve(store.root, base, *serve_args(cloud))
    yield server, PuppetSite(base / "puppet")
    server.stop()


def _login(cloud, user: str) -> dict:
    password, project, _ = USERS[user]
    return {
        "keystone_url": cloud.keystone.auth_url,
        "keystone_user": user,
        "keystone_password": password,
        "keystone_project": project,
    }


def _options(server, **changes) -> dict:
    return {"url": server.url, "ssl_ca_file": None, **changes}


def test_puppet_lookup_logs_in_to_keystone_as_a_mapped_service_user(fuel, cloud):
    server, puppet = fuel
    logins = cloud.keystone.requests(HIERA_LOGIN)
    env = puppet.environment("ks_login", _options(server, **_login(cloud, "puppet")), keys=KEYS)
    result = puppet.lookup(env, FQDN[COMPUTE], "management_vip")
    assert result.returncode == 0, result.output
    assert result.probe == {"management_vip": "10.109.1.2", "libvirt_type": "lxc"}
    # one login for the whole compile, shared by every hierarchy level
    assert cloud.keystone.requests(HIERA_LOGIN) - logins == 1


def test_puppet_lookup_with_a_keystone_token_as_token(fuel, cloud):
    server, puppet = fuel
    env = puppet.environment(
        "ks_token", _options(server, token=cloud.token("puppet")), keys=["management_vip"]
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "management_vip")
    assert result.returncode == 0, result.output
    assert result.probe == {"management_vip": "10.109.1.2"}


def test_an_unmapped_keystone_identity_fails_the_compile_naming_why(fuel, cloud):
    server, puppet = fuel
    env = puppet.environment("ks_bob", _options(server, **_login(cloud, "bob")), keys=KEYS)
    result = puppet.lookup(env, FQDN[COMPUTE], "management_vip")
    assert result.returncode != 0
    assert "matches no rule" in result.output


def test_a_wrong_keystone_password_fails_the_compile_naming_keystone(fuel, cloud):
    server, puppet = fuel
    login = {**_login(cloud, "puppet"), "keystone_password": "wrong"}
    env = puppet.environment("ks_wrong", _options(server, **login), keys=KEYS)
    result = puppet.lookup(env, FQDN[COMPUTE], "management_vip")
    assert result.returncode != 0
    assert 'Keystone login of "puppet"' in result.output and "HTTP 401" in result.output


REFRESH_SCRIPT = """
require 'puppet'
require 'json'
require 'puppet_x/gitstore/keystone_login'
login = PuppetX::Gitstore::Login.new(auth_url: ARGV[0], user: 'puppet', password: ARGV[1],
                                      project: 'service', user_domain: 'Default',
                                      project_domain: 'Default')
keystone = PuppetX::Gitstore::KeystoneLogin
first = keystone.token(login, 10, nil)
again = keystone.token(login, 10, nil)
# an hour later, the token (valid one hour) is within its refresh margin
later = keystone.token(login, 10, nil, now: Time.now + 3600 - 60)
puts JSON.generate([first, again, later])
"""


def test_the_backend_reuses_its_token_and_refreshes_it_before_expiry(cloud, tmp_path):
    logins = cloud.keystone.requests(HIERA_LOGIN)
    script = ["ruby", "-I", str(Path(MODULE) / "lib"), "-e", REFRESH_SCRIPT]
    done = subprocess.run(
        [*script, cloud.keystone.auth_url, USERS["puppet"][0]],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    first, again, later = json.loads(done.stdout.strip().splitlines()[-1])
    assert first == again
    assert later != first
    assert cloud.keystone.requests(HIERA_LOGIN) - logins == 2


RETRY_SCRIPT = """
require 'puppet'
require 'json'
require 'puppet_x/gitstore/node_document'
url, keystone_url, password, revoked, node = ARGV
options = { 'url' => url, 'environment' => '1', 'node' => node, 'keystone_url' => keystone_url,
            'keystone_user' => 'puppet', 'keystone_password' => password,
            'keystone_project' => 'service' }
settings = PuppetX::Gitstore::Settings.new(options)
# as if the token held since an earlier compile had been revoked in the meantime
far = Time.now + 3600
held = PuppetX::Gitstore::KeystoneLogin::Issued.new(revoked, far, far)
PuppetX::Gitstore::KeystoneLogin.instance_variable_get(:@issued)[settings.login.key] = held
document = PuppetX::Gitstore::Client.new(settings).fetch
puts JSON.generate(document['resources']['globals'])
"""


def test_a_revoked_token_held_by_the_backend_is_replaced_once(fuel, cloud, tmp_path):
    server, _ = fuel
    revoked = cloud.token("puppet")
    cloud.keystone.revoke(revoked)
    logins = cloud.keystone.requests(HIERA_LOGIN)
    script = ["ruby", "-I", str(Path(MODULE) / "lib"), "-e", RETRY_SCRIPT]
    args = [server.url, cloud.keystone.auth_url, USERS["puppet"][0], revoked, COMPUTE]
    done = subprocess.run(
        [*script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["management_vip"] == "10.109.1.2"
    assert cloud.keystone.requests(HIERA_LOGIN) - logins == 1  # one new login, then served
