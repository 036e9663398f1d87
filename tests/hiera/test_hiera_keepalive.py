"""The backend keeps its connection to the server open between compiles (one per server and
thread), and a connection the server closed (a restart, a dropped socket) costs nothing but a
new one: the compile never fails for it."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .conftest import COMPUTE, FQDN, PROJECT, build_fuel_store, start_gunicorn, stop
from .test_hiera_revalidation import wait_for

SCRIPT = PROJECT / "tests" / "hiera" / "compile_in_turns.rb"
KEYS = ["libvirt_type", "debug", "management_vip"]
#: gunicorn's access line with the client's port: one port per connection.
PORTS_FORMAT = '%({REMOTE_PORT}e)s "%(r)s" %(s)s'


class Compiles:
    """`compile_in_turns.rb`: one Ruby process compiling `FQDN[COMPUTE]` when told to."""

    def __init__(self, puppet, url: str, tmp_path, count: int) -> None:
        env = puppet.environment("keepalive", {"url": url, "ssl_ca_file": None}, keys=KEYS)
        site = puppet.base / "code/environments/keepalive/manifests/site.pp"
        site.write_text(site.read_text().replace('notice("PROBE ${probe::json($found)}")\n', ""))
        host, _, domain = FQDN[COMPUTE].partition(".")
        facts = {"clientcert": FQDN[COMPUTE], "hostname": host, "domain": domain}
        settings = {
            "puppet_args": puppet._confined(),
            "environment": env,
            "certname": FQDN[COMPUTE],
            "facts": {**facts, "fqdn": FQDN[COMPUTE]},
            "compiles": count,
            "go": str(tmp_path / "go"),
        }
        (tmp_path / "settings.json").write_text(json.dumps(settings))
        self.go, self.turn = tmp_path / "go", 0
        self.ruby = subprocess.Popen(
            ["ruby", str(SCRIPT), str(tmp_path / "settings.json")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PATH": os.environ["PATH"], "HOME": str(puppet.base), "LANG": "C.UTF-8"},
        )

    def next(self) -> dict:
        """The values of the next compile (the first one is started at once)."""
        if self.turn:
            (self.go.parent / f"go-{self.turn}").touch()
        self.turn += 1
        line = self.ruby.stdout.readline()
        assert line.startswith("VALUES "), line + self.ruby.stderr.read()
        return json.loads(line[7:])

    def close(self) -> None:
        if self.ruby.poll() is None:
            self.ruby.kill()
        self.ruby.communicate()


def ports(server) -> list[str]:
    """The client port of each node-document request, in order."""
    text = server.access_log.read_text() if server.access_log.exists() else ""
    return re.findall(r'^(\d+) "GET /api/v1/hiera/\S+ HTTP/1\.1" \d{3}$', text, re.MULTILINE)


def test_compiles_share_a_connection_and_survive_a_server_restart(tmp_path, puppet):
    store_root = tmp_path / "store"
    build_fuel_store(store_root)
    extra = ("--worker-class", "gevent", "--keep-alive", "30", "--access-logformat", PORTS_FORMAT)
    first_logs, second_logs = tmp_path / "first", tmp_path / "second"
    first_logs.mkdir(), second_logs.mkdir()
    server = start_gunicorn(store_root, first_logs, *extra)
    port = int(server.url.rsplit(":", 1)[1])
    compiles = Compiles(puppet, server.url, tmp_path, 4)
    try:
        values = compiles.next()
        assert values["libvirt_type"] != "__missing__"
        assert compiles.next() == values
        kept = wait_for(lambda: len(ports(server)) == 2 and ports(server), "two requests")
        assert kept[0] == kept[1], "the second compile should reuse the first one's connection"
        stop(server)  # the kept connection dies with it
        server = start_gunicorn(store_root, second_logs, *extra, port=port)
        assert compiles.next() == values
        assert compiles.next() == values
        after = wait_for(lambda: len(ports(server)) == 2 and ports(server), "two requests")
        assert after[0] == after[1] != kept[0]
        assert compiles.ruby.wait(timeout=60) == 0, compiles.ruby.stderr.read()
    finally:
        compiles.close()
        stop(server)


class _Dropping(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, answering `document`; request number `drop` (1-based) is read
    and its connection closed without an answer: what a client sees when the server closes a
    kept connection just as the next request arrives."""

    protocol_version = "HTTP/1.1"
    document = b"{}"
    drop = 0
    seen: list[int] = []

    def do_GET(self):  # noqa: N802 - the name BaseHTTPRequestHandler dispatches to
        self.seen.append(self.client_address[1])
        if len(self.seen) == self.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.document)))
        self.end_headers()
        self.wfile.write(self.document)

    def log_message(self, *args):
        pass


def test_a_kept_connection_closed_under_a_request_is_retried_once(tmp_path, puppet, hiera_server):
    url = f"{hiera_server.url}/api/v1/hiera/1/{FQDN[COMPUTE]}"
    with urllib.request.urlopen(url, timeout=30) as answer:
        _Dropping.document = answer.read()
    _Dropping.drop, _Dropping.seen = 2, []
    standin = ThreadingHTTPServer(("127.0.0.1", 0), _Dropping)
    standin.daemon_threads = True
    threading.Thread(target=standin.serve_forever, daemon=True).start()
    compiles = Compiles(puppet, f"http://127.0.0.1:{standin.server_address[1]}", tmp_path, 3)
    try:
        values = compiles.next()
        assert compiles.next() == values  # its request is dropped, then sent again
        assert compiles.next() == values
        assert compiles.ruby.wait(timeout=60) == 0, compiles.ruby.stderr.read()
        first, dropped, retried, third = _Dropping.seen
        assert dropped == first, "the second compile should have used the kept connection"
        assert retried != dropped and third == retried
    finally:
        compiles.close()
        standin.shutdown()
        standin.server_close()
