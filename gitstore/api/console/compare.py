"""`/ui/`: two environments compared, node by node (`GET .../environments/A/compare/B`).

The picker (`/ui/environments/<id>/compare`) names two environments, a node, a resource and
versions, and sends the browser to the comparison's own address, so that the access check
sees both environments there. The page is the REST answer rendered: secrets come masked from
there, whatever the reader's roles.
"""

from __future__ import annotations

from typing import Any

from flask import g, redirect, render_template, url_for

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.http import app_store
from gitstore.errors import InvalidInput
from gitstore.versions.compare import CompareQuery

#: The picker's fields the comparison's address keeps as query arguments.
_CARRIED = ("node", "resource", "key", "version_a", "version_b")


@bp.get("/environments/<int:env_id>/compare")
def compare_pick(env_id: int):
    """The form; with `b` named, the comparison of `a` (default: this one) with `b`."""
    other = pinned("b")
    if other is None:  # the form; a pinned version (the environment page's) is A's
        return render_template(
            "console/compare.html",
            env_a=env_id,
            env_b=None,
            choices=_readable_environments(),
            asked={"version_a": pinned("version_a") or pinned()},
            data=None,
            version=None,
        )
    env_a, env_b = _environment_id(pinned("a") or str(env_id), "a"), _environment_id(other, "b")
    carried: dict[str, Any] = {name: pinned(name) for name in _CARRIED if pinned(name)}
    return redirect(url_for("console.compare", env_a=env_a, env_b=env_b, **carried))


@bp.get("/environments/<int:env_a>/compare/<int:env_b>")
def compare(env_a: int, env_b: int):
    asked = {name: pinned(name) for name in (*_CARRIED, "offset", "limit") if pinned(name)}
    data = app_store().comparisons.compare(env_a, env_b, CompareQuery(**asked)).data
    return render_template(
        "console/compare.html",
        env_a=env_a,
        env_b=env_b,
        choices=_readable_environments(),
        asked=asked,
        asked_without_offset={k: v for k, v in asked.items() if k != "offset"},
        data=data,
        version=None,
    )


def _environment_id(text: str, field: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"environment {field} {text!r} must be an environment id", key=field)
    return int(text)


def _readable_environments() -> list[dict]:
    """The environments the caller may read (all of them in an open store)."""
    identity = g.get("identity")
    return [
        entity
        for entity in app_store().environments.list().data
        if identity is None or identity.has("reader", entity["id"])
    ]
