"""Fixtures shared by every test: isolated git, real stores on disk, the real Flask app."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitstore import Store
from gitstore.api import create_app

PROJECT = Path(__file__).resolve().parents[1]
SAMPLE_REPO = PROJECT / "sample_repo"

FUEL_RESOURCES = ["astute", "globals", "override/plugins", "override/node"]


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch, tmp_path_factory):
    """Keep the developer's git configuration and identity out of every test."""
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith("GIT_") or name.startswith("GITSTORE_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")


@pytest.fixture
def store(tmp_path) -> Store:
    """An empty store."""
    return Store.init(tmp_path / "store")


@pytest.fixture
def fuel_store(store) -> Store:
    """Component `fuel` with the Fuel resources, and environment 1 with hierarchy [nodes]."""
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in FUEL_RESOURCES]}
    )
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    return store


@pytest.fixture
def app(fuel_store):
    app = create_app({"TESTING": True}, store=fuel_store)
    return app


@pytest.fixture
def client(app):
    return app.test_client()
