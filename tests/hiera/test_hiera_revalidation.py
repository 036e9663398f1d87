"""A Puppet master's next compile revalidates the node document it has (If-None-Match): an
unchanged document is answered 304 and reused; a changed one is fetched and used at once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

from .conftest import (
    AUTHOR,
    COMPUTE,
    FQDN,
    PROJECT,
    build_fuel_store,
    start_gunicorn,
    stop,
)

SCRIPT = PROJECT / "tests" / "hiera" / "compile_in_turns.rb"
KEYS = ["libvirt_type", "debug", "management_vip"]


def statuses(server) -> list[str]:
    text = server.access_log.read_text() if server.access_log.exists() else ""
    return re.findall(r'"GET /api/v1/hiera/\S+ HTTP/1\.1" (\d{3})', text)


def wait_for(condition, what: str, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_unchanged_document_is_304_and_a_changed_one_is_read(tmp_path, puppet):
    store = build_fuel_store(tmp_path / "store")
    server = start_gunicorn(tmp_path / "store", tmp_path)
    try:
        env = puppet.environment("turns", {"url": server.url, "ssl_ca_file": None}, keys=KEYS)
        site = (puppet.base / "code/environments/turns/manifests/site.pp").read_text()
        (puppet.base / "code/environments/turns/manifests/site.pp").write_text(
            site.replace('notice("PROBE ${probe::json($found)}")\n', "")
        )
        host, _, domain = FQDN[COMPUTE].partition(".")
        settings = {
            "puppet_args": puppet._confined(),
            "environment": env,
            "certname": FQDN[COMPUTE],
            "facts": {
                "clientcert": FQDN[COMPUTE],
                "hostname": host,
                "domain": domain,
                "fqdn": FQDN[COMPUTE],
            },
            "compiles": 3,
            "go": str(tmp_path / "go"),
        }
        (tmp_path / "settings.json").write_text(json.dumps(settings))
        env_vars = {"PATH": os.environ["PATH"], "HOME": str(puppet.base), "LANG": "C.UTF-8"}
        with subprocess.Popen(
            ["ruby", str(SCRIPT), str(tmp_path / "settings.json")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env_vars,
        ) as ruby:
            try:
                compile_in_turns(ruby, server, store, tmp_path)
            finally:
                if ruby.poll() is None:
                    ruby.kill()  # a failed turn leaves it waiting for its go file
    finally:
        stop(server)


def compile_in_turns(ruby, server, store, tmp_path) -> None:
    """Compile 1 (200), compile 2 with nothing changed (304, same values), then a write and
    compile 3 (200, the new value)."""
    lines = []

    def next_values():
        line = ruby.stdout.readline()
        assert line.startswith("VALUES "), line + ruby.stderr.read()
        lines.append(json.loads(line[7:]))
        return lines[-1]

    first = next_values()
    assert wait_for(lambda: statuses(server), "the first request") == ["200"]
    (tmp_path / "go-1").touch()
    assert next_values() == first
    assert wait_for(lambda: len(statuses(server)) == 2 and statuses(server), "a 304") == [
        "200",
        "304",
    ]
    store.config.update_keys(
        1,
        [("nodes", COMPUTE)],
        "override/node",
        "values",
        "set",
        [["libvirt_type", "qemu"]],
        AUTHOR,
    )
    (tmp_path / "go-2").touch()
    third = next_values()
    assert third["libvirt_type"] == "qemu" and first["libvirt_type"] != "qemu"
    assert ruby.wait(timeout=60) == 0, ruby.stderr.read()
    assert statuses(server) == ["200", "304", "200"]
