"""Settings, networks and the environment upgrade (docs/upgrade.md).

    GET|PUT  /api/v1/releases/<id>/settings          a release's default settings
    GET|PUT  /api/v1/releases/<id>/upgrade_rules     its attribute migration rules
    GET|PUT  /api/v1/clusters/<id>/settings          {editable, generated}: secrets masked
    GET|PUT  /api/v1/clusters/<id>/network           {node_groups, networks, vips}
    GET      /api/v1/clusters/<id>/upgrade           the relation and its status
    POST     /api/v1/clusters/<id>/upgrade           404: one-call upgrade is not implemented
    POST     /api/v1/clusters/<orig>/upgrade/clone   create the seed
    POST     /api/v1/clusters/<seed>/upgrade/assign  move nodes from the original
    POST     /api/v1/clusters/<seed>/upgrade/vips    copy the original's VIPs

An upgrade request also acts on the peer environment, which the route does not name, so the
caller's roles are checked there too: cloning creates an environment (writer on the store),
assigning takes nodes out of the original (writer there), copying VIPs and the status read it.
"""

from __future__ import annotations

from flask import Blueprint, g

from gitstore.access.policy import require
from gitstore.api.http import STORE, app_store, author, flag, json_body, served, version_arg
from gitstore.errors import NotFound

bp = Blueprint("upgrade", __name__, url_prefix="/api/v1")


@bp.record_once
def _complete_interrupted_moves(state) -> None:
    """A server start completes the moves a killed process left half done (upgrade.moves)."""
    state.app.extensions[STORE].moves.recover()


def _also_needs(role: str, env_id: int | None) -> None:
    """The caller must also hold `role` on `env_id` (None: the whole store)."""
    identity = getattr(g, "identity", None)
    if identity is not None:
        require(identity, role, env_id)


# -- releases ---------------------------------------------------------------------------------
@bp.get("/releases/<int:release_id>/settings")
def get_release_settings(release_id: int):
    return served(app_store().settings.release_settings(release_id, version_arg()))


@bp.put("/releases/<int:release_id>/settings")
def put_release_settings(release_id: int):
    return served(app_store().settings.put_release_settings(release_id, json_body(), author()))


@bp.get("/releases/<int:release_id>/upgrade_rules")
def get_upgrade_rules(release_id: int):
    return served(app_store().settings.upgrade_rules(release_id, version_arg()))


@bp.put("/releases/<int:release_id>/upgrade_rules")
def put_upgrade_rules(release_id: int):
    return served(app_store().settings.put_upgrade_rules(release_id, json_body(), author()))


# -- clusters ---------------------------------------------------------------------------------
@bp.get("/clusters/<int:env_id>/settings")
def get_cluster_settings(env_id: int):
    who = getattr(g, "user", None)
    return served(app_store().settings.cluster_settings(env_id, version_arg(), flag("reveal"), who))


@bp.put("/clusters/<int:env_id>/settings")
def put_cluster_settings(env_id: int):
    return served(app_store().settings.put_cluster_settings(env_id, json_body(), author()))


@bp.get("/clusters/<int:env_id>/network")
def get_network(env_id: int):
    return served(app_store().networks.get(env_id, version_arg()))


@bp.put("/clusters/<int:env_id>/network")
def put_network(env_id: int):
    return served(app_store().networks.put(env_id, json_body(), author()))


# -- upgrade ----------------------------------------------------------------------------------
@bp.get("/clusters/<int:env_id>/upgrade")
def upgrade_status(env_id: int):
    store = app_store()
    peer = store.relations.peer_of(env_id)
    if peer is not None and peer in store.environment_ids():
        _also_needs("reader", peer)
    return served(store.upgrades.status(env_id))


@bp.post("/clusters/<int:env_id>/upgrade")
def upgrade_in_one_call(env_id: int):
    app_store().environment_repo(env_id)  # an unknown environment says so first
    raise NotFound(
        f"upgrading environment {env_id} in one call is not implemented: clone it "
        "(POST .../upgrade/clone), move its nodes (.../upgrade/assign) and copy its "
        "VIPs (.../upgrade/vips); see docs/upgrade.md"
    )


@bp.post("/clusters/<int:env_id>/upgrade/clone")
def upgrade_clone(env_id: int):
    body = json_body()
    _also_needs("writer", None)
    return served(app_store().upgrades.clone(env_id, body, author()), status=201)


@bp.post("/clusters/<int:env_id>/upgrade/assign")
def upgrade_assign(env_id: int):
    body = json_body()
    store = app_store()
    _also_needs("writer", store.relations.original_of(env_id))
    return served(store.moves.assign(env_id, body, author()))


@bp.post("/clusters/<int:env_id>/upgrade/vips")
def upgrade_vips(env_id: int):
    store = app_store()
    _also_needs("reader", store.relations.original_of(env_id))
    return served(store.upgrades.copy_vips(env_id, author()))
