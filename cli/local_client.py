"""`LocalClient`: the `Client` of a store root on this machine, through the `Store` facade."""

from __future__ import annotations

from cli.client import Client
from gitstore import Store, limits
from gitstore.backend.repository import Author


class LocalClient(Client):
    """A store root on this machine: runs each operation's body (`Client`) on the facade."""

    def __init__(self, root: str, author: Author | None = None) -> None:
        self.store = Store(root, local_executor=True)  # the operator's own shell
        limits.configure(root)
        self.store.check()
        self.author = author
