"""The Puppet backend end to end: real Puppet 7 compiles against the real server (gunicorn).

Puppet start-up costs about a second of CPU, so each scenario is one compile that looks many
keys up; module-scoped fixtures share a compile between the tests that read it.
"""

from __future__ import annotations

import base64

import pytest
import requests
import yaml

from gitstore import Store

from .conftest import COMPUTE, CONTROLLER, EXAMPLE_HIERA, FQDN, MISSING, attach_newton

HIERA = "/api/v1/hiera/"
FUEL_KEYS = [
    "libvirt_type",
    "debug",
    "management_vip",
    "fqdn",
    "role",
    "syslog_log_facility_nova",
    "configuration",
    "deployment_id",
    "no_such_key",
]


def options(server, **changes):
    """The example's options pointed at `server` (plain HTTP: no CA file) with `changes`."""
    return {"url": server.url, "ssl_ca_file": None, **changes}


@pytest.fixture(scope="module")
def compute_compile(hiera_server, puppet):
    """One compile of node 127 (named by fqdn) through the example's Fuel hierarchy."""
    env = puppet.environment("fuel", options(hiera_server), keys=FUEL_KEYS)
    before = hiera_server.settled_count(HIERA)
    result = puppet.lookup(env, FQDN[COMPUTE], "libvirt_type")
    assert result.returncode == 0, result.output
    return result, hiera_server.settled_count(HIERA) - before


def test_node_overrides_beat_plugins_and_astute(compute_compile):
    result, _ = compute_compile
    assert result.probe["libvirt_type"] == "lxc"
    assert result.stdout.strip().splitlines()[-1] == '"lxc"'


def test_plugins_beat_globals_and_globals_beat_astute(compute_compile):
    result, _ = compute_compile
    assert result.probe["debug"] is True
    assert result.probe["management_vip"] == "10.109.1.2"


def test_astute_answers_what_no_higher_level_has(compute_compile):
    result, _ = compute_compile
    assert result.probe["fqdn"] == FQDN[COMPUTE]
    assert result.probe["role"] == "compute"
    assert result.probe["no_such_key"] == MISSING


def test_a_key_only_at_the_global_level(compute_compile):
    result, _ = compute_compile
    assert result.probe["syslog_log_facility_nova"] == "LOG_LOCAL6"


def test_lookup_options_deep_merge_configuration_across_levels(compute_compile):
    configuration = compute_compile[0].probe["configuration"]
    assert sorted(configuration) == [
        "keystone_config",
        "neutron_agent_ovs",
        "neutron_api_config",
        "neutron_config",
        "neutron_dhcp_agent_config",
        "neutron_plugin_ml2",
    ]
    keystone = configuration["keystone_config"]
    assert keystone["DEFAULT/crypt_strength"] == {"value": 7000}  # node level beats cluster
    assert keystone["policy/driver"] == {"ensure": "absent"}  # only at the cluster level


def test_one_compile_of_many_keys_makes_one_request(compute_compile):
    result, requests_made = compute_compile
    assert len(result.probe) == len(FUEL_KEYS)
    assert requests_made == 1


def test_the_node_is_the_compiling_nodes_certname_unless_named(hiera_server, puppet):
    assert "node" not in yaml.safe_load(EXAMPLE_HIERA.read_text())["defaults"]["options"]
    named = puppet.environment("named", options(hiera_server, node=CONTROLLER), keys=["fqdn"])
    result = puppet.lookup(named, FQDN[COMPUTE], "fqdn")
    assert result.returncode == 0, result.output
    assert result.probe["fqdn"] == FQDN[CONTROLLER]  # the option wins over the certname
    interpolated = puppet.environment(
        "interpolated", options(hiera_server, node="%{trusted.certname}"), keys=["fqdn"]
    )
    result = puppet.lookup(interpolated, FQDN[CONTROLLER], "fqdn")
    assert result.returncode == 0, result.output
    assert result.probe["fqdn"] == FQDN[CONTROLLER]


def test_explain_shows_the_backend_levels(hiera_server, puppet):
    env = puppet.environment("explain", options(hiera_server), keys=["fqdn"])
    result = puppet.lookup(env, FQDN[COMPUTE], "fqdn", "--explain", render="s")
    assert result.returncode == 0, result.output
    for level in ("node overrides", "plugins", "globals", "astute"):
        assert f'Hierarchy entry "{level}"' in result.stdout
    assert 'URI "override/plugins"' in result.stdout
    assert f'Found key: "fqdn" value: "{FQDN[COMPUTE]}"' in result.stdout


