"""The root group: where a command talks, auth on the wire, TLS, and how failures print."""

from __future__ import annotations

import base64
import json
import os
import pty
import select
import socket
import ssl
import subprocess
import threading
import time

import click
import pytest
from cli_helpers import assert_failure, assert_usage_error
from click.testing import CliRunner
from live_server import GITSTORE, isolated_env, self_signed_certificate
from werkzeug.serving import make_server

from cli.main import COMMAND_MODULES, cli
from gitstore.api import create_app


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_help_lists_every_family_and_exits_0():
    result = run("--help")
    assert result.exit_code == 0
    for name in ("config", "env", "component", "def", "level", "facts", "init", "serve"):
        assert f"  {name} " in result.stdout
    assert "cli.server" in COMMAND_MODULES


def test_a_group_without_a_command_prints_its_help():
    result = run("config")
    assert result.exit_code == 2
    assert "Usage: gitstore config [OPTIONS] COMMAND" in result.output
    assert "  get " in result.output and "Error" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["config", "get", "-e", "1", "-r", "astute"],
        ["env", "list"],
        ["component", "list"],
        ["def", "list"],
        ["level", "list", "-e", "1"],
        ["facts", "download", "-e", "1", "-n", "1", "--dir", "x"],
    ],
)
def test_store_commands_need_url_or_root(args):
    assert_usage_error(run(*args), "give exactly one of --url (GITSTORE_URL) or --root")


def test_url_and_root_together_is_a_usage_error(store):
    assert_usage_error(
        run("--url", "http://127.0.0.1:1", "--root", str(store.root), "env", "list"),
        "both were given",
    )
    env = {"GITSTORE_URL": "http://127.0.0.1:1", "GITSTORE_ROOT": str(store.root)}
    assert_usage_error(run("env", "list", env=env), "both were given")


def test_environment_variables_choose_the_mode(fuel_store):
    result = run("env", "list", "-f", "json", env={"GITSTORE_ROOT": str(fuel_store.root)})
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["id"] == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--url", "ftp://host", "env", "list"], "must start with http:// or https://"),
        (
            ["--url", "http://h", "--token", "t", "--user", "u", "--password", "p", "env", "list"],
            "give --token or --user/--password, not both",
        ),
        (["--url", "http://h", "--user", "u", "env", "list"], "--user and --password go together"),
        (["--cacert", "/nonexistent.pem", "env", "list"], "does not exist"),
        (["--bogus", "env", "list"], "No such option '--bogus'"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ],
)
def test_connection_usage_errors(args, fragment):
    assert_usage_error(run(*args), fragment)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://[::1", "is not a URL: Invalid IPv6 URL"),
        ("http://127.0.0.1:8331\n", "has a control character or a space"),  # from an env file
        ("http://127.0.0.1 :8331", "has a control character or a space"),
        ("http://h:port", "is not a URL: Port could not be cast"),
        ("http://h:99999", "is not a URL: Port out of range"),
        ("http://", "names no host"),
        ("http:///api", "names no host"),
    ],
)
def test_a_malformed_url_is_a_usage_error(url, fragment):
    assert_usage_error(run("--url", url, "env", "list"), fragment)
    assert_usage_error(run("env", "list", env={"GITSTORE_URL": url}), fragment)


def test_a_folder_that_is_not_a_store_fails_with_a_message(tmp_path):
    assert_failure(run("--root", str(tmp_path), "env", "list"), "is not a gitstore root")


def test_an_unreachable_server_fails_with_a_message():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once the socket is closed
    assert_failure(
        run("--url", f"http://127.0.0.1:{port}", "env", "list"),
        f"cannot reach http://127.0.0.1:{port}",
    )


def test_local_writes_are_authored_by_the_user(fuel_store):
    run(
        "--root",
        str(fuel_store.root),
        "--user",
        "alice",
        "config",
        "set",
        "-e",
        "1",
        "-r",
        "astute",
        "-k",
        "a",
        "-t",
        "int",
        "-v",
        "1",
    )
    info = fuel_store.environment_repo(1).snapshot().info()
    assert (info.author, info.email) == ("alice", "alice@gitstore")


# -- on the wire -------------------------------------------------------------------------------
def test_token_and_basic_auth_are_sent_as_headers(fuel_store, http_server):
    http_server.dispatcher.app = create_app({"TESTING": True}, store=fuel_store)
    url = http_server.url
    assert run("--url", url, "--token", "s3cret", "env", "list").exit_code == 0
    assert http_server.dispatcher.authorization == "Bearer s3cret"
    env = {"GITSTORE_USER": "alice", "GITSTORE_PASSWORD": "pw"}
    assert run("--url", url + "/", "env", "list", env=env).exit_code == 0
    assert http_server.dispatcher.authorization == "Basic YWxpY2U6cHc="
    assert run("--url", url, "env", "list").exit_code == 0
    assert http_server.dispatcher.authorization is None


def error_app(status: int, body: bytes, content_type: str = "application/json"):
    def app(environ, start_response):
        start_response(f"{status} X", [("Content-Type", content_type)])
        return [body]

    return app


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "token expired"),
        (403, "role operator needed"),
        (429, "too many failed logins"),
        (503, "no keyring configured"),
    ],
)
def test_server_errors_print_the_server_message(http_server, status, message):
    body = json.dumps({"status": status, "message": message}).encode()
    http_server.dispatcher.app = error_app(status, body)
    result = run("--url", http_server.url, "env", "list")
    assert_failure(result, f"Error: {message}")


