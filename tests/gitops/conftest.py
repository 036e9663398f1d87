"""Fixtures of the GitOps tests: a filled store, and one served by real gunicorn."""

from __future__ import annotations

import pytest

from gitstore import Store

from .helpers import fill, start_gunicorn


@pytest.fixture
def gitops_store(store) -> Store:
    return fill(store)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A filled store served by real gunicorn with two workers, shared by a test module."""
    workdir = tmp_path_factory.mktemp("served")
    store = fill(Store.init(workdir / "root"))
    server = start_gunicorn(store.root, workdir)
    yield store, server
    server.stop()