def test_unknown_node_fails_the_compile_by_default(hiera_server, puppet):
    env = puppet.environment("unknown_error", options(hiera_server), keys=["debug"])
    result = puppet.lookup(env, "node-9.test.domain.local", "debug")
    assert result.returncode != 0
    assert f"GET {hiera_server.url}/api/v1/hiera/1/node-9.test.domain.local" in result.output
    assert 'unknown node "node-9.test.domain.local"' in result.output


def test_unknown_node_gets_no_data_when_graceful(hiera_server, puppet):
    env = puppet.environment(
        "unknown_graceful", options(hiera_server, failure="graceful"), keys=["debug", "fqdn"]
    )
    before = hiera_server.settled_count(HIERA)
    result = puppet.lookup(env, "node-9.test.domain.local", "debug", "--default", MISSING)
    assert result.returncode == 0, result.output
    assert result.probe == {"debug": MISSING, "fqdn": MISSING}
    assert "is unknown in environment 1" in result.output  # the warning
    assert hiera_server.settled_count(HIERA) - before == 1


def test_unknown_environment_fails_even_when_graceful(hiera_server, puppet):
    env = puppet.environment(
        "unknown_env", options(hiera_server, failure="graceful", environment=99), keys=["debug"]
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "debug")
    assert result.returncode != 0
    assert "environment 99 does not exist" in result.output


def test_an_unknown_pinned_revision_fails_the_compile(hiera_server, puppet):
    env = puppet.environment("bad_pin", options(hiera_server, version="0badc0de"), keys=["debug"])
    result = puppet.lookup(env, FQDN[COMPUTE], "debug")
    assert result.returncode != 0
    assert "version=0badc0de" in result.output
    assert 'unknown version pin "0badc0de"' in result.output


def test_an_empty_pin_is_an_error_not_latest(hiera_server, puppet):
    env = puppet.environment(
        "empty_pin", options(hiera_server, version="%{gitstore_revision}"), keys=["debug"]
    )
    before = hiera_server.settled_count(HIERA)
    result = puppet.lookup(env, FQDN[COMPUTE], "debug")
    assert result.returncode != 0
    assert "option 'version' is empty" in result.output
    assert hiera_server.settled_count(HIERA) == before


def test_a_resource_the_environment_lacks_names_the_level(hiera_server, puppet):
    hierarchy = [{"name": "typo", "uri": "override/nodes"}]
    env = puppet.environment("bad_uri", options(hiera_server), keys=["debug"], hierarchy=hierarchy)
    result = puppet.lookup(env, FQDN[COMPUTE], "debug")
    assert result.returncode != 0
    assert 'resource "override/nodes" is not defined for environment 1' in result.output


def test_seed_use_cases_rest_read_override_then_lookup(hiera_server, puppet):
    """Seed use cases 1-4 on node 125, named by fqdn on the per-resource route too."""
    values = (
        f"{hiera_server.url}/api/v1/config/environments/1/nodes/{FQDN[CONTROLLER]}/resources/astute"
    )
    whole = requests.get(f"{values}/values", params={"effective": "1"}, timeout=10)
    assert whole.status_code == 200
    assert whole.json()["uid"] == CONTROLLER and len(whole.json()) > 50
    one = requests.get(
        f"{values}/values", params={"effective": "1", "key": "deployment_id"}, timeout=10
    )
    assert one.json() == 37
    before = one.headers["X-Gitstore-Commit"]

    env = puppet.environment("seed", options(hiera_server), keys=["deployment_id"])
    assert puppet.lookup(env, FQDN[CONTROLLER], "deployment_id").probe == {"deployment_id": 37}
    changed = requests.put(f"{values}/overrides/keys/set", json=[["deployment_id", 38]], timeout=10)
    assert changed.status_code == 204, changed.text
    after = puppet.lookup(env, FQDN[CONTROLLER], "deployment_id", compile=False)
    assert after.returncode == 0, after.output
    assert after.stdout.strip().splitlines()[-1] == "38"

    pinned = puppet.environment(
        "seed_pinned", options(hiera_server, version=before), keys=["deployment_id"]
    )
    assert puppet.lookup(pinned, FQDN[CONTROLLER], "deployment_id").probe == {"deployment_id": 37}


