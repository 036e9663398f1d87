"""The console's blueprint (`/ui/`), its templates and style sheets, and what every page shares:
the `?version=` pin and `link()`, a console URL that keeps it, so the whole console travels in
time. The modules of this package add their views to `bp`.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request, url_for

bp = Blueprint(
    "console",
    __name__,
    url_prefix="/ui",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)


def pinned(name: str = "version") -> str | None:
    """A version argument (`?version=` unless named); blank is None, the head (a form left
    empty submits an empty field)."""
    return (request.args.get(name) or "").strip() or None


@bp.app_context_processor
def _links() -> dict[str, Any]:
    """`link(endpoint, **args)`: a console URL that keeps the version the page was read at."""

    def link(endpoint: str, **args: Any) -> str:
        version = pinned()
        if version is not None:
            args.setdefault("version", version)
        return url_for(endpoint, **args)

    return {"link": link}
