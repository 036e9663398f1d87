"""HTTPS through `gitstore serve --certfile --keyfile [--ca-certs]`, with a private CA.

The CLI (`--cacert`) and Puppet's `gitstore::data_hash` backend (`ssl_ca_file`, `token`) verify
the server's certificate and authenticate; `--ca-certs` makes the server verify clients too.
"""

from __future__ import annotations

import json

import pytest
import requests
from hiera.conftest import COMPUTE, FQDN, PuppetSite, build_fuel_store

from .helpers import add_users, bearer, gitstore, make_certificates, serve

#: The Puppet master reads the node document with its passwords: it needs `secrets` there too.
USERS = {"puppet": ["reader:env:1", "secrets:env:1"], "ops": ["admin"]}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(server, certificates, tokens, workdir): the Fuel store of the Hiera tests over HTTPS."""
    workdir = tmp_path_factory.mktemp("tls")
    certs = make_certificates(workdir)
    store = build_fuel_store(workdir / "store")
    tokens = add_users(store.root, USERS)
    server = serve(
        store.root,
        workdir,
        "--certfile",
        str(certs.server_cert),
        "--keyfile",
        str(certs.server_key),
        scheme="https",
        verify=str(certs.ca),
    )
    yield server, certs, tokens, workdir
    server.stop()


def test_the_server_says_it_serves_https_with_access_control(tls):
    server, *_ = tls
    log = server.log.read_text()
    assert f"on https://127.0.0.1:{server.port}" in log
    assert "access control on" in log


def test_the_cli_verifies_the_server_with_its_ca(tls):
    server, certs, tokens, workdir = tls
    done = gitstore(
        "--url",
        server.url,
        "--cacert",
        str(certs.ca),
        "--token",
        tokens["ops"],
        "env",
        "list",
        "--format",
        "json",
        home=workdir,
    )
    assert done.returncode == 0, done.stderr
    assert [env["id"] for env in json.loads(done.stdout)] == [1]


def test_the_cli_refuses_a_server_it_cannot_verify(tls):
    server, _, tokens, workdir = tls
    done = gitstore("--url", server.url, "--token", tokens["ops"], "env", "list", home=workdir)
    assert done.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in done.stderr and "Traceback" not in done.stderr


def test_the_cli_over_tls_still_needs_credentials(tls):
    server, certs, _, workdir = tls
    done = gitstore("--url", server.url, "--cacert", str(certs.ca), "env", "list", home=workdir)
    assert done.returncode == 1
    assert "authentication required" in done.stderr


def test_puppet_looks_up_over_tls_with_a_token_and_not_without(tls, tmp_path):
    server, certs, tokens, _ = tls
    puppet = PuppetSite(tmp_path / "puppet")
    options = {"url": server.url, "ssl_ca_file": str(certs.ca)}
    with_token = puppet.environment(
        "tls_token", {**options, "token": tokens["puppet"]}, keys=["management_vip", "libvirt_type"]
    )
    result = puppet.lookup(with_token, FQDN[COMPUTE], "management_vip")
    assert result.returncode == 0, result.output
    assert result.probe == {"management_vip": "10.109.1.2", "libvirt_type": "lxc"}

    without = puppet.environment("tls_anonymous", options, keys=["management_vip"])
    refused = puppet.lookup(without, FQDN[COMPUTE], "management_vip")
    assert refused.returncode != 0
    assert "authentication failed" in refused.output


def test_ca_certs_makes_the_server_require_client_certificates(tls, tmp_path):
    _, certs, _, _ = tls
    root = tmp_path / "store"
    build_fuel_store(root)
    admin = add_users(root, {"ops": ["admin"]})
    client_cert = (str(certs.client_cert), str(certs.client_key))
    server = serve(
        root,
        tmp_path,
        "--certfile",
        str(certs.server_cert),
        "--keyfile",
        str(certs.server_key),
        "--ca-certs",
        str(certs.ca),
        "--workers",
        "1",
        scheme="https",
        verify=str(certs.ca),
        cert=client_cert,
    )
    try:
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(server.url + "/api/v1/access/whoami", verify=str(certs.ca), timeout=10)
        got = requests.get(
            server.url + "/api/v1/access/whoami", verify=str(certs.ca), cert=client_cert, timeout=10
        )
        assert got.status_code == 401  # a certificate proves the machine, not the user
        got = requests.get(
            server.url + "/api/v1/access/whoami",
            verify=str(certs.ca),
            cert=client_cert,
            headers=bearer(admin["ops"]),
            timeout=10,
        )
        assert got.json()["user"] == "ops"
    finally:
        server.stop()
