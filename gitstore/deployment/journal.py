"""The records of node moves under way between environments, and the store's upgrade lock.

A move of nodes into an upgrade seed (`gitstore.upgrade.moves`) changes two repositories, so it
writes an *intent record* first (`<root>/upgrade/intents/<id>.json`) and deletes it last. The
node inventory reads the records here to hide, in a seed, the nodes its original still holds
(`in_flight`): readers never see a node twice. The lock (`<root>/upgrade/upgrade.lock`,
`flock`: the kernel drops it when its holder dies) serialises moves and upgrade clones.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from gitstore import files
from gitstore.backend.repository import Author
from gitstore.errors import NotFound
from gitstore.layout import INVENTORY_NODES
from gitstore.names import is_number
from gitstore.repositories import Repositories

FOLDER = "upgrade"
INTENTS = f"{FOLDER}/intents"
LOCK = f"{FOLDER}/upgrade.lock"

_log = logging.getLogger("gitstore.upgrade.moves")


@dataclass(frozen=True)
class Intent:
    """What one move does: `nodes` of `original` into `seed`, with these roles."""

    id: str
    original: int
    seed: int
    nodes: list[int]
    roles: list[str] | None
    reprovision: bool
    author: list[str]

    @property
    def who(self) -> Author:
        return Author(*self.author)


class MoveJournal:
    """Intent records on disk and the store-wide upgrade lock."""

    def __init__(self, repos: Repositories) -> None:
        self._repos = repos
        self._local = threading.local()

    # -- the lock ---------------------------------------------------------------------------
    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the store's upgrade lock (re-entrant within a thread)."""
        if self.held_here():
            yield
            return
        with files.exclusive_lock(self._repos.root / LOCK, 0o644):
            self._local.held = True
            try:
                yield
            finally:
                self._local.held = False

    def held_here(self) -> bool:
        """Whether this thread holds the lock (a replay must not start inside a move)."""
        return getattr(self._local, "held", False)

    # -- readers ---------------------------------------------------------------------------
    def in_flight(self, env_id: int) -> set[int]:
        """Node ids the served inventory of `env_id` hides: copied by a pending move into this
        seed while its original still holds them."""
        hidden: set[int] = set()
        for intent in self.pending():
            if intent.seed != env_id:
                continue
            try:
                held = self.node_ids(intent.original)
            except NotFound:
                continue  # the original is gone: its nodes can only be in the seed now
            hidden |= held & set(intent.nodes)
        return hidden

    def pending(self) -> list[Intent]:
        """The intent records on disk (moves under way or interrupted)."""
        folder = self._repos.root / INTENTS
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        except FileNotFoundError:
            return []
        intents = []
        for name in names:
            try:
                intents.append(Intent(**json.loads((folder / name).read_text())))
            except FileNotFoundError:
                continue  # completed meanwhile
            except (ValueError, TypeError) as exc:  # written whole by rename: edited by hand
                _log.error("ignoring unreadable move record %s: %s", folder / name, exc)
        return intents

    def node_ids(self, env_id: int) -> set[int]:
        """The ids of the node records `env_id` serves now."""
        snapshot = self._repos.environment_repo(env_id).snapshot()
        return {
            int(e.name[:-5])
            for e in snapshot.list(INVENTORY_NODES)
            if e.name.endswith(".yaml") and is_number(e.name[:-5])
        }

    # -- records ---------------------------------------------------------------------------
    def write(self, intent: Intent) -> None:
        """Write the record whole (flushed, renamed into place) before the move starts."""
        folder = self._repos.root / INTENTS
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{intent.id}.tmp"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(asdict(intent), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(partial, folder / f"{intent.id}.json")
        files.fsync_folder(folder)

    def delete(self, intent: Intent) -> None:
        folder = self._repos.root / INTENTS
        try:
            os.unlink(folder / f"{intent.id}.json")
        except FileNotFoundError:
            return
        files.fsync_folder(folder)
