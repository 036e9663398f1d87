"""Who may do what: the store's access file, identities, roles and the one `require` check.

The access file is `<root>/access.yaml`, outside every repository (never served, never
committed), mode 0600. Access control is on as soon as it exists. It holds users (scrypt password
hashes, see `gitstore.access.credentials`), API tokens (stored as digests) and grants::

    version: 1
    users:
      alice:
        password: scrypt$n=16384,r=8,p=1$...$...
        roles: [reader, writer:env:1]
    tokens:
      3f9c0a1b2c4d: {user: alice, name: ci, created: '2024-05-01T10:00:00Z', digest: sha256$...}

An optional `keystone:` section maps Keystone identities to grants (`gitstore.access.keystone`);
edits keep it as written.

A grant is `ROLE[:SCOPE]`: role `reader`, `writer`, `admin` or `secrets`; scope `*` (the whole
store, the default) or `env:ID`. A writer is also a reader; an admin has every role but
`secrets`, which is only ever granted by name. A token acts with the roles of its user.

Every gunicorn worker reads the file once and again whenever it changes on disk (inode, size
or mtime), so a revoked token or removed user stops working at once in every worker. Edits go
through one locked read-modify-write and an atomic rename.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from gitstore import files, yamlio
from gitstore.access import credentials, keystone
from gitstore.access.keystone import KeystoneUser
from gitstore.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized, Unavailable
from gitstore.names import check_identifier

ACCESS_FILE = "access.yaml"
ROLES = ("reader", "writer", "admin", "secrets")
#: The roles each granted role carries.
IMPLIES = {
    "reader": frozenset({"reader"}),
    "writer": frozenset({"reader", "writer"}),
    "admin": frozenset({"reader", "writer", "admin"}),
    "secrets": frozenset({"secrets"}),
}
STORE_SCOPE = "*"
#: `require(..., ANY)`: a grant of the role on any scope will do (reads of the shared catalog,
#: which every environment is built from).
ANY: Final = "any"
#: App config keys (also read from the environment of the same name by the app factory):
#: let anonymous requests read; and, set by `gitstore serve` beyond loopback, treat a missing
#: access file as an error (fail closed) rather than an open store.
ANONYMOUS_READ = "GITSTORE_ALLOW_ANONYMOUS_READ"
ACCESS_REQUIRED = "GITSTORE_ACCESS_REQUIRED"
#: App setting: the host names an open store answers to besides loopback ones (`api/hosts.py`).
SERVED_HOSTS = "GITSTORE_SERVED_HOSTS"
_HEADER = (
    b"# gitstore access file: users, token digests and roles. Managed by `gitstore user`"
    b" and\n# `gitstore token`; keep it mode 0600 and out of every repository.\n"
)
_VERIFIED_CACHE = 256


@dataclass(frozen=True)
class Grant:
    """One role on one scope (`*` or `env:ID`)."""

    role: str
    scope: str = STORE_SCOPE

    @classmethod
    def parse(cls, text: str) -> Grant:
        """`writer`, `writer:*`, `writer:env:1` -> Grant; InvalidInput naming the bad part."""
        role, _, scope = str(text).strip().partition(":")
        if role not in ROLES:
            raise InvalidInput(
                f"role {role!r} in {text!r} is not one of {', '.join(ROLES)}", key="role"
            )
        scope = scope or STORE_SCOPE
        if scope != STORE_SCOPE:
            kind, _, env_id = scope.partition(":")
            if kind != "env" or not re.fullmatch(r"[0-9]{1,18}", env_id) or int(env_id) < 1:
                raise InvalidInput(
                    f"scope {scope!r} in {text!r} must be '*' or 'env:ID' (e.g. writer:env:1)",
                    key="role",
                )
            scope = f"env:{int(env_id)}"
        return cls(role, scope)

    def __str__(self) -> str:
        return self.role if self.scope == STORE_SCOPE else f"{self.role}:{self.scope}"

    def allows(self, role: str, env_id: int | str | None) -> bool:
        if role not in IMPLIES[self.role]:
            return False
        return self.scope == STORE_SCOPE or env_id == ANY or self.scope == f"env:{env_id}"


@dataclass(frozen=True)
class Identity:
    """An authenticated caller: the user's name, grants, and how they proved who they are."""

    name: str
    grants: tuple[Grant, ...]
    via: str = "password"

    def has(self, role: str, env_id: int | str | None = None) -> bool:
        return any(grant.allows(role, env_id) for grant in self.grants)


