"""The write side: secret leaves become sealed values before a document reaches git.

`Sealer.seal` is what `documents.encode` calls for every document written to an environment.
For each leaf of the new document, with the stored document walked alongside:

- the mask sentinel `"******"` means "unchanged": the stored value is kept as it is;
- a sealed value equal to the stored one is kept; any other sealed value must open at its
  place (when the keyring is at hand), so a ciphertext copied from elsewhere is refused;
- a plain value at a secret path keeps the stored ciphertext if that opens to the same value
  (so an unchanged secret keeps its bytes and diffs stay clean), else it is sealed anew with
  the active key and a fresh nonce. Without a keyring that is refused (503) naming the key.
  The comparison is made only when `compare` is on: for a caller who may not reveal the
  secret it would be a guessing oracle (see `caller.py`), so every value is sealed anew.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gitstore import yamlsplice
from gitstore.errors import InvalidInput, Unavailable, Undecryptable
from gitstore.merge.diff import same_value
from gitstore.secrets import cipher
from gitstore.secrets.cipher import Place
from gitstore.secrets.keyring import Keys
from gitstore.secrets.leaves import MISSING, rebuild
from gitstore.secrets.rules import DEFAULT_SUFFIXES, WILDCARD, Rules

#: What a masked value reads as, and what a write sends back to mean "keep the stored value".
MASK = "******"
#: How a null value may be written: never secret.
_NULLS = (b"", b"~", b"null", b"Null", b"NULL")


class Sealer:
    """Seals documents written to one environment repository.

    Args:
        repository: the repository part of each value's place (`environments/<id>`).
        keys: the keyring's keys, or None when the store has no keyring.
        rules_of: file path -> the rules of that file.
        keyring: why secrets are unavailable when `keys` is None (named by errors).
        compare: whether a plain value may be compared with the stored one (only for callers
            who may reveal it; see `caller.py`).
    """

    def __init__(
        self,
        repository: str,
        keys: Keys | None,
        rules_of: Callable[[str], Rules],
        keyring: str = "no keyring",
        *,
        compare: bool = True,
    ) -> None:
        self.repository = repository
        self.compare = compare
        self.keys = keys
        self.rules_of = rules_of
        self.keyring = keyring
        self.sealed = 0

    def seal(self, file: str, document: dict, old: Any = None) -> dict:
        """`document` with its secret leaves sealed; `old` is the stored document (or None)."""

        def leaf(value: Any, stored: Any, path: tuple[str, ...], secret: bool) -> Any:
            return self._leaf(value, stored, Place(self.repository, file, path), secret)

        return rebuild(document, self.rules_of(file), leaf, old if old is not None else MISSING)

    def seal_at(self, file: str, path: Sequence[str], value: Any, old: Any = MISSING) -> Any:
        """`value`, to be stored at key path `path` (strings) of `file`, with its secret leaves
        sealed as `seal` would seal them there; `old` is the stored value at `path` (or
        MISSING). A key write that splices one entry seals that entry alone."""
        rules = self.rules_of(file)
        place = tuple(path)

        def leaf(value: Any, stored: Any, path: tuple[str, ...], secret: bool) -> Any:
            return self._leaf(value, stored, Place(self.repository, file, path), secret)

        return rebuild(value, rules, leaf, old, place, rules.secret(place[:-1]))

    def may_hold_plain(self, file: str, data: bytes) -> bool:
        """Whether stored text `data` of `file` (one `yamlsplice.safe` accepted) may hold a plain
        value at a secret path, judged by its lines: a key named as a rule names a secret
        (its last segment, as a suffix) whose value is not sealed or null, or has lines below
        it. `seal` of the whole document would seal such a value; a key write that splices
        one entry must leave the document to that full path."""
        rules = self.rules_of(file)
        if rules.everything:
            return True
        names = list(DEFAULT_SUFFIXES) if rules.defaults else []
        for pattern in rules.patterns:
            if pattern[-1] == WILDCARD:
                return True
            names.append(pattern[-1].lower())
        if not names:
            return False
        values = yamlsplice.values_of_keys_ending(data, [name.encode() for name in names])
        return values is None or not all(
            value.startswith(cipher.PREFIX.encode()) or value in _NULLS for value in values
        )

    def reseal(self, file: str, document: dict) -> dict:
        """`document` with every sealed value on the active key and no plain secret left."""
        keys = self._require_keys()

        def leaf(value: Any, stored: Any, path: tuple[str, ...], secret: bool) -> Any:
            place = Place(self.repository, file, path)
            if cipher.is_sealed(value):
                if cipher.key_id_of(value) == keys.active:
                    return value
                return self._seal_new(cipher.open_sealed(value, keys.keys, place), place)
            if secret and value is not None:
                return self._seal_new(value, place)
            return value

        return rebuild(document, self.rules_of(file), leaf)

    def rebind(self, old_file: str, new_file: str, document: dict) -> dict:
        """`document` moved from `old_file` to `new_file`: its sealed values re-sealed there."""
        keys = self._require_keys()

        def leaf(value: Any, stored: Any, path: tuple[str, ...], secret: bool) -> Any:
            if not cipher.is_sealed(value):
                return value
            plain = cipher.open_sealed(value, keys.keys, Place(self.repository, old_file, path))
            return self._seal_new(plain, Place(self.repository, new_file, path))

        return rebuild(document, self.rules_of(new_file), leaf)

    # -- one leaf ------------------------------------------------------------------------------
    def _leaf(self, value: Any, stored: Any, place: Place, secret: bool) -> Any:
        if isinstance(value, str) and value == MASK:
            if stored is MISSING:
                if secret:
                    raise InvalidInput(
                        f"{place.named()}: {MASK} means 'unchanged', but no "
                        "value is stored there to keep; send the value itself",
                        path=place.file,
                        key=place.dotted,
                    )
                return value
            value = stored  # unchanged: as if the stored value had been sent back
        if cipher.is_sealed(value):
            if value != stored and self.keys is not None:
                cipher.open_sealed(value, self.keys.keys, place)  # refuse what cannot open here
            return value
        if not secret or value is None:
            return value
        if self.compare and cipher.is_sealed(stored) and self._opens_to(stored, place, value):
            return stored
        return self._seal_new(value, place)

    def _opens_to(self, stored: str, place: Place, value: Any) -> bool:
        if self.keys is None:
            return False
        try:
            return same_value(cipher.open_sealed(stored, self.keys.keys, place), value)
        except Undecryptable:
            return False  # a broken stored value is simply replaced

    def _seal_new(self, value: Any, place: Place) -> str:
        keys = self.keys
        if keys is None:
            raise Unavailable(
                f"secrets are unavailable ({self.keyring}), so the secret at "
                f"{place.named()} cannot be stored encrypted",
                path=place.file,
                key=place.dotted,
            )
        self.sealed += 1
        return cipher.seal(value, keys.active, keys.keys[keys.active], place)

    def _require_keys(self) -> Keys:
        if self.keys is None:
            raise Unavailable(f"secrets are unavailable ({self.keyring})")
        return self.keys
