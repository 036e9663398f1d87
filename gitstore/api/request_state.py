"""What the fast path (`fastpath.py`) and the app tell each other about one request.

The fast path sits in front of Flask, so the only road into the app is the WSGI environ: it
puts one `RequestState` there (`KEY`) for a request it passes on, and every part that adds to
it names it in its signature (`observe`, the values and Hiera views). A request that did not
come through the fast path (a test client, the CLI's local calls) has none: `of` is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitstore.answers import Answer

#: The one environ key the state travels under.
KEY = "gitstore.request_state"


@dataclass
class RequestState:
    """One request's messages between the fast path and the app."""

    #: (environment head, catalog head) the fast path read before the app answered: a read
    #: of the head, or at a version number or commit id (looked up on main at that head),
    #: reads at them rather than reading the two refs again.
    heads: tuple[str, str] | None = None
    #: Set by the values view to `heads` when its answer was read at them, so the answer is
    #: theirs whatever landed since (`FastPath._still`).
    read_at: tuple[str, str] | None = None
    #: (route, env, user) of the log line the app wrote (`observe`): what a replay repeats.
    answered: tuple[str, int | None, str | None] | None = None
    #: How the Hiera view read its document (`api/hiera.py`): to audit a replayed reveal.
    hiera_read: tuple | None = None
    #: The answer `http.served` rendered, with its bytes (`store.answers`): what a replay
    #: gives again.
    answer: Answer | None = None


def of(environ: dict) -> RequestState | None:
    """The request's state, when the fast path passed it on."""
    return environ.get(KEY)
