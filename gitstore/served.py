"""What a read returns: the data, the commit it was read at, and the inputs it depends on.

The identity contract. A shared answer's data (`Served.shared`) is never mutated, and the
entries it takes unchanged from elsewhere are those very objects, not copies:
- `merge/effective.py` merges layers into new mappings only where two layers meet; every
  other entry of a merged document is the (cached, parsed) layer's own object, so the
  effective documents of two nodes hold the same objects for what they inherit;
- `secrets/mask.py` masks a document entry by entry and keeps a masked entry while a document
  holds the very same value at that key (`_mask_entries`): an entry without secrets is
  passed on as it is;
- `answers.py` keeps the JSON of a shared answer by its identity (the Store's answers) and
  builds a new answer's JSON from the JSON of the entries it shares, by identity, with an
  earlier one (fragments).
A copy anywhere on the way is no wrong answer, only a slow one: every lookup would mask and
encode every entry again. tests/test_identity_contract.py breaks when a copy is made.
"""

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
