"""Fixtures for CLI tests: one real HTTP server for the session, and a runner per mode.

Every CLI test runs twice through the `gs` fixture: once on the local store (`--root`) and once
against the real Flask app served over HTTP on a loopback port (`--url`). The server is started
once; each test points it at its own store through a small WSGI dispatcher.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import hiera_source
from click.testing import CliRunner, Result
from werkzeug.serving import make_server

from cli.main import cli
from gitstore import Store
from gitstore.api import create_app


class Dispatcher:
    """The WSGI app the session server runs: forwards to the current test's app.

    It also keeps the `Authorization` header of the last request, so tests can check what the
    client sent on the wire.
    """

    def __init__(self) -> None:
        self.app: Callable | None = None
        self.authorization: str | None = None

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        self.authorization = environ.get("HTTP_AUTHORIZATION")
        return self.app(environ, start_response)


@dataclass
class Server:
    dispatcher: Dispatcher
    url: str


@pytest.fixture(scope="session")
def http_server():
    dispatcher = Dispatcher()
    server = make_server("127.0.0.1", 0, dispatcher, threaded=True)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield Server(dispatcher, f"http://127.0.0.1:{server.server_port}")
    server.shutdown()
    thread.join()
    server.server_close()


@dataclass
class Gs:
    """Runs `gitstore` in one mode against one store."""

    mode: str
    connection: list[str]
    store: Any

    def __call__(self, *args: str, input: str | None = None) -> Result:
        runner = CliRunner()
        return runner.invoke(cli, [*self.connection, *args], input=input, catch_exceptions=False)

    def ok(self, *args: str, input: str | None = None) -> Result:
        result = self(*args, input=input)
        assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
        return result


def connect(mode: str, store, server: Server) -> list[str]:
    if mode == "local":
        return ["--root", str(store.root)]
    server.dispatcher.app = create_app({"TESTING": True}, store=store)
    return ["--url", server.url]


@pytest.fixture(params=["local", "http"])
def gs(request, fuel_store, http_server) -> Gs:
    """`gitstore` on the Fuel store (component fuel, environment 1 with hierarchy [nodes])."""
    return Gs(request.param, connect(request.param, fuel_store, http_server), fuel_store)


FUEL_RESOURCES = ["astute", "globals", "override/plugins", "override/node"]  # as tests/conftest


@pytest.fixture(scope="module")
def shared_fuel_store(tmp_path_factory):
    """One Fuel store per test module, for tests that never change it (usage errors...)."""
    store = Store.init(tmp_path_factory.mktemp("shared") / "store")
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in FUEL_RESOURCES]}
    )
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    return store


@pytest.fixture(params=["local", "http"])
def gs_readonly(request, shared_fuel_store, http_server) -> Gs:
    """`gitstore` on the module's shared Fuel store: only for tests that do not write."""
    store = shared_fuel_store
    return Gs(request.param, connect(request.param, store, http_server), store)


@pytest.fixture(params=["local", "http"])
def gs_empty(request, store, http_server) -> Gs:
    """`gitstore` on an empty store."""
    return Gs(request.param, connect(request.param, store, http_server), store)


@pytest.fixture
def hiera(tmp_path) -> Callable[[str], Path]:
    """Copy node N's hiera folder of the sample into a temporary folder; return its path."""

    def make(node: str = "1") -> Path:
        target = tmp_path / f"hiera-{node}"
        shutil.copytree(hiera_source(node), target)
        return target

    return make