@dataclass(frozen=True)
class Credentials:
    """What a request presented; the secrets never show in a repr or a log line."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)


def require(identity: Identity, role: str, env_id: int | str | None = None) -> None:
    """Raise Forbidden naming the role needed unless `identity` holds `role` on the scope.

    `env_id` is an environment id, None for the whole store (only `*` grants count), or ANY.
    """
    if identity.has(role, env_id):
        return
    if env_id is None:
        where = "on the whole store (scope '*')"
    elif env_id == ANY:
        where = "on some scope"
    else:
        where = f"on environment {env_id} (scope 'env:{env_id}' or '*')"
    granted = ", ".join(map(str, identity.grants)) or "none"
    raise Forbidden(
        f"user {identity.name!r} needs role {role!r} {where}; granted: {granted}", key="role"
    )


def parse_grants(texts: list[str] | tuple[str, ...]) -> tuple[Grant, ...]:
    """Grants from `ROLE[:SCOPE]` texts, duplicates dropped, order kept."""
    return tuple(dict.fromkeys(Grant.parse(text) for text in texts))


@dataclass(frozen=True)
class Policy:
    """One parsed version of the access file."""

    users: dict[str, dict[str, Any]]
    tokens: dict[str, dict[str, Any]]
    #: The `keystone` section as written (kept by edits) and its parsed rules.
    keystone_section: dict[str, Any] | None = None
    keystone: tuple[keystone.KeystoneRule, ...] = ()
    #: Tokens checked against this version of the file -> their identity: a token is hashed
    #: once per worker and file version, not per request. A changed file is a new Policy with
    #: an empty cache, so a revoked token or a withdrawn role stops at the next request.
    verified_tokens: dict[str, Identity] = field(default_factory=dict, compare=False, repr=False)

    def identity(self, name: str, via: str) -> Identity:
        return Identity(name, parse_grants(self.users[name].get("roles") or []), via)

    def keystone_identity(self, who: KeystoneUser) -> Identity:
        """The identity a Keystone user gets from the keystone rules; Forbidden if none."""
        grants = parse_grants(list(keystone.grants_for(who, self.keystone)))
        return Identity(who.name, grants, f"keystone ({who.scope})")


class AccessFile:
    """The access file of a store root: reading (cached per process), checking, editing."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.path = Path(root) / ACCESS_FILE
        self._lock_path = Path(root) / (ACCESS_FILE + ".lock")
        self._mutex = threading.Lock()
        self._watched = files.WatchedFile(self.path, lambda _: _parse(self._read(), self.path))
        self._verified: OrderedDict[bytes, None] = OrderedDict()
        self._dummy_hash: str | None = None  # `credentials.dummy_hash`, made when first needed

    # -- reading -----------------------------------------------------------------------------
    def policy(self) -> Policy | None:
        """The current policy, or None when there is no access file (the store is open)."""
        return self._watched.current()

    def _read(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise Unavailable(
                f"cannot read access file {self.path} ({exc.strerror}), so every "
                "request is refused; it must be readable by the server's user "
                "(run `gitstore user` as that user)"
            ) from exc

    def exists(self) -> bool:
        return self.path.exists()

    # -- authentication ------------------------------------------------------------------------
    def authenticate(self, presented: Credentials) -> Identity:
        """The identity the credentials prove; Unauthorized (never naming which part) otherwise."""
        policy = self.policy()
        if policy is None:
            raise Unavailable(f"no access file at {self.path}: nobody can authenticate")
        if presented.token is not None:
            return self._by_token(policy, presented.token)
        return self._by_password(policy, presented.user or "", presented.password or "")

    def _by_token(self, policy: Policy, token: str) -> Identity:
        known = policy.verified_tokens.get(token)
        if known is not None:
            return known
        identity = self._check_token(policy, token)
        if len(policy.verified_tokens) < _VERIFIED_CACHE:
            policy.verified_tokens[token] = identity
        return identity

    def _check_token(self, policy: Policy, token: str) -> Identity:
        token_id = credentials.token_id_of(token)
        entry = policy.tokens.get(token_id or "")
        if entry is None or not credentials.token_matches(token, str(entry.get("digest"))):
            raise Unauthorized("invalid or revoked token")
        if entry.get("user") not in policy.users:
            raise Unauthorized("invalid or revoked token")
        return policy.identity(entry["user"], f"token {token_id}")

    def _by_password(self, policy: Policy, name: str, password: str) -> Identity:
        stored = (policy.users.get(name) or {}).get("password")
        # an unknown user costs a hash too, so timing does not tell which names exist
        matched = self._password_ok(password, stored or self._dummy())
        if not stored or not matched:
            raise Unauthorized("invalid user name or password")
        return policy.identity(name, "password")

    def _dummy(self) -> str:
        if self._dummy_hash is None:
            self._dummy_hash = credentials.dummy_hash()
        return self._dummy_hash

    def _password_ok(self, password: str, stored: str) -> bool:
        """scrypt is slow on purpose; a good pair is remembered (as a digest, in memory)."""
        key = hashlib.sha256(f"{stored}\0{password}".encode()).digest()
        with self._mutex:
            if key in self._verified:
                self._verified.move_to_end(key)
                return True
        if not credentials.verify_password(password, stored):
            return False
        with self._mutex:
            self._verified[key] = None
            while len(self._verified) > _VERIFIED_CACHE:
                self._verified.popitem(last=False)
        return True

    # -- users ---------------------------------------------------------------------------------
    def users(self) -> list[dict[str, Any]]:
        """Every user with roles and token count; never a hash."""
        policy = self.policy() or Policy({}, {})
        counts: dict[str, int] = {}
        for entry in policy.tokens.values():
            counts[entry["user"]] = counts.get(entry["user"], 0) + 1
        return [
            {
                "name": name,
                "roles": list(entry.get("roles") or []),
                "password": bool(entry.get("password")),
                "tokens": counts.get(name, 0),
            }
            for name, entry in sorted(policy.users.items())
        ]

    def add_user(self, name: str, grants: tuple[Grant, ...], password: str | None) -> None:
        name = check_identifier(name, "user name")
        entry: dict[str, Any] = {"roles": [str(g) for g in grants]}
        if password is not None:
            entry["password"] = credentials.hash_password(_check_password(password))

        def change(data: dict) -> None:
            if name in data["users"]:
                raise Conflict(
                    f"user {name!r} exists; use `gitstore user passwd` or "
                    "`gitstore user roles` to change it",
                    key="user",
                )
            data["users"][name] = entry

        self._edit(change)

    def remove_user(self, name: str) -> int:
        """Remove a user and revoke their tokens; the number of tokens revoked."""

        def change(data: dict) -> int:
            _user(data, name)
            del data["users"][name]
            revoked = [tid for tid, t in data["tokens"].items() if t.get("user") == name]
            for token_id in revoked:
                del data["tokens"][token_id]
            return len(revoked)

        return self._edit(change)

    def set_password(self, name: str, password: str) -> None:
        digest = credentials.hash_password(_check_password(password))
        self._edit(lambda data: _user(data, name).__setitem__("password", digest))

    def set_roles(self, name: str, grants: tuple[Grant, ...]) -> None:
        roles = [str(g) for g in grants]
        self._edit(lambda data: _user(data, name).__setitem__("roles", roles))

    # -- tokens --------------------------------------------------------------------------------
    def create_token(self, user: str, label: str | None = None) -> tuple[str, str]:
        """A new token for `user`: (token id, the token itself: shown once, never stored)."""
        made = credentials.new_token()
        entry = {"user": user, "name": label or "", "created": _now(), "digest": made.digest}

        def change(data: dict) -> None:
            _user(data, user)
            data["tokens"][made.token_id] = entry

        self._edit(change)
        return made.token_id, made.secret

    def tokens(self, user: str | None = None) -> list[dict[str, Any]]:
        """Token ids with user, label and creation time; never the token or its digest."""
        policy = self.policy() or Policy({}, {})
        return [
            {"id": tid, "user": t["user"], "name": t.get("name") or "", "created": t.get("created")}
            for tid, t in sorted(policy.tokens.items(), key=lambda i: i[1].get("created", ""))
            if user is None or t["user"] == user
        ]

    def revoke_token(self, token_id: str) -> None:
        def change(data: dict) -> None:
            if data["tokens"].pop(token_id, None) is None:
                raise NotFound(
                    f"no token with id {token_id!r} (see `gitstore token list`)", key="token"
                )

        self._edit(change)

    # -- writing -------------------------------------------------------------------------------
    def _edit(self, change: Callable[[dict], Any]) -> Any:
        """Apply `change` to the file's data under an exclusive lock; write atomically."""
        with self._locked():
            data = {"version": 1, "users": {}, "tokens": {}}
            if self.path.exists():
                current = _parse(self._read(), self.path)
                data.update(users=current.users, tokens=current.tokens)
                if current.keystone_section is not None:
                    data["keystone"] = current.keystone_section
            result = change(data)
            files.write_private(self.path, _HEADER + yamlio.dump(data))
            return result

    def _locked(self):
        return files.exclusive_lock(self._lock_path)


def _user(data: dict, name: str) -> dict:
    entry = data["users"].get(name)
    if entry is None:
        raise NotFound(f"no user {name!r} (see `gitstore user list`)", key="user")
    return entry


def _check_password(password: str) -> str:
    if not password:
        raise InvalidInput("the password is empty", key="password")
    return password


def _parse(raw: bytes, path: Path) -> Policy:
    """The policy in `raw`; Unavailable (fail closed, 503) naming the bad part otherwise."""
    try:
        data = yamlio.load_mapping(raw, path=str(path))
        users = _mapping(data.get("users"), "users")
        tokens = _mapping(data.get("tokens"), "tokens")
        for name, entry in users.items():
            if not isinstance(_mapping(entry, f"users.{name}").get("password") or "", str):
                raise InvalidInput(f"users.{name}.password must be a hash string")
            parse_grants(list(entry.get("roles") or []))
        for token_id, entry in tokens.items():
            if _mapping(entry, f"tokens.{token_id}").get("user") not in users:
                raise InvalidInput(f"tokens.{token_id}: user {entry.get('user')!r} is not in users")
        rules = keystone.parse_rules(data.get("keystone"), parse_grants)
    except InvalidInput as exc:
        raise Unavailable(
            f"access file {path} is invalid, so every request is refused: {exc.message}"
        ) from exc
    return Policy(
        {str(k): v for k, v in users.items()},
        {str(k): v for k, v in tokens.items()},
        data.get("keystone"),
        rules,
    )


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{where} must be a mapping, not {type(value).__name__}")
    return value


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