def test_gitstore_instances_level_answers_the_instance_tags(hiera_server, puppet):
    """The example's optional `gitstore_instances` level, in the one request of the compile."""
    attach_newton(Store(hiera_server.root))
    assign = f"{hiera_server.url}/api/v1/clusters/1/nodes/{{}}/tags"
    for node, tags in ((CONTROLLER, ["database:1", "rabbitmq:1"]), (FQDN[COMPUTE], ["database:2"])):
        response = requests.post(assign.format(node), json={"tags": tags}, timeout=10)
        assert response.status_code == 200, response.text
    hierarchy = [
        *yaml.safe_load(EXAMPLE_HIERA.read_text())["hierarchy"],
        {"name": "instances", "uri": "gitstore_instances"},
    ]
    env = puppet.environment(
        "instances",
        options(hiera_server),
        hierarchy=hierarchy,
        keys=["gitstore_instances", "libvirt_type"],
    )
    before = hiera_server.settled_count(HIERA)
    result = puppet.lookup(env, FQDN[COMPUTE], "gitstore_instances")
    assert result.returncode == 0, result.output
    assert result.probe == {
        "gitstore_instances": {
            "database": {"1": [int(CONTROLLER)], "2": [int(COMPUTE)]},
            "rabbitmq": {"1": [int(CONTROLLER)]},
        },
        "libvirt_type": "lxc",
    }
    assert hiera_server.settled_count(HIERA) - before == 1


def test_https_with_the_ca_file_verifies_the_server(tls_server, puppet):
    env = puppet.environment(
        "tls_ok",
        {"url": tls_server.url, "ssl_ca_file": str(tls_server.ca_file)},
        keys=["libvirt_type"],
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "libvirt_type")
    assert result.returncode == 0, result.output
    assert result.probe == {"libvirt_type": "lxc"}


def test_an_untrusted_certificate_is_a_tls_failure(tls_server, puppet):
    env = puppet.environment(
        "tls_untrusted", {"url": tls_server.url, "ssl_ca_file": None}, keys=["libvirt_type"]
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "libvirt_type")
    assert result.returncode != 0
    assert f"GET {tls_server.url}/api/v1/hiera/1/{FQDN[COMPUTE]}: TLS failure" in result.output
    assert "certificate verify failed" in result.output


def test_a_hanging_server_times_out_once_without_a_retry(unhealthy, puppet):
    """Also: `user`/`password` travel as HTTP Basic."""
    env = puppet.environment(
        "hanging",
        {
            "url": f"{unhealthy.url}/slow",
            "ssl_ca_file": None,
            "timeout": 1,
            "user": "puppet",
            "password": "s3cret",
        },
        keys=["debug"],
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "debug")
    assert result.returncode != 0
    assert f"GET {unhealthy.url}/slow/api/v1/hiera/1/" in result.output
    assert "timed out after 1.0s (ReadTimeout)" in result.output
    handler = unhealthy.RequestHandlerClass
    assert handler.counts["slow"] == 1  # Net::HTTP would retry once
    assert handler.authorization["slow"] == "Basic " + base64.b64encode(b"puppet:s3cret").decode()


def test_a_server_error_fails_the_compile_with_its_message(unhealthy, puppet):
    """Even when graceful; also: `token` travels as a Bearer token."""
    env = puppet.environment(
        "broken",
        {
            "url": f"{unhealthy.url}/broken",
            "ssl_ca_file": None,
            "failure": "graceful",
            "token": "t0ken",
        },
        keys=["debug"],
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "debug")
    assert result.returncode != 0
    assert "HTTP 503: store under maintenance" in result.output
    assert unhealthy.RequestHandlerClass.authorization["broken"] == "Bearer t0ken"


def test_a_document_with_masked_secrets_fails_the_compile(unhealthy, puppet):
    env = puppet.environment(
        "masked",
        {"url": f"{unhealthy.url}/masked", "ssl_ca_file": None},
        hierarchy=[{"name": "astute", "uri": "astute"}],
        keys=["access"],
    )
    result = puppet.lookup(env, FQDN[COMPUTE], "access")
    assert result.returncode != 0
    assert "the server masked 1 secret value(s) (resources.astute.access.password)" in (
        result.output
    )
    assert "secrets role on environment 1" in result.output
