"""`LocalClient`: the `Client` of a store root on this machine, through the `Store` facade."""

from __future__ import annotations

from cli.client import Client
from gitstore import Store, limits
from gitstore.backend.repository import Author
from gitstore.secrets.caller import KEYRING_HOLDER


class LocalClient(Client):
    """A store root on this machine: runs each operation's body (`Client`) on the facade."""

    def __init__(self, root: str, author: Author | None = None) -> None:
        # The operator's own shell, holding the keyring: it may compare sent secrets.
        self.store = Store(root, local_executor=True, caller=KEYRING_HOLDER)
        limits.configure(root)
        self.store.check()
        self.author = author
