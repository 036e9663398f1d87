"""The one place that decides who may make a request: authentication and authorisation.

`register(app)` installs one `before_request` hook for every route of every blueprint. It works
out what a request needs from its method and route family (`needed`), reads the credentials
(HTTP Basic, `Authorization: Bearer <token>`, or `X-Auth-Token: <token>` as the Fuel Hiera
backend sent), checks them against the store's access file (`gitstore.access.policy`) and sets
`g.user` (the author of the commits the request makes; also REMOTE_USER for `git push`) and
`g.identity`.

- No access file: the store is open (`gitstore serve` then listens on loopback only).
- Anonymous: 401 unless the app allows anonymous reads (`GITSTORE_ALLOW_ANONYMOUS_READ`).
- The console's signed session cookie (`sessions.py`) identifies its user when no header
  does; a request other than a read must then carry the session's CSRF token, else 403.
- Bad credentials: 401 with `WWW-Authenticate` (a `Keystone uri=...` challenge too on a server
  started with `--keystone-url`); counted per client address, and more than 20
  in a minute are answered 429 until the minute has passed (`gitstore.access.ratelimit`).
- Valid credentials without the role: 403 naming the role needed. A comparison of two
  environments (`environments/<a>/compare/<b>`) needs the role on both.
- Keystone tokens (servers started with `--keystone-url`): validated by
  `gitstore.access.keystone`, mapped by the access file's keystone rules; 503 when Keystone
  cannot be reached (for those tokens only).
- Webhook routes are not checked here: they authenticate by signature only.
- Cluster members (docs/ha.md) sign their calls to each other with the cluster secret
  (`X-Gitstore-Member`, `gitstore.cluster.secret`): `/cluster/...` needs that header and nothing
  else is accepted there (401 without it); a `/git/` fetch carrying it reads any repository.
  A bad member header is 401 wherever it is sent.
- Probes (`/healthz`, `/readyz`) are open; `/metrics` too unless the app's
  `GITSTORE_METRICS_ROLE` (`gitstore serve --metrics-role`) names the role it needs.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app, g, request

from gitstore import metrics
from gitstore.access.credentials import token_id_of
from gitstore.access.keystone import KEYSTONE, KeystoneValidator
from gitstore.access.policy import (
    ACCESS_REQUIRED,
    ANONYMOUS_READ,
    ANY,
    AccessFile,
    Credentials,
    Identity,
    require,
)
from gitstore.access.ratelimit import FailureLog
from gitstore.api import git_http, sessions
from gitstore.api.http import app_store
from gitstore.cluster.secret import check_protocol as check_member_protocol
from gitstore.errors import NotFound, TooManyRequests, Unauthorized, Unavailable
from gitstore.names import parse_flag

log = logging.getLogger("gitstore.api.auth")

OPENAPI_PATH = ["api", "v1", "openapi.json"]
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Route families stored in catalog.git, shared by every environment.
_CATALOG = frozenset(
    {"components", "resource_definitions", "releases", "plugins", "templates", "roles", "plans"}
)
_PER_ENVIRONMENT = frozenset({"environments", "clusters", "hiera"})
_ENV_REPO_PREFIX = "environments/"
#: The role `GET /metrics` needs (`gitstore serve --metrics-role`); none by default.
METRICS_ROLE = "GITSTORE_METRICS_ROLE"
_ID = re.compile(r"^[0-9]{1,18}$")
_VALIDATOR = "gitstore.keystone"
#: The header a cluster member signs its calls with (gitstore.cluster.secret.HEADER).
MEMBER_HEADER = "X-Gitstore-Member"
#: The members' protocol version of a call (gitstore.cluster.secret.PROTOCOL_HEADER).
PROTOCOL_HEADER = "X-Gitstore-Protocol"
#: Who a member's call is in logs (it makes no commits: members only read through /git/).
MEMBER_USER = "cluster-member"


@dataclass(frozen=True)
class Need:
    """What a request needs: every role in `roles` on `scope` (an env id, None = store, ANY)."""

    roles: tuple[str, ...]
    scope: int | str | None = None
    #: Further environments the roles are needed on (a comparison reads two).
    also: tuple[int, ...] = ()

    @property
    def read_only(self) -> bool:
        """Whether an anonymous caller may pass when anonymous reads are allowed."""
        return self.roles in ((), ("reader",))


def register(app: Flask) -> None:
    """Install the access check of every request of `app`."""
    for key in (ANONYMOUS_READ, ACCESS_REQUIRED):
        if key not in app.config:
            app.config[key] = parse_flag(os.environ.get(key, "0"), key)
    settings = app.config.get(KEYSTONE)
    if settings is not None:
        validator = KeystoneValidator(settings)
        validator.warm_up()  # in each worker as it starts: no client waits for it
        app.extensions[_VALIDATOR] = validator
    app.before_request(_authorise)


def replayable(environ: dict, policy: Any, failures: FailureLog) -> bool:
    """Whether an answer the app gave an earlier request with the same credential headers may
    be given to this one without asking the app (the fast path, `fastpath.py`, keys its answers
    by those headers and by the parsed access file `policy`, so a grant changed is a miss).

    Never for HTTP Basic (a password is never kept, not even in memory) or a malformed
    header (the app refuses it); a cookie (the console's session: a caller a key of headers
    would not tell from an anonymous one); a token that is not gitstore's (a Keystone token:
    only Keystone knows whether it expired or was revoked); an address refused for failed
    authentications (the 429 of `_identify`). A new kind of credential is taught here."""
    if "HTTP_COOKIE" in environ:
        return False
    authorization = environ.get("HTTP_AUTHORIZATION")
    if authorization is not None and authorization[:7].lower() != "bearer ":
        return False
    token = authorization[7:].strip() if authorization else environ.get("HTTP_X_AUTH_TOKEN")
    if token is not None and token_id_of(token) is None:
        return False
    if policy is None:
        return True  # an open store counts no failures
    return not failures.blocked_for(environ.get("REMOTE_ADDR") or "unknown")


def needed(method: str, path: str, args: Any) -> Need | None:
    """The roles and scope a request needs; None for routes that check a signature instead."""
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["webhooks"] or parts in (["healthz"], ["readyz"], OPENAPI_PATH):
        return None  # signed webhooks; probes, which carry no credentials; the API's own map
    if parts[:1] == ["cluster"]:
        return None  # members' calls: `_member_call` checks their signature instead
    if parts == ["metrics"]:
        role = current_app.config.get(METRICS_ROLE)
        return Need((role,)) if role else None  # scrapers carry none unless asked to
    if parts[:1] == ["git"]:
        return _git_need("/".join(parts[1:]), args.getlist("service"))
    if parts[:2] == ["api", "v1"]:
        parts = parts[2:]
    if parts[:1] == ["ui"]:
        if parts[1:2] == ["static"] or parts[1:] in (["login"], ["logout"]):
            return None  # signing in and out check their own form; the style sheet is public
        parts = parts[1:]  # the console's pages read what the REST reads of the same path do
    if parts[:1] == ["config"]:
        parts = parts[1:]
    if parts[:2] == ["access", "whoami"]:
        return Need(())
    roles, scope = _roles(method, parts, args), _scope(method, parts)
    if parts == ["events"]:
        scope = _events_scope(args)
    if "secrets" in roles and scope == ANY:
        scope = None  # catalog secrets belong to no environment: revealing them needs '*'
    return Need(roles, scope, _compared(parts))


def _compared(parts: list[str]) -> tuple[int, ...]:
    """`environments/<a>/compare/<b>` reads environment b as well as a."""
    if len(parts) >= 4 and parts[0] == "environments" and parts[2] == "compare":
        return (int(parts[3]),) if _ID.match(parts[3]) else ()
    return ()


def _roles(method: str, parts: list[str], args: Any) -> tuple[str, ...]:
    if parts[:1] == ["access"]:
        return ("admin",)  # user and token management
    if method in _READS:
        return ("reader", "secrets") if parse_flag(args.get("reveal"), "reveal") else ("reader",)
    if method == "DELETE" and not _is_unassignment(parts):
        return ("admin",)  # deleting an entity
    return ("writer",)


def _is_unassignment(parts: list[str]) -> bool:
    """`DELETE .../nodes/<node>/tags` removes assignments from a node, and
    `DELETE /plans/<uuid>/roles/<role>` a role from a plan: writes, not deletions."""
    if len(parts) == 4 and parts[0] == "plans" and parts[2] == "roles":
        return True
    return len(parts) >= 3 and parts[-1] == "tags" and parts[-3] == "nodes"


def _scope(method: str, parts: list[str]) -> int | str | None:
    if len(parts) >= 2 and parts[0] in _PER_ENVIRONMENT and _ID.match(parts[1]):
        return int(parts[1])
    if parts[:1] and parts[0] in _CATALOG and method in _READS:
        return ANY  # every environment is built from the catalog: any reader may read it
    return None


def _events_scope(args: Any) -> int | None:
    """`/events?env=ID` reads one environment; without a valid id the view answers 400."""
    text = (args.get("env") or "").strip()
    return int(text) if _ID.match(text) else None


def _git_need(subpath: str, services: list[str]) -> Need:
    """`git clone`/`fetch` need reader, `git push` (receive-pack) needs writer: decided on the
    normalised path the view hands to git, so `/./git-receive-pack` is a push too."""
    try:
        name, rest = git_http.split_path(subpath)
    except NotFound:
        return Need(("reader",), None)  # no repository there: the view answers 404
    push = git_http.is_push(rest, services)
    role = "writer" if push else "reader"
    if name.startswith(_ENV_REPO_PREFIX):
        return Need((role,), int(name[len(_ENV_REPO_PREFIX) :].removesuffix(".git")))
    return Need((role,), None if push else ANY)  # catalog.git


def _authorise() -> None:
    g.user = g.identity = None
    need = needed(request.method, request.path, request.args)
    if _member_call(need):
        return
    if need is None:
        return
    access: AccessFile = app_store().access
    if access.policy() is None:
        if current_app.config[ACCESS_REQUIRED]:
            raise Unavailable(
                f"no access file at {access.path}: this server was started to "
                "require one; refusing every request"
            )
        return  # an open store
    identity = _identify(access, need)
    if identity is None:
        return  # an allowed anonymous read
    for role in need.roles:
        for scope in (need.scope, *need.also):
            require(identity, role, scope)
    g.user = identity.name
    g.identity = identity


def _member_call(need: Need | None) -> bool:
    """Whether this is a peer's call the cluster secret lets through: every `/cluster/` call
    (401 unless signed) and a signed `/git/` fetch. Members read, never write, through `/git/`.
    """
    member = app_store().cluster
    parts = [part for part in request.path.split("/") if part]
    if member is None or parts[:1] not in (["cluster"], ["git"]):
        return False
    presented = request.headers.get(MEMBER_HEADER)
    if presented is None and parts[0] == "git":
        return False  # a user's fetch or push: the access file decides
    if not member.secret.verify(presented):
        address = request.remote_addr or "unknown"
        metrics.auth_failed("bad_member_signature" if presented else "no_member_signature")
        log.warning("member call %s from %s refused: bad signature", request.path[:200], address)
        raise Unauthorized(
            f"no {MEMBER_HEADER} header: only cluster members may call this"
            if presented is None
            else f"the {MEMBER_HEADER} header is not signed with this cluster's secret, "
            "or its time is more than 5 minutes off this node's clock"
        )
    if parts[0] == "git" and not (need is not None and need.roles == ("reader",)):
        raise Unauthorized(f"a {MEMBER_HEADER} header only lets a member fetch, not push")
    check_member_protocol(request.headers.get(PROTOCOL_HEADER))  # once signed: 409 if unknown
    g.user = MEMBER_USER
    return True


def _identify(access: AccessFile, need: Need) -> Identity | None:
    address = request.remote_addr or "unknown"
    failures: FailureLog = app_store().failures
    presented = _presented()
    if presented is None:
        signed_in = sessions.identity()  # the console's session cookie (api/sessions.py)
        if signed_in is not None:
            if request.method not in _READS:
                sessions.check_csrf()  # a cookie alone never writes: another site can send it
            return signed_in
        if need.read_only and current_app.config[ANONYMOUS_READ]:
            return None
        raise _challenge(
            "authentication required: send HTTP Basic credentials, "
            "'Authorization: Bearer <token>' or 'X-Auth-Token: <token>'"
        )
    wait = failures.blocked_for(address)
    if wait:
        raise TooManyRequests(
            f"too many failed authentications from {address}; try again in {wait} s",
            retry_after=wait,
        )
    try:
        if isinstance(presented, str):
            raise Unauthorized(presented)
        return _authenticate(access, presented)
    except Unauthorized as exc:
        failures.record(address)
        metrics.auth_failed(_reason(presented))
        log.warning("authentication failed from %s: %s (%s)", address, exc.message, _who(presented))
        raise _challenge(exc.message) from None


def _authenticate(access: AccessFile, presented: Credentials) -> Identity:
    """A token that is not one of ours goes to Keystone when the server was started with
    --keystone-url; everything else is checked against the access file alone, so gitstore's
    own credentials never cost a call to Keystone and keep working while it is down."""
    validator: KeystoneValidator | None = current_app.extensions.get(_VALIDATOR)
    token = presented.token
    if validator is None or token is None or token_id_of(token) is not None:
        return access.authenticate(presented)
    who = validator.validate(token)  # Unauthorized (401) or Unavailable (503)
    policy = access.policy()
    if policy is None:
        raise Unavailable(f"no access file at {access.path}: nobody can authenticate")
    return policy.keystone_identity(who)  # Forbidden (403) when no rule maps it


def _presented() -> Credentials | str | None:
    """The request's credentials; a string saying what is wrong when they are malformed."""
    header = request.headers.get("Authorization", "").strip()
    if not header:
        token = request.headers.get("X-Auth-Token", "").strip()
        return Credentials(token=token) if token else None
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return Credentials(token=value)
    if scheme.lower() != "basic":
        return f"unsupported authorization scheme {scheme[:20]!r}: use Basic or Bearer"
    try:
        user, colon, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return "malformed Basic credentials"
    if not colon:
        return "malformed Basic credentials: no ':' between user and password"
    return Credentials(user=user, password=password)


def _who(presented: Credentials | str) -> str:
    """What a log line may say about failed credentials: a user name or token id, no secret."""
    if isinstance(presented, str):
        return "malformed header"
    if presented.token is not None:
        return f"token id {token_id_of(presented.token) or '(not a gitstore token)'}"
    return f"user {presented.user!r}"


def _reason(presented: Credentials | str) -> str:
    """The `reason` label of a failed authentication: never anything presented."""
    if isinstance(presented, str):
        return "malformed"
    return "bad_token" if presented.token is not None else "bad_password"


def _challenge(message: str) -> Unauthorized:
    return Unauthorized(message, challenge=True)
