"""The console's writes (docs/ui.md): sign-in and out, editing one override key from a node
page, and reverting a commit: each previewed first, then saved as one commit.

Routes join the console's blueprint (`console.bp`). Every form carries the session's CSRF
token (`sessions.py`) and every POST checks it, whatever credentials came with it. An edit or
revert needs the `writer` role on the environment (`auth.py` refuses a POST without it; the
GET forms check here). A GET writes nothing: previews are POSTs, since their dry run builds an
unreferenced commit. On an open store (no access file) nobody signs in and the commits'
author is `console`. A save is conditional on the head the preview was computed at: when the
files it touches changed since, the page shows a fresh preview and saves nothing.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

from flask import Response, g, redirect, render_template, request, url_for

from gitstore import metrics
from gitstore.access.policy import Credentials, require
from gitstore.api import sessions
from gitstore.api.console.blueprint import bp
from gitstore.api.errors import CHALLENGE, error_response, status_of
from gitstore.api.http import app_store, author, may_reveal
from gitstore.backend.repository import Author
from gitstore.errors import (
    Conflict,
    InvalidInput,
    PreconditionFailed,
    TooManyRequests,
    Unauthorized,
)
from gitstore.keypaths import KEY_OPS, get_path, split_dotted
from gitstore.names import is_commit_id, is_number
from gitstore.yamlio import load_strict

log = logging.getLogger("gitstore.api.console")

#: The author of console commits on an open store, where nobody signs in.
CONSOLE_AUTHOR = Author("console", "console@gitstore")
#: The kind of document the console edits (the issue: "an override of one key").
KIND = "overrides"


# -- hooks ------------------------------------------------------------------------------------
@bp.after_request
def _session_cookie(response: Response) -> Response:
    """Set the session cookie when it changed; keep pages of a user out of shared caches."""
    if "reveal" in request.args:
        response.headers["Cache-Control"] = "private, no-store"  # revealed secrets
    elif g.get("identity") is not None or g.get("session_changed"):
        response.headers.setdefault("Cache-Control", "private")
    return sessions.save(response)


@bp.context_processor
def _session_context() -> dict[str, Any]:
    """Names every console template may use; `may_edit`: whether the environment of the
    page (if any) shows edit controls."""
    env_id = (request.view_args or {}).get("env_id")
    return {
        "csrf_token": sessions.csrf_token,
        "csrf_field": sessions.CSRF_FIELD,
        "signed_in": sessions.signed_in_user,
        "open_store": _open_store,
        "may_reveal": may_reveal,
        "may_edit": env_id is not None and may_write(env_id),
    }


@bp.errorhandler(Unauthorized)
def _sign_in_first(exc: Unauthorized):
    """A browser without credentials is sent to the sign-in form; API clients get the
    usual 401 challenge."""
    wants_html = request.accept_mimetypes.best_match(["application/json", "text/html"])
    if request.method == "GET" and wants_html == "text/html" and not _credentials_sent():
        return redirect(url_for("console.login", next=request.full_path.rstrip("?")), 303)
    headers = dict(CHALLENGE) if exc.challenge else None
    return error_response(status_of(exc), exc.message, exc.errors or None, headers)


def _credentials_sent() -> bool:
    return bool(request.headers.get("Authorization") or request.headers.get("X-Auth-Token"))


# -- who may write ----------------------------------------------------------------------------
def _open_store() -> bool:
    return app_store().access.policy() is None


def may_write(env_id: int) -> bool:
    """Whether the caller may edit environment `env_id` (edit controls are shown)."""
    identity = g.get("identity")
    return _open_store() or (identity is not None and identity.has("writer", env_id))


def _require_writer(env_id: int) -> None:
    if _open_store():
        return
    identity = g.get("identity")
    if identity is None:
        raise Unauthorized("sign in to edit", challenge=True)
    require(identity, "writer", env_id)


def _author() -> Author:
    return author() or CONSOLE_AUTHOR


# -- sign-in ----------------------------------------------------------------------------------
@bp.route("/login", methods=["GET", "POST"])
def login():
    asked = request.values.get("next")
    target = _safe_next(asked)
    if _open_store() or request.method == "GET":
        # the form carries a return page only when one was asked for (see `_landing`)
        shown = target if asked else ""
        return render_template("console/login.html", next=shown, version=None)
    sessions.check_csrf()
    name = request.form.get("user", "")
    try:
        identity = _authenticate(name, request.form.get("password", ""))
    except TooManyRequests as exc:
        page = render_template(
            "console/login.html", next=target if asked else "", error=exc.message, version=None
        )
        return page, 429, {"Retry-After": str(exc.retry_after)}
    except Unauthorized as exc:
        page = render_template(
            "console/login.html",
            next=target if asked else "",
            error=exc.message,
            user=name,
            version=None,
        )
        return page, 401
    sessions.sign_in(identity)
    log.info("console sign-in of user %r from %s", identity.name, request.remote_addr)
    if target != asked:  # none asked for, or not a page of this console
        target = _landing(identity)
    return redirect(target, 303)


def _landing(identity) -> str:
    """Where a sign-in without a page to go back to lands: the environment list for a reader
    of the whole store, else the first environment the user may read (the list needs a
    store-wide grant: it would be a 403), else the list, whose 403 names the role."""
    if identity.has("reader", None):
        return url_for("console.environments")
    readable = [n for n in app_store().environment_ids() if identity.has("reader", n)]
    if readable:
        return url_for("console.environment", env_id=readable[0])
    return url_for("console.environments")


def _authenticate(name: str, password: str):
    """As HTTP Basic is checked (`auth.py`): the same access file and failure limit."""
    store, address = app_store(), request.remote_addr or "unknown"
    wait = store.failures.blocked_for(address)
    if wait:
        raise TooManyRequests(
            f"too many failed sign-ins from {address}; try again in {wait} s", retry_after=wait
        )
    try:
        return store.access.authenticate(Credentials(user=name, password=password))
    except Unauthorized:
        store.failures.record(address)
        metrics.auth_failed("bad_password")
        log.warning("console sign-in failed from %s: user %r", address, name[:64])
        raise


@bp.post("/logout")
def logout():
    sessions.check_csrf()
    sessions.sign_out()
    return redirect(url_for("console.login"), 303)


def _safe_next(target: str | None) -> str:
    """Only a path of this console: never another site (an open redirect), never a control
    character (a line break made the redirect a 500 after the session was set)."""
    default = url_for("console.environments")
    if not target or not target.startswith("/ui/") or "\\" in target or not target.isprintable():
        return default
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else default


# -- edit one key -----------------------------------------------------------------------------
@bp.route("/environments/<int:env_id>/nodes/<node>/edit", methods=["GET", "POST"])
def edit(env_id: int, node: str):
    _require_writer(env_id)
    document = app_store().hiera.node_document(env_id, node, who=g.get("user")).data
    form = _edit_form(document)
    if request.method == "GET":
        return _edit_page(env_id, document, form)
    sessions.check_csrf()
    if form["problems"]:
        return _edit_page(env_id, document, form), 422
    if request.form.get("action") == "save":
        return _save_edit(env_id, document, form)
    report = _preview(env_id, form)
    return _edit_page(env_id, document, form, report), 200 if report["valid"] else 422


def _preview(env_id: int, form: dict) -> dict:
    previews = app_store().previews
    fields = (form["pairs"], form["resource"], form["op"], form["paths"])
    return previews.edit(env_id, *fields, _author()).data


def _save_edit(env_id: int, document: dict, form: dict):
    base = _base_commit()
    try:
        saved = app_store().config.update_keys(
            env_id, form["pairs"], form["resource"], KIND, form["op"], form["paths"],
            _author(), expected=base,
        )  # fmt: skip
    except PreconditionFailed as exc:
        report = _preview(env_id, form)  # against the new head: the page says what changed
        return _edit_page(env_id, document, form, report, stale=exc.message), 409
    except (InvalidInput, Conflict):  # refused by the gate: the preview shows its messages
        return _edit_page(env_id, document, form, _preview(env_id, form)), 422
    target = url_for("console.node", env_id=env_id, node=document["node"], saved=saved.commit)
    return redirect(target, 303)


def _edit_page(env_id, document, form, report=None, stale=None) -> str:
    return render_template(
        "console/edit.html",
        env_id=env_id,
        node=document,
        form=form,
        report=report,
        stale=stale,
        chain=_chain(document),
        resources=sorted(document["resources"]),
        version=None,
    )


def _chain(document: dict) -> list[dict]:
    """The levels an override can go to at this node: global, then each of its levels."""
    levels: list[dict[str, Any]] = [{"label": "global", "pairs": []}]
    pairs = [tuple(pair) for pair in document["levels"]]
    for depth, (level, value) in enumerate(pairs, start=1):
        levels.append({"label": f"{level} {value}", "pairs": pairs[:depth]})
    return levels


def _edit_form(document: dict) -> dict:
    """The edit's fields from the query (GET) or the form (POST), checked; `problems` lists
    what is wrong with them (shown next to the form, nothing is written)."""
    values = request.form if request.method == "POST" else request.args
    chain, problems = _chain(document), []
    resource = values.get("resource") or next(iter(sorted(document["resources"])), "")
    key = (values.get("key") or "").strip()
    op = values.get("op") or "set"
    level = values.get("level", str(len(chain) - 1))
    text = values.get("value")
    if text is None:
        text = _current_text(document, resource, key)
    form = {"resource": resource, "key": key, "op": op, "level": level, "value": text}
    if resource not in document["resources"]:
        problems.append(f"resource {resource!r} is not one of this node's resources")
    if op not in KEY_OPS:
        problems.append(f"operation {op!r} is not one of {', '.join(KEY_OPS)}")
    if not is_number(level) or int(level) >= len(chain):
        problems.append(f"level {level!r} is not one of this node's levels")
    path = _checked(lambda: split_dotted(key), problems) if key else None
    if request.method == "POST" and not key:
        problems.append("the key is empty: name it as a dotted path like net.mtu")
    value = _checked(lambda: load_strict(text, path="value"), problems) if op == "set" else None
    form["problems"] = problems
    form["pairs"] = chain[int(level)]["pairs"] if not problems else []
    form["paths"] = ([[*path, value]] if op == "set" else [path]) if path else []
    return form


def _checked(parse, problems: list[str]) -> Any:
    try:
        return parse()
    except InvalidInput as exc:
        problems.append(exc.message)
        return None


def _current_text(document: dict, resource: str, key: str) -> str:
    """The effective value of `key` at the node, as the form's starting text."""
    if not key:
        return ""
    try:
        value = get_path(document["resources"].get(resource, {}), split_dotted(key))
    except (Conflict, InvalidInput):
        return ""
    return _json_text(value)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _base_commit() -> str:
    base = (request.form.get("base") or "").strip()
    if not is_commit_id(base):
        raise InvalidInput("the form names no previewed version (field 'base'): preview first")
    return base


