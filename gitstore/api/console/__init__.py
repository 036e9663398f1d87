"""The web console at `/ui/` (docs/ui.md): server-rendered pages from `templates/console/`
and `static/`, reading and writing through the facade like any view.

`bp` is its one blueprint; `MODULES` names every module whose views it serves (each adds its
routes to `bp` when imported): the list is the registry, not an import side effect elsewhere.
"""

from __future__ import annotations

from gitstore.api.console import compare, edit, graphs, history, pages, search, subtrees
from gitstore.api.console.blueprint import bp

#: The console's views: environments and nodes (and a node's folded subtrees), changes (diff,
#: key history, a commit's blast radius), two environments compared, search, graphs, and the
#: writes (sign-in, edit, revert).
MODULES = (pages, subtrees, history, compare, search, graphs, edit)

__all__ = ["MODULES", "bp"]
