"""What a read returns: the data, the commit it was read at, and the inputs it depends on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Served:
    """An answer and its provenance.

    `inputs` lists what the answer was computed from (blob and tree ids, merge mode, query) so a
    front end can derive an ETag that stays the same across commits that change none of them.
    `shared` says `data` comes from a cache keyed by immutable ids and is never mutated, so a
    front end may keep its encoding for as long as it holds the object. `revealed` lists the
    secrets opened in `data` (what a reveal's audit line names).
    """

    data: Any
    commit: str | None = None
    version: int | None = None
    inputs: tuple = field(default_factory=tuple)
    masked: tuple[str, ...] = ()
    shared: bool = False
    revealed: tuple[str, ...] = ()
