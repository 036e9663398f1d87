"""The keyring: the AES-256 keys that seal secret values, kept outside every repository.

`<root>/keyring.yaml`, mode 0600, created by `gitstore init`::

    version: 1
    active: k2
    keys:
      k1: {key: <base64 of 32 random bytes>, created: '2024-05-01T10:00:00Z'}
      k2: {key: ..., created: ...}

New values are sealed with the `active` key; every key stays usable for opening values until it
is removed (`gitstore secrets remove-key`, refused while a value uses it). Every process reads
the file once and again whenever it changes on disk (inode, size, mtime), so a rotation done by
`gitstore secrets rotate` reaches every gunicorn worker without a restart. Edits take a lock
file, then write a new file and rename it into place.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitstore import files, yamlio
from gitstore.errors import Conflict, InvalidInput, NotFound, Unavailable

KEYRING_FILE = "keyring.yaml"
KEY_BYTES = 32
#: Key ids appear inside every sealed value (`kid=k1`): short, and safe in that syntax.
KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HEADER = (
    b"# gitstore keyring: the keys that seal secret values in the store's repositories.\n"
    b"# Keep it mode 0600, out of every repository, and backed up apart from them: without\n"
    b"# it no secret can be read back. Managed by `gitstore secrets rotate|remove-key`.\n"
)


@dataclass(frozen=True)
class Keys:
    """One parsed version of a keyring: key id -> 32-byte key, and the id new values use."""

    active: str
    keys: dict[str, bytes]
    created: dict[str, str]

    def key(self, key_id: str) -> bytes | None:
        return self.keys.get(key_id)


class Keyring:
    """A keyring file: reading (cached per process, re-read on change), creating, editing."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._watched = files.WatchedFile(self.path, self._load)

    @classmethod
    def of_root(cls, root: str | os.PathLike) -> Keyring:
        return cls(Path(root) / KEYRING_FILE)

    # -- reading -----------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.exists()

    def current(self) -> Keys | None:
        """The keys, or None when there is no keyring (secrets are then unavailable)."""
        return self._watched.current()

    def _load(self, info: os.stat_result) -> Keys:
        _check_private(self.path, info)
        return _parse(self.path.read_bytes(), self.path)

    def require(self) -> Keys:
        """The keys; Unavailable, saying that secrets cannot be used, without a keyring."""
        keys = self.current()
        if keys is None:
            raise Unavailable(
                f"secrets are unavailable: no keyring at {self.path} (restore it "
                "from its backup; `gitstore init` creates one for a new store)"
            )
        return keys

    # -- editing -----------------------------------------------------------------------------
    def create(self) -> bool:
        """Create the keyring with one fresh key unless it exists; whether it was created."""
        with self._locked():
            if self.path.exists():
                return False
            files.write_private(self.path, _render({"active": "k1", "keys": {"k1": _new_entry()}}))
            return True

    def add_key(self) -> str:
        """A fresh key, made active; its id (`k<N>`, one more than the largest number in use)."""

        def change(data: dict) -> str:
            numbers = [int(kid[1:]) for kid in data["keys"] if re.fullmatch(r"k[0-9]+", kid)]
            key_id = f"k{max(numbers, default=0) + 1}"
            data["keys"][key_id] = _new_entry()
            data["active"] = key_id
            return key_id

        return self._edit(change)

    def remove_key(self, key_id: str, in_use: Callable[[str], int]) -> None:
        """Remove key `key_id`; refused for the active key and while `in_use(key_id)` > 0."""

        def change(data: dict) -> None:
            if key_id not in data["keys"]:
                raise NotFound(
                    f"the keyring has no key {key_id!r} (see `gitstore secrets keys`)", key="key"
                )
            if key_id == data["active"]:
                raise Conflict(f"key {key_id!r} is the active key; rotate first", key="key")
            count = in_use(key_id)
            if count:
                raise Conflict(
                    f"key {key_id!r} still seals {count} values at the head of the "
                    "store; run `gitstore secrets rotate --no-new-key` first",
                    key="key",
                )
            del data["keys"][key_id]

        self._edit(change)

    def _edit(self, change: Callable[[dict], Any]) -> Any:
        with self._locked():
            keys = _parse(self.path.read_bytes(), self.path) if self.path.exists() else None
            if keys is None:
                raise Unavailable(f"no keyring at {self.path}: nothing to change")
            data = {
                "active": keys.active,
                "keys": {
                    kid: {"key": _b64(key), "created": keys.created.get(kid)}
                    for kid, key in keys.keys.items()
                },
            }
            result = change(data)
            files.write_private(self.path, _render(data))
            return result

    def _locked(self):
        return files.exclusive_lock(self._lock_path)


# -- the file -----------------------------------------------------------------------------------
def _new_entry() -> dict:
    created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"key": _b64(os.urandom(KEY_BYTES)), "created": created}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _render(data: dict) -> bytes:
    ordered = {
        "version": 1,
        "active": data["active"],
        "keys": {
            kid: {k: v for k, v in entry.items() if v is not None}
            for kid, entry in data["keys"].items()
        },
    }
    return _HEADER + yamlio.dump(ordered)


def _parse(raw: bytes, path: Path) -> Keys:
    """The keys in `raw`; Unavailable naming the bad part (a broken keyring serves no secret)."""
    try:
        data = yamlio.load_mapping(raw, path=str(path))
        entries = data.get("keys")
        if not isinstance(entries, dict) or not entries:
            raise InvalidInput("'keys' must be a mapping of key id to key")
        keys, created = {}, {}
        for key_id, entry in entries.items():
            keys[str(key_id)] = _key_of(str(key_id), entry)
            if isinstance(entry, dict) and entry.get("created"):
                created[str(key_id)] = str(entry["created"])
        active = data.get("active")
        if active not in keys:
            raise InvalidInput(f"'active' is {active!r}, which is not one of the keys")
    except InvalidInput as exc:
        raise Unavailable(
            f"keyring {path} is invalid, so secrets are unavailable: {exc.message}"
        ) from exc
    return Keys(str(active), keys, created)


def _key_of(key_id: str, entry: Any) -> bytes:
    if not KEY_ID.match(key_id):
        raise InvalidInput(f"key id {key_id!r} may hold only letters, digits, '_', '.', '-'")
    text = entry.get("key") if isinstance(entry, dict) else None
    try:
        key = base64.b64decode(str(text or ""), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"keys.{key_id}.key is not base64") from exc
    if len(key) != KEY_BYTES:
        raise InvalidInput(f"keys.{key_id}.key must hold {KEY_BYTES} bytes, not {len(key)}")
    return key


def _check_private(path: Path, info: os.stat_result) -> None:
    """Refuse a keyring others may read: its keys open every secret of the store."""
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise Unavailable(
            f"keyring {path} is readable by others (mode "
            f"{stat.S_IMODE(info.st_mode):04o}); run `chmod 600 {path}`"
        )