def test_validation_errors_list_each_problem(http_server):
    body = {
        "status": 400,
        "message": "astute.yaml breaks the schema",
        "errors": [
            {"path": "nodes/1/values/astute.yaml", "key": "fqdn", "message": "must be a string"}
        ],
    }
    http_server.dispatcher.app = error_app(400, json.dumps(body).encode())
    result = run("--url", http_server.url, "env", "list")
    assert_failure(
        result,
        "Error: astute.yaml breaks the schema\n  nodes/1/values/astute.yaml:fqdn: must be a string",
    )


def test_a_server_bug_or_a_non_json_answer_is_reported(http_server):
    http_server.dispatcher.app = error_app(500, b'{"status": 500, "message": "internal"}')
    assert_failure(run("--url", http_server.url, "env", "list"), "server error 500: internal")
    http_server.dispatcher.app = error_app(200, b"<html>", "text/html")
    assert_failure(run("--url", http_server.url, "env", "list"), "did not answer JSON")


# -- TLS ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


def test_https_is_verified_against_cacert(fuel_store, certificate):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    app = create_app({"TESTING": True}, store=fuel_store)
    server = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=context)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        url = f"https://127.0.0.1:{server.server_port}"
        trusted = run("--url", url, "--cacert", str(certificate[0]), "env", "list", "-f", "json")
        assert trusted.exit_code == 0 and json.loads(trusted.stdout)[0]["id"] == 1
        assert_failure(run("--url", url, "env", "list"), "CERTIFICATE_VERIFY_FAILED")
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def _commands(group: click.Group = cli, path: str = "gitstore"):
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, f"{path} {name}")
        else:
            yield f"{path} {name}", command


def test_every_environment_option_has_the_short_form():
    without = [
        path
        for path, command in _commands()
        for param in command.params
        if "--env" in getattr(param, "opts", ()) and "-e" not in param.opts
    ]
    assert without == []


def test_every_environment_option_refuses_an_id_below_1():
    accepting = []
    for path, command in _commands():
        for param in command.params:
            if "--env" in getattr(param, "opts", ()):
                try:
                    param.type.convert("-1", param, None)
                    accepting.append(path)
                except click.BadParameter:
                    pass
    assert accepting == []


def test_a_negative_environment_is_a_usage_error_naming_the_option():
    result = run("--url", "http://127.0.0.1:1", "config", "get", "-e", "-1", "-r", "globals")
    assert_usage_error(result, "'--env' / '-e': -1 is not in the range x>=1")


@pytest.mark.parametrize(
    "args",
    [
        ["tag", "list", "-e", "1", "-f", "json"],
        ["graph", "list", "-e", "1", "-f", "json"],
        ["upgrade", "status", "-e", "1", "-f", "json"],
    ],
)
def test_the_short_environment_option_works_beyond_config(gs, args):
    result = gs(*args)
    assert "No such option" not in result.stderr
    assert result.exit_code == 0, (result.stdout, result.stderr)


def _read_until(fd: int, text: bytes, seconds: float = 30) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while text not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other end closed
                break
    return seen


def test_user_without_password_is_asked_for_it_on_a_terminal(fuel_store, http_server, tmp_path):
    """Over HTTP only: that is where a password is sent."""
    http_server.dispatcher.app = create_app({"TESTING": True}, store=fuel_store)
    terminal, child_end = pty.openpty()
    process = subprocess.Popen(
        [str(GITSTORE), "--url", http_server.url, "--user", "alice", "env", "list"],
        stdin=child_end,
        stdout=child_end,
        stderr=child_end,
        env=isolated_env(tmp_path),
        start_new_session=True,
    )
    os.close(child_end)
    try:
        assert b"Password for alice" in _read_until(terminal, b"Password for alice")
        os.write(terminal, b"s3cret\n")
        _read_until(terminal, b"\x00", seconds=5)  # the rest of its output, until it exits
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(terminal)
    sent = base64.b64decode(http_server.dispatcher.authorization.split()[1]).decode()
    assert sent == "alice:s3cret"


def test_labels_name_versions_and_list_them(gs):
    gs.ok("config", "set", "-e", "1", "-r", "astute", "-k", "a", "--type", "int", "--value", "1")
    created = json.loads(
        gs.ok("label", "create", "before-upgrade", "-e", "1", "-m", "kept", "-f", "json").stdout
    )
    assert created["name"] == "before-upgrade" and created["message"] == "kept"
    table = gs.ok("label", "list", "-e", "1").stdout.splitlines()
    assert table[0].split()[:2] == ["name", "version"]
    assert table[2].split()[:2] == ["before-upgrade", str(created["version"])]
    assert_failure(gs("label", "create", "before-upgrade", "-e", "1"), "already exists")
    assert_failure(gs("label", "create", "123", "-e", "1"), "must not be a number")


def test_a_reader_that_stops_early_is_no_refusal(fuel_store, tmp_path):
    """`gitstore ... | head -1`: exit 141 (a pipe's writer, as the shell reports one killed by
    SIGPIPE), nothing on stderr; 1 would claim the store refused."""
    big = {f"key{i}": "x" * 100 for i in range(5000)}  # ~600 KB: far more than a pipe holds
    fuel_store.config.put(1, [], "globals", "values", big)
    args = [str(GITSTORE), "--root", str(fuel_store.root), "config", "diff", "-e", "1"]
    with subprocess.Popen(
        [*args, "--from", "1", "--to", "main"],  # a line per key, each echoed on its own
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=isolated_env(tmp_path, PYTHONPATH=os.environ.get("PYTHONPATH", "")),
    ) as reader:
        assert reader.stdout.readline()
        reader.stdout.close()  # as `head -1` does once it has its line
        stderr = reader.stderr.read()
        assert reader.wait(timeout=60) == 141, stderr
    assert stderr == b""