# -- revert a commit --------------------------------------------------------------------------
@bp.route("/environments/<int:env_id>/commits/<commit>/revert", methods=["GET", "POST"])
def revert(env_id: int, commit: str):
    """GET shows the commit and the form; the preview is a POST, because its dry run builds
    a commit (reads never write, docs/design.md)."""
    _require_writer(env_id)
    store = app_store()
    target = store.versions.commits(env_id, limit=1, version=commit).data["entries"][0]
    if request.method == "GET":
        return _revert_page(env_id, target)
    sessions.check_csrf()
    if request.form.get("action") == "save":
        return _save_revert(env_id, target)
    report = _revert_preview(env_id, target)
    return _revert_page(env_id, target, report), 200 if report["valid"] else 422


def _revert_preview(env_id: int, target: dict) -> dict:
    return app_store().previews.revert(env_id, target["commit"], _author()).data


def _save_revert(env_id: int, target: dict):
    base = _base_commit()
    try:
        saved = app_store().versions.revert(
            env_id, {"commit": target["commit"]}, _author(), expected=base
        )
    except PreconditionFailed as exc:
        report = _revert_preview(env_id, target)  # against the new head
        return _revert_page(env_id, target, report, stale=exc.message), 409
    except (InvalidInput, Conflict):  # a conflict: the preview names it
        return _revert_page(env_id, target, _revert_preview(env_id, target)), 422
    done = url_for("console.environment", env_id=env_id, saved=saved.data["commit"])
    return redirect(done, 303)


def _revert_page(
    env_id: int, target: dict, report: dict | None = None, stale: str | None = None
) -> str:
    return render_template(
        "console/revert.html",
        env_id=env_id,
        target=target,
        report=report,
        stale=stale,
        version=None,
    )
