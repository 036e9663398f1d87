"""Write new objects as one git pack and its index, the way `git index-pack` lands a pack.

A commit written as loose objects creates a file per object (blob, trees, commit). On a disk
where file creation is slow after mass deletions (maintenance deletes the loose files it packs:
see `CommitQueue`), a pack of the same objects costs two files. The pack holds every object
whole (no deltas): maintenance's repacks find deltas later, as they do for loose objects.

Formats: git's pack version 2 and pack index version 2 (`Documentation/gitformat-pack.txt`).
The files are written under temporary names git ignores (`tmp_pack_*`, `tmp_idx_*`), flushed to
disk when `durable`, then renamed: the pack first, its index last, so a reader (git, libgit2),
which finds packs by their index, never sees an index without its pack. A process killed on the
way leaves temporary files, or a pack without an index, which no reader uses and maintenance
removes (`gitstore.ops.maintenance`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path

from gitstore.files import fsync_folder

#: The kinds of object a pack holds, by their number there (libgit2 numbers them the same).
KINDS = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
#: Offsets a version 2 index stores in 31 bits; a larger pack needs its 64-bit table, which
#: a pack of one write never does.
MAX_PACK_BYTES = 0x7FFFFFFF
#: zlib's fastest level, libgit2's for loose objects: the pack is written under the write lock,
#: and the full repack (`git repack -f`) compresses everything again.
COMPRESSION = 1
#: Prefixes of the temporary files (git's own, which its tools ignore).
TMP_PACK = "tmp_pack_"
TMP_IDX = "tmp_idx_"
#: A version 2 index begins with this magic and its version, before its fan-out table.
_IDX_V2 = b"\377tOc"
_V2_FANOUT = 8


def object_id(kind: int, data: bytes) -> bytes:
    """The binary id git gives an object of `kind` holding `data`."""
    return hashlib.sha1(KINDS[kind] + b" %d\0" % len(data) + data).digest()


def count(folder: Path) -> int:
    """Packs in a pack folder (one `scandir`)."""
    try:
        with os.scandir(folder) as entries:
            return sum(1 for entry in entries if entry.name.endswith(".pack"))
    except FileNotFoundError:
        return 0


def indexed_count(idx: Path) -> int:
    """Objects a pack index (version 1 or 2) lists, from the last of its 256 fan-out counts;
    0 when it is unreadable or gone."""
    try:
        with idx.open("rb") as file:
            head = file.read(_V2_FANOUT + 256 * 4)
    except OSError:
        return 0
    end = (_V2_FANOUT if head[:4] == _IDX_V2 else 0) + 256 * 4
    return int.from_bytes(head[end - 4 : end], "big") if len(head) >= end else 0


def indexed_ids(idx: Path) -> list[str]:
    """The object ids a pack index (version 1 or 2) lists; OSError when it is unreadable."""
    data = idx.read_bytes()
    if data[:4] == _IDX_V2:  # the fan-out table, then the sorted ids
        start = _V2_FANOUT + 256 * 4
        total = int.from_bytes(data[start - 4 : start], "big")
        return [data[at : at + 20].hex() for at in range(start, start + 20 * total, 20)]
    total = int.from_bytes(data[256 * 4 - 4 : 256 * 4], "big")  # then (offset, id) entries
    starts = range(256 * 4 + 4, 256 * 4 + 24 * total, 24)
    return [data[at : at + 20].hex() for at in starts]


def write_pack(folder: Path, objects: Iterable[tuple[int, bytes]], *, durable: bool) -> Path:
    """Write `objects` ((kind, data), each distinct) into the pack folder `folder`
    (`objects/pack`) as one pack and its index; the path of the pack.

    `durable` flushes both files and the folder to disk before returning (git's
    `core.fsyncObjectFiles`), so a ref moved afterwards never names a lost object.
    """
    pack, entries = _pack(objects)
    name = "pack-" + pack[-20:].hex()  # git's name: the checksum of the pack's content
    final = folder / f"{name}.pack"
    if final.with_suffix(".idx").exists():
        return final  # the very same pack is there already (the same objects in one order)
    leftovers: list[str | Path] = []  # removed if this fails: nothing else names them
    try:
        pack_tmp = _temporary(folder, TMP_PACK, pack, durable, leftovers)
        idx_tmp = _temporary(folder, TMP_IDX, _index(entries, pack[-20:]), durable, leftovers)
        os.rename(pack_tmp, final)
        leftovers[0] = final
        os.rename(idx_tmp, final.with_suffix(".idx"))  # last: the pack counts from now on
        leftovers.clear()
    finally:
        for path in leftovers:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    if durable:
        fsync_folder(folder)
    return final


def _pack(objects: Iterable[tuple[int, bytes]]) -> tuple[bytes, list[tuple[bytes, int, int]]]:
    """The pack's bytes, and (id, crc32, offset) of each object in it."""
    body = bytearray()
    entries: dict[bytes, tuple[bytes, int, int]] = {}
    for kind, data in objects:
        oid = object_id(kind, data)
        if oid in entries:
            continue  # an index names each object once
        packed = _entry_header(kind, len(data)) + zlib.compress(data, COMPRESSION)
        entries[oid] = (oid, zlib.crc32(packed), 12 + len(body))
        body += packed
    pack = b"PACK" + struct.pack(">II", 2, len(entries)) + bytes(body)
    if len(pack) > MAX_PACK_BYTES:
        raise ValueError(f"a pack of {len(pack)} bytes is too large to write at once")
    return pack + hashlib.sha1(pack).digest(), list(entries.values())


def _entry_header(kind: int, size: int) -> bytes:
    """An object's header in a pack: its kind and size, 4 bits then 7 bits a byte."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """The version 2 index of a pack whose objects are `entries` (id, crc32, offset)."""
    ordered = sorted(entries)
    fanout = [0] * 256
    for oid, _, _ in ordered:
        fanout[oid[0]] += 1
    for byte in range(1, 256):
        fanout[byte] += fanout[byte - 1]
    index = b"".join(
        [
            _IDX_V2,
            struct.pack(">I", 2),
            struct.pack(">256I", *fanout),
            *(oid for oid, _, _ in ordered),
            *(struct.pack(">I", crc) for _, crc, _ in ordered),
            *(struct.pack(">I", offset) for _, _, offset in ordered),
            pack_checksum,
        ]
    )
    return index + hashlib.sha1(index).digest()


def _temporary(
    folder: Path, prefix: str, data: bytes, durable: bool, created: list[str | Path]
) -> str:
    """A new read-only file in `folder` holding `data` (its name added to `created`)."""
    fd, path = tempfile.mkstemp(prefix=prefix, dir=folder)
    created.append(path)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
        os.fchmod(fd, 0o444)  # as git leaves packs: never written again
    finally:
        os.close(fd)
    return path
