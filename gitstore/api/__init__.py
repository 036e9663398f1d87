"""The Flask app factory: the only package (with webhook receivers) that imports flask.

Each resource family is one blueprint; views parse, call the `Store` facade and render.
"""

from __future__ import annotations

import importlib.metadata
import os
from typing import Any

from flask import Blueprint, Flask
from flask.json.provider import DefaultJSONProvider

from gitstore import Store, limits
from gitstore.api import (
    access,
    auth,
    batch,
    bench,
    catalog,
    console,
    deadlines,
    environments,
    errors,
    events,
    facts,
    fastpath,
    git_http,
    health,
    hiera,
    hosts,
    http,
    membership,
    metrics,
    observe,
    offload,
    openapi,
    status,
    values,
    versions,
)
from gitstore.api import clusters as cluster_routes
from gitstore.api import graphs as graph_routes
from gitstore.api import plans as plan_routes
from gitstore.api import secrets as secret_routes
from gitstore.api import tags as tag_routes
from gitstore.api import upgrade as upgrade_routes
from gitstore.api.http import STORE

#: App config key: a cluster member's settings (`gitstore serve --cluster`); absent: one node.
CLUSTER = "GITSTORE_CLUSTER"

#: Blueprints in registration order. Later issues add theirs here.
BLUEPRINTS = [
    catalog.bp,
    environments.bp,
    values.bp,
    hiera.bp,
    versions.bp,
    batch.bp,
    facts.bp,
    cluster_routes.bp,
    tag_routes.bp,
    graph_routes.bp,
    plan_routes.bp,
    upgrade_routes.bp,
    git_http.bp,
    status.bp,
    access.bp,
    secret_routes.bp,
    health.bp,
    metrics.bp,
    events.bp,
    openapi.bp,
    console.bp,
    membership.bp,
]


#: Entry-point group of blueprints that front ends outside this package contribute (the forge
#: webhook receivers of `webhooks/`, listed in pyproject.toml): the API never imports them.
FRONT_END_BLUEPRINTS = "gitstore.blueprints"


def front_end_blueprints() -> list[Blueprint]:
    """The blueprints of the entry-point group, in the order of their names."""
    points = importlib.metadata.entry_points(group=FRONT_END_BLUEPRINTS)
    return [point.load() for point in sorted(points, key=lambda p: p.name)]


def create_app(config: dict[str, Any] | None = None, store: Store | None = None) -> Flask:
    """Build the app for `store` (or the store at config GITSTORE_ROOT / $GITSTORE_ROOT)."""
    app = Flask("gitstore")
    app.config.update(GITSTORE_ROOT=os.environ.get("GITSTORE_ROOT"))
    app.config.update(config or {})
    if isinstance(app.json, DefaultJSONProvider):
        app.json.sort_keys = False
    # The store encodes answers with the app's JSON settings, so its kept bytes are the app's.
    encoder = http.encoder_of(app)
    if store is None:
        root = app.config.get("GITSTORE_ROOT")
        if not root:
            raise RuntimeError("create_app needs a store or GITSTORE_ROOT")
        store = Store(
            root,
            local_executor=bool(app.config.get("GITSTORE_LOCAL_EXECUTOR")),
            cluster=app.config.get(CLUSTER),
            encoder=encoder,
        )
    elif encoder is not None:
        store.answers.use(encoder)
    store.check()
    app.extensions[STORE] = store
    bounds = limits.configure(store.root, app.config.get("GITSTORE_LIMITS"))
    app.config["MAX_CONTENT_LENGTH"] = bounds.body_bytes  # 413 before a byte is read
    app.url_map.strict_slashes = False
    errors.register(app)
    observe.register(app)  # first: a refused request too gets an id, a log line, a count
    deadlines.register(app, bounds)  # every request's clock starts before anything else runs
    offload.register(
        app, str(store.root), bounds.heavy_requests
    )  # heavy reads in helper processes, if asked for
    http.bound_requests(app)  # before anything parses what no route reads
    membership.register(app)  # a replica sends writes to the primary, whoever asks
    auth.register(app)  # one access check before every request of every blueprint
    hosts.register(app)  # an open store answers only the names it is served as
    deadlines.take_turns(app)  # heavy requests wait for a turn, once they may be answered
    http.bind_reveal_rule(store)  # sealers compare secrets only for callers who may reveal
    for blueprint in [*BLUEPRINTS, *front_end_blueprints()]:
        app.register_blueprint(blueprint)
    if bench.enabled(app.config.get(bench.ENABLE, os.environ.get(bench.ENABLE))):
        app.register_blueprint(bench.bp)  # bench/lookup.py's baseline, never in production
    # repeated reads of values (Flask's documented way to wrap its WSGI app)
    app.wsgi_app = fastpath.FastPath(app, app.wsgi_app)  # type: ignore[method-assign]
    return app
