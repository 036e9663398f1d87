"""The one door through which a document becomes the bytes of a file in a repository.

Every write path (REST, CLI, facts upload, upgrade clones) calls `encode`, so rules that apply to
stored bytes (comment-preserving rewrites, encryption of secret leaves, the document limits of
`gitstore.limits`) live in exactly one place. A key batch first tries `set_keys` or
`delete_keys`, which splice the keys' lines into the stored text without parsing it
(`gitstore.yamlsplice`) under the same rules for what they change, and answer None where they
cannot be sure; the writer then calls `encode`.
A writer passes the `caches` of the snapshot it read `old` from (`Snapshot.caches`): the parse
of `old` is found there and the parse of what it writes is kept there (without, they are parsed
again), and so are the texts `set_keys` judged safe to splice.
A writer of environment documents passes the `sealer` of `store.secrets`; only documents that
can hold no secret (catalog files, `environment.yaml`, inventory records) are encoded without.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from gitstore import keypaths, limits, yamlio, yamlsplice
from gitstore.backend.cache import Caches, LRUCache
from gitstore.backend.snapshot import parsed_blob, remember_parsed
from gitstore.errors import InvalidInput
from gitstore.limits import check_plain_data


class Sealer(Protocol):
    """What this door asks of a sealer (`gitstore.secrets.seal.Sealer`, handed out by
    `store.secrets.sealer`): the secret leaves of a document or of one spliced value sealed,
    and whether stored text may hold a plain secret."""

    def rules_of(self, file: str) -> object:
        """The secret rules of `file` (compared, and kept beside what they judged)."""

    def seal(self, file: str, document: dict, old: Any = None) -> dict: ...
    def seal_at(self, file: str, path: Sequence[str], value: Any, old: Any = ...) -> Any: ...
    def may_hold_plain(self, file: str, data: bytes) -> bool: ...


_UNREADABLE = object()
#: A key segment that could name a list index or an integer key: left to the full path.
_INTEGER = re.compile(r"-?[0-9]+")


def encode(
    repository: str,
    path: str,
    document: Any,
    old: bytes | None = None,
    *,
    sealer: Sealer | None = None,
    edited: bool = False,
    caches: Caches | None = None,
) -> bytes:
    """Bytes for `document` at `path` of `repository`, keeping comments and order of `old`.

    With `sealer`, secret leaves are sealed first; values unchanged against `old` keep their
    ciphertext byte for byte. `edited`: `document` is plain data made from the parse of `old`
    by a key batch (`keypaths.apply_batch`: kept keys keep their order, new ones come last),
    so the written bytes parse back to it exactly and it is remembered as their parse.
    """
    if not isinstance(document, dict):
        raise InvalidInput(f"{path}: document must be a mapping", path=path)
    limits.check_document(path, document)  # before any dump: a huge document costs seconds
    data, written = _encode(repository, path, document, old, sealer, caches)
    limits.check_encoded(path, data)
    if edited and written is not None and caches is not None:
        # The next write or read of it does not parse it again.
        remember_parsed(caches, data, written)
    return data


def _encode(
    repository: str,
    path: str,
    document: dict,
    old: bytes | None,
    sealer: Sealer | None,
    caches: Caches | None,
) -> tuple[bytes, dict | None]:
    """The bytes, and the document they read back as in its key order (None if unsure)."""
    parsed = _parse(repository, path, old, caches)
    if sealer is not None:
        document = sealer.seal(path, document, parsed if isinstance(parsed, dict) else None)
    if old and parsed is _UNREADABLE:
        return yamlio.dump(document), document  # an unreadable old file is simply replaced
    data, ordered = yamlio.rewrite_reporting(old, document, parsed=parsed if old else None)
    return data, document if ordered else None


def _parse(repository: str, path: str, old: bytes | None, caches: Caches | None) -> Any:
    if not old:
        return None
    label = f"{repository}:{path}"
    try:
        if caches is None:
            return yamlio.load(old, path=label)
        # The write just read `old` through a Snapshot: its parse is in the blob cache.
        return parsed_blob(caches, old, label)
    except InvalidInput:
        return _UNREADABLE


def set_keys(
    path: str,
    old: bytes | None,
    paths: list[list[Any]],
    *,
    sealer: Sealer | None = None,
    parsed: Any = None,
    caches: Caches | None = None,
) -> bytes | None:
    """The bytes of stored document `old` with each `[*keys, value]` of `paths` set, spliced into
    its text without parsing it (`yamlsplice`); None where the splice cannot be sure of the
    text or of a limit, and the caller takes the full path (`encode` of the edited document).

    What `encode` guarantees holds for what changes: each value is plain data at its depth and
    within the limits, its secret leaves sealed at its place (`Sealer.seal_at`, keeping the
    stored ciphertext of a value that did not change), and the whole text within the size and a
    bound of the key count (else None). For the kept text, `yamlsplice.safe` refuses what the
    full path would refuse (floats that are not finite, nesting that may be too deep), and
    `Sealer.may_hold_plain` what it would seal (a plain value a newer rule makes secret).
    `parsed`, when the caller has it, is the parse of `old`: the parse of the result is then
    remembered in `caches`, as `encode` does for a key batch.
    """
    judged = caches.spliced_texts if caches is not None else None
    rules = _judged(path, old, sealer, judged)
    if rules is _REFUSED or old is None:  # (`_judged` refuses no text)
        return None
    data, sealed, sure = old, [], True
    for *keys, value in paths:
        if not _splice_keys(keys):
            return None
        spot = yamlsplice.locate(data, keys)
        if spot is None:
            return None
        try:
            stored = yamlsplice.stored_value(data, spot, keys) if spot.exists else None
        except (ValueError, InvalidInput):
            return None
        check_plain_data(value, path, depth=len(keys) + 1)
        limits.check_document(path, value)  # before the dump, as `encode` does
        if sealer is not None:
            args = (stored,) if spot.exists else ()
            value = sealer.seal_at(path, keys, value, *args)
        sealed.append([*keys, value])
        if spot.exists and yamlio.same(stored, value):
            continue  # unchanged: its bytes stay
        text = yamlsplice.entry_text(spot, keys, value)
        data = data[: spot.start] + text + data[spot.end :]
        sure = sure and _acceptable(path, text, sealer)
        if not sure and len(paths) > 1:
            return None  # the next key of the batch would read text the scanner refuses
    if not limits.spliced_within(data, yamlsplice.key_count_bound):
        return None
    if sure and judged is not None:
        judged.put(data, rules, len(data))
    if isinstance(parsed, dict) and data is not old and caches is not None:
        remember_parsed(caches, data, keypaths.apply_batch(parsed, "set", sealed))
    return data


def delete_keys(
    path: str,
    old: bytes | None,
    paths: list[list[Any]],
    *,
    sealer: Sealer | None = None,
    parsed: Any = None,
    caches: Caches | None = None,
) -> bytes | None:
    """The bytes of stored document `old` without the entries of `paths` (key paths), their
    lines cut out of its text without parsing it; None where the splice cannot be sure of the
    text (see `set_keys`), where a path does not exist (the full path names it) or where its
    entry is the last of its mapping (which must read as `{}`, not as null)."""
    judged = caches.spliced_texts if caches is not None else None
    rules = _judged(path, old, sealer, judged)
    if rules is _REFUSED or old is None:  # (`_judged` refuses no text)
        return None
    data = old
    for keys in paths:
        if not _splice_keys(keys):
            return None
        spot = yamlsplice.locate(data, keys)
        if spot is None or not spot.exists or spot.alone or yamlsplice.has_comment(data, spot):
            return None
        data = yamlsplice.remove(data, spot)
    if judged is not None:
        judged.put(data, rules, len(data))  # cutting whole lines out keeps what was judged
    if isinstance(parsed, dict) and caches is not None:
        remember_parsed(caches, data, keypaths.apply_batch(parsed, "delete", paths))
    return data


def _splice_keys(keys: list[Any]) -> bool:
    """Whether the splice may address `keys`: strings that name no list index or integer key."""
    return all(isinstance(key, str) and not _INTEGER.fullmatch(key) for key in keys)


_REFUSED: Any = object()


def _judged(path: str, old: bytes | None, sealer: Sealer | None, judged: LRUCache | None) -> Any:
    """The rules of `path` if the splice may read stored text `old`, else _REFUSED: text
    `yamlsplice.safe` accepts, holding no plain value a rule makes secret (which the full path
    would seal: `Sealer.may_hold_plain`).

    `judged` (`Caches.spliced_texts`) holds the texts this store judged, or spliced from judged
    text with judged lines, with the rules under which they hold no plain secret (None without
    a sealer): what this checks took ~0.3 ms of a key write into 27 KB, and a worker that wrote
    a document knows it for the next write (the old text's figure and the delta's, as
    `yamlsplice.safe` allows).
    """
    if not old:
        return _REFUSED
    rules = sealer.rules_of(path) if sealer is not None else None
    if judged is not None and judged.get(old, _REFUSED) == rules:
        return rules
    if not _acceptable(path, old, sealer):
        return _REFUSED
    if judged is not None:
        judged.put(old, rules, len(old))
    return rules


def _acceptable(path: str, text: bytes, sealer: Sealer | None) -> bool:
    """Whether whole lines `text` (a file, or lines put into one) are ones the splice may read."""
    if not yamlsplice.safe(text):
        return False
    return sealer is None or not sealer.may_hold_plain(path, text)
