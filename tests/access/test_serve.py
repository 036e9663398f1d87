"""`gitstore serve` without an access file: loopback only, unless --open says otherwise."""

from __future__ import annotations

import requests

from gitstore import Store

from .helpers import gitstore, serve


def test_an_open_store_is_served_on_loopback_and_says_so(tmp_path):
    root = Store.init(tmp_path / "store").root
    server = serve(root, tmp_path, "--workers", "1")
    try:
        assert requests.get(server.url + "/api/v1/config/environments", timeout=10).ok
    finally:
        server.stop()
    assert "the store is OPEN, so only loopback addresses are served" in server.log.read_text()


def test_an_open_store_answers_only_the_names_it_is_served_as(tmp_path):
    """DNS rebinding: a page reaching the loopback server under its own name gets 421."""
    root = Store.init(tmp_path / "store").root
    server = serve(root, tmp_path, "--workers", "1", "--allowed-host", "config.example")
    url = server.url + "/api/v1/config/environments"
    try:
        foreign = requests.post(url, json={}, headers={"Host": "attacker.example"}, timeout=10)
        allowed = requests.get(url, headers={"Host": "config.example:80"}, timeout=10)
        loopback = requests.get(url, timeout=10)
    finally:
        server.stop()
    assert foreign.status_code == 421 and foreign.json()["status"] == 421
    assert "attacker.example" in foreign.json()["message"]
    assert allowed.status_code == loopback.status_code == 200


def test_an_open_store_is_not_served_beyond_loopback(tmp_path):
    root = Store.init(tmp_path / "store").root
    for host in ("0.0.0.0", "::", "192.0.2.1", "example.org"):
        done = gitstore("serve", "--root", str(root), "--host", host, home=tmp_path)
        assert done.returncode == 2, done.stderr
        assert f"refusing to listen on {host}" in done.stderr
        assert "gitstore user add" in done.stderr and "--open" in done.stderr


def test_open_serves_an_open_store_on_every_address_with_a_warning(tmp_path):
    root = Store.init(tmp_path / "store").root
    server = serve(root, tmp_path, "--host", "0.0.0.0", "--open", "--workers", "1")
    try:
        assert requests.get(server.url + "/api/v1/config/environments", timeout=10).ok
    finally:
        server.stop()
    assert "WARNING: serving an OPEN store on 0.0.0.0" in server.log.read_text()


def test_tls_options_go_together(tmp_path):
    root = Store.init(tmp_path / "store").root
    key = tmp_path / "key.pem"
    key.write_text("not used\n")
    for args, message in (
        (["--keyfile", str(key)], "--certfile and --keyfile go together"),
        (["--ca-certs", str(key)], "--ca-certs needs --certfile"),
    ):
        done = gitstore("serve", "--root", str(root), *args, home=tmp_path)
        assert done.returncode == 2 and message in done.stderr
