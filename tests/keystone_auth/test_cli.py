"""The real `gitstore` command as an OpenStack client: OS_* variables, clouds.yaml, catalog."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
import yaml
from access.helpers import serve
from live_server import GITSTORE, free_port, isolated_env, stop_process

from .conftest import keystone_store, serve_args

#: The internal endpoint registered: a port where nothing listens.
NOWHERE = f"http://127.0.0.1:{free_port()}"


@pytest.fixture(scope="module")
def registered(cloud, server, tmp_path_factory):
    """The session's server, registered in its Keystone's catalog with `gitstore keystone
    register` (admin credentials from OS_* variables)."""
    base = tmp_path_factory.mktemp("ks-cli")
    admin = _os_env(cloud, "admin", "admin")
    done = _gitstore(base, admin, "keystone", "register", "--public-url", server.url)
    assert done.returncode == 0, done.stderr
    assert "public endpoint: " + server.url in done.stdout
    # run again, with an internal endpoint where nothing listens (the interface test below)
    register = ["keystone", "register", "--public-url", server.url, "--internal-url", NOWHERE]
    again = _gitstore(base, admin, *register)
    assert again.returncode == 0, again.stderr
    assert f"public endpoint: {server.url} (updated" in again.stdout
    assert f"internal endpoint: {NOWHERE} (created" in again.stdout
    return server, base


def _os_env(cloud, user: str, project: str) -> dict[str, str]:
    return {
        "OS_AUTH_URL": cloud.keystone.auth_url,
        "OS_USERNAME": user,
        "OS_PASSWORD": cloud.password(user),
        "OS_PROJECT_NAME": project,
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_PROJECT_DOMAIN_NAME": "Default",
    }


def _gitstore(home, env: dict[str, str], *args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(GITSTORE), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=isolated_env(home, **env),
        cwd=cwd,
    )


def test_os_variables_find_the_server_in_the_catalog_and_write_as_mapped(registered, cloud):
    server, base = registered
    alice = _os_env(cloud, "alice", "cloud-1")
    set_key = ["config", "set", "-e", "1", "-r", "globals", "-k", "debug", "-t", "bool"]
    done = _gitstore(base, alice, *set_key, "-v", "true")
    assert done.returncode == 0, done.stderr
    got = _gitstore(base, alice, "config", "get", "-e", "1", "-r", "globals", "-f", "json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == {"debug": True}
    refused = _gitstore(base, alice, "config", "get", "-e", "2", "-r", "globals")
    assert refused.returncode == 1
    assert "writer:env:1" in refused.stderr
    assert server.url  # the URL came from the catalog: no --url, no GITSTORE_URL was given


def test_clouds_yaml_with_os_cloud(registered, cloud, tmp_path):
    _, base = registered
    clouds = {
        "clouds": {
            "test-cloud": {
                "auth": {
                    "auth_url": cloud.keystone.auth_url,
                    "username": "puppet",
                    "password": cloud.password("puppet"),
                    "project_name": "service",
                    "user_domain_name": "Default",
                    "project_domain_name": "Default",
                },
                "region_name": "RegionOne",
                "interface": "public",
            }
        }
    }
    (tmp_path / "clouds.yaml").write_text(yaml.safe_dump(clouds))
    read = ["config", "get", "-e", "2", "-r", "globals", "-f", "json"]
    got = _gitstore(base, {"OS_CLOUD": "test-cloud"}, *read, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == {}
    write = ["config", "set", "-e", "2", "-r", "globals", "-k", "debug", "-t", "bool", "-v", "1"]
    refused = _gitstore(base, {"OS_CLOUD": "test-cloud"}, *write, cwd=tmp_path)
    assert refused.returncode == 1
    assert "user 'puppet' needs role 'writer'" in refused.stderr  # puppet's identity was used
    unknown = _gitstore(base, {}, "--os-cloud", "nope", *read, cwd=tmp_path)
    assert unknown.returncode == 2
    assert "no such cloud" in unknown.stderr and "test-cloud" in unknown.stderr


def test_wrong_keystone_password_is_one_line(registered, cloud):
    _, base = registered
    env = {**_os_env(cloud, "alice", "cloud-1"), "OS_PASSWORD": "wrong"}
    done = _gitstore(base, env, "config", "get", "-e", "1", "-r", "globals")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"Error: Keystone at {cloud.keystone.auth_url} refused the credentials of 'alice'"
    ]


def test_no_endpoint_in_the_catalog_says_to_give_url_or_register(cloud, tmp_path):
    """keystoneauth's own words were "public endpoint for config service in Nowhere region not
    found". No region holds gitstore's endpoint here, as no catalog does before `register`."""
    env = {**_os_env(cloud, "alice", "cloud-1"), "OS_REGION_NAME": "Nowhere"}
    done = _gitstore(tmp_path, env, "config", "get", "-e", "1", "-r", "globals")
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: the Keystone catalog has no public endpoint of service type 'config' in region "
        "Nowhere: give --url, or register gitstore with `gitstore keystone register`"
    ]


def test_os_interface_internal_takes_the_internal_endpoint(registered, cloud):
    _, base = registered
    env = {**_os_env(cloud, "alice", "cloud-1"), "OS_INTERFACE": "internal"}
    done = _gitstore(base, env, "config", "get", "-e", "1", "-r", "globals")
    assert done.returncode == 1
    assert NOWHERE in done.stderr  # the internal URL was used, and nothing answers there


def test_a_watch_logs_in_again_when_its_token_is_revoked(cloud, tmp_path):
    # A watch runs longer than a token lives. The server keeps a validation for 1 s here; the
    # query parked before the revocation still answers, the next one is refused (401) and is
    # sent again with a new login's token (it made the watch exit 1 before).
    store, _ = keystone_store(tmp_path / "store")
    store.config.put(1, [], "globals", "values", {"debug": 0})
    short = serve(store.root, tmp_path, *serve_args(cloud, "--keystone-cache-time", "1"))
    env = isolated_env(tmp_path, **_os_env(cloud, "alice", "cloud-1"))
    args = ["--url", short.url, "watch", "-e", "1", "-r", "globals", "-k", "debug", "--count", "2"]
    watch = subprocess.Popen(
        [str(GITSTORE), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert watch.stdout.readline().strip() == "0"  # the value at start: the watch is in
        # Its next query is sent at once; revoke only when it is surely parked: a query refused
        # in the revocation's second would log in again in that second, and Keystone (whose
        # tokens carry whole seconds) takes a token of the second it revoked in for revoked.
        time.sleep(3)
        cloud.keystone.revoke_all_of(cloud.user_ids["alice"])
        time.sleep(2.5)  # past the server's 1 s of trust in the revoked token
        for value in (1, 2):
            store.config.put(1, [], "globals", "values", {"debug": value})
            time.sleep(0.5)
        out, err = watch.communicate(timeout=60)
    finally:
        watch.kill()
        stop_process(short.process)
    assert watch.returncode == 0, err
    assert out.split() == ["1", "2"]
