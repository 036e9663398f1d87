"""`gitstore backup` and `gitstore restore`: a consistent copy of a live store, and a new root
built from one.

A backup is a folder::

    manifest.json                  what is inside: repositories and their main, the files
    repositories/catalog.git.bundle, repositories/environments/<id>.git.bundle
    access.yaml                    users, password hashes and token hashes (mode 0600)
    keyring.enc                    only with --include-keyring: the keyring, encrypted

Each repository is one `git bundle` of its branches and tags, taken at one moment (git reads
the refs once, then packs what they reach), so a write that was acknowledged before the backup
began is in it. The manifest is written last: a folder without one is an unfinished backup.

The keyring is what opens every sealed secret, so it travels only when asked for, encrypted
with a key derived from a passphrase by scrypt and sealed with AES-256-GCM.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from gitstore import files, storeformat
from gitstore.backend.hooks import install_hooks
from gitstore.backend.repository import GIT_SETTINGS
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.ops.health import ENVIRONMENTS_DIR, repository_paths
from gitstore.secrets.keyring import Keyring

FORMAT = 1
MANIFEST = "manifest.json"
BUNDLES = "repositories"
ACCESS_FILE = "access.yaml"
KEYRING_COPY = "keyring.enc"
#: scrypt cost (32 MiB of memory per derivation); stored with the copy, so it can
#: grow without breaking older backups.
_SCRYPT = {"n": 2**15, "r": 8, "p": 1}
_AAD = b"gitstore backup keyring v1"


def backup(root: Path, to: Path, passphrase: bytes | None = None) -> dict[str, Any]:
    """Copy the store at `root` into the new folder `to`; the keyring too when `passphrase`
    is given (encrypted with it). Returns the manifest."""
    root, to = Path(root), Path(to)
    if not (root / "catalog.git" / "HEAD").exists():
        raise NotFound(f"{root} is not a gitstore root (no catalog.git)")
    _new_folder(to)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "store_format": storeformat.read(root).version,
        "created": _now(),
        "repositories": [],
    }
    for name, path in repository_paths(root):
        bundle = to / BUNDLES / f"{name}.bundle"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        main = _bundle(path, bundle)
        manifest["repositories"].append({"name": name, "bundle": _rel(bundle, to), "main": main})
    manifest["access"] = _copy_private(root / ACCESS_FILE, to / ACCESS_FILE)
    manifest["keyring"] = False
    if passphrase is not None:
        keyring = Keyring.of_root(root)
        if not keyring.exists():
            raise NotFound(f"no keyring at {keyring.path} to include")
        files.write_private(to / KEYRING_COPY, seal_keyring(keyring.path.read_bytes(), passphrase))
        manifest["keyring"] = True
    files.write_private(to / MANIFEST, json.dumps(manifest, indent=2).encode())
    return manifest


def restore(source: Path, root: Path, passphrase: bytes | None = None) -> dict[str, Any]:
    """Build a new store at `root` (absent or empty) from the backup in `source`.

    Without a keyring in the backup a new one is made: sealed values then need the original
    keyring copied to `<root>/keyring.yaml` (`gitstore fsck` names each one that does not open).
    """
    source, root = Path(source), Path(root)
    manifest = read_manifest(source)
    if manifest["keyring"] and passphrase is None:
        raise InvalidInput("the backup holds an encrypted keyring: give its passphrase")
    _new_folder(root)
    (root / ENVIRONMENTS_DIR).mkdir()
    # A backup made before store formats is of format 0: restored as such, then migrated.
    version = manifest.get("store_format", 0)
    if version:
        storeformat.write(root, version)
    for entry in manifest["repositories"]:
        _restore_repository(source / entry["bundle"], root, entry["name"], entry["main"])
    if manifest.get("access"):
        _copy_private(source / ACCESS_FILE, root / ACCESS_FILE)
    keyring = Keyring.of_root(root)
    if manifest["keyring"]:
        plain = open_keyring((source / KEYRING_COPY).read_bytes(), passphrase or b"")
        files.write_private(keyring.path, plain)
    else:
        keyring.create()
    return manifest


def read_manifest(source: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((Path(source) / MANIFEST).read_text())
    except FileNotFoundError:
        raise NotFound(f"{source} holds no {MANIFEST}: not a (finished) gitstore backup") from None
    except ValueError as exc:
        raise InvalidInput(f"{source}/{MANIFEST} is not valid JSON: {exc}") from exc
    if manifest.get("format") != FORMAT:
        raise InvalidInput(f"{source}: backup format {manifest.get('format')!r} is not {FORMAT}")
    return manifest


# -- repositories ------------------------------------------------------------------------------
def _bundle(repo: Path, bundle: Path) -> str:
    """Bundle the branches and tags of `repo` as they were at one moment; the main it holds.

    `git bundle create` on the live repository re-reads each ref after walking it and drops a
    ref that moved meanwhile: under writes it refused with "empty bundle" (seen in the test of
    a backup under load). So the refs are read once into a frozen repository that borrows the
    live one's objects (objects never change), and that is bundled.
    """
    listed = _git(
        [
            "--git-dir",
            str(repo),
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/heads",
            "refs/tags",
        ]
    )
    refs = [line.split(" ", 1) for line in listed.splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix=".backup-") as tmp:
        frozen = Path(tmp) / "frozen.git"
        _git(["init", "--quiet", "--bare", str(frozen)])
        alternates = frozen / "objects" / "info" / "alternates"
        alternates.write_text(f"{(Path(repo) / 'objects').resolve()}\n")
        commands = "".join(f"create {name} {sha}\n" for sha, name in refs)
        _git(["--git-dir", str(frozen), "update-ref", "--stdin"], stdin=commands)
        _git(["--git-dir", str(frozen), "bundle", "create", str(bundle), "--branches", "--tags"])
    main = dict((name, sha) for sha, name in refs).get("refs/heads/main")
    if main is None:
        raise Conflict(f"{repo.name}: main did not resolve while taking the backup")
    return main


def _restore_repository(bundle: Path, root: Path, name: str, main: str) -> None:
    target = root / name
    tmp = Path(tempfile.mkdtemp(prefix=".creating-", dir=target.parent))
    try:
        repo = tmp / "repo.git"
        _git(["init", "--quiet", "--bare", "--initial-branch=main", str(repo)])
        for key, value in GIT_SETTINGS.items():
            _git(["--git-dir", str(repo), "config", key, value])
        _git(
            [
                "--git-dir",
                str(repo),
                "fetch",
                "--quiet",
                str(bundle),
                "refs/heads/*:refs/heads/*",
                "refs/tags/*:refs/tags/*",
            ]
        )
        restored = _git(["--git-dir", str(repo), "rev-parse", "refs/heads/main"]).strip()
        if restored != main:
            raise Conflict(f"{name}: the bundle's main is {restored}, the manifest says {main}")
        install_hooks(repo)
        os.rename(repo, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _git(args: list[str], stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", *args], input=stdin, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise Conflict(
            f"git {args[2] if args[0] == '--git-dir' else args[0]} failed: "
            f"{done.stderr.strip() or done.returncode}"
        )
    return done.stdout


# -- the keyring copy --------------------------------------------------------------------------
def seal_keyring(plain: bytes, passphrase: bytes) -> bytes:
    """`plain` encrypted with a key scrypt derives from `passphrase` (JSON, parameters kept)."""
    if not passphrase:
        raise InvalidInput("the backup passphrase is empty")
    salt, nonce = os.urandom(16), os.urandom(12)
    key = Scrypt(salt=salt, length=32, **_SCRYPT).derive(passphrase)
    data = AESGCM(key).encrypt(nonce, plain, _AAD)
    record = {"kdf": "scrypt", **_SCRYPT, "salt": _b64(salt), "nonce": _b64(nonce)}
    return json.dumps({**record, "cipher": "aes-256-gcm", "data": _b64(data)}).encode()


def open_keyring(sealed: bytes, passphrase: bytes) -> bytes:
    """The keyring in `sealed`; InvalidInput when the passphrase is wrong or it was altered."""
    try:
        record = json.loads(sealed)
        params = {k: int(record[k]) for k in ("n", "r", "p")}
        key = Scrypt(salt=_unb64(record["salt"]), length=32, **params).derive(passphrase)
        return AESGCM(key).decrypt(_unb64(record["nonce"]), _unb64(record["data"]), _AAD)
    except (InvalidTag, KeyError, ValueError, TypeError) as exc:
        raise InvalidInput(
            "the keyring of the backup does not open: wrong passphrase, or the file was altered"
        ) from exc


# -- helpers ------------------------------------------------------------------------------------
def _new_folder(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise Conflict(f"{path} exists and is not an empty folder")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _copy_private(source: Path, target: Path) -> bool:
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        return False
    files.write_private(target, data)
    return True


def _rel(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)
