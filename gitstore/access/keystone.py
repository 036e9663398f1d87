"""Keystone tokens: validated by keystonemiddleware's `auth_token`, mapped to gitstore grants.

An OpenStack user or service presents its Keystone token (`X-Auth-Token`, or `Authorization:
Bearer`). `KeystoneValidator` asks Keystone about it through `auth_token`, the middleware every
OpenStack service validates tokens with: it keeps the service's own session and token, finds
the identity endpoint, and caches each validated token in the process for `token_cache_time`
seconds, so a token seen before costs no request to Keystone (a revoked token is therefore
honoured until its cached validation expires; an expired one is refused at once, from the
cache too). keystoneauth1 alone would need a cache of our own, and its expiry and revocation
rules, written again.

The middleware is called here as a function on a token, never wrapped around the app: wrapped
with `delay_auth_decision`, a Keystone that cannot be reached looks exactly like a bad token,
and gitstore's own tokens and passwords would pass through it and cost a call each. Called
without `delay_auth_decision`, it answers 401 for a bad token, which becomes `Unauthorized`;
when Keystone cannot be asked, the cause auth_token saw becomes `Unavailable` saying which:
Keystone does not answer, or it refuses gitstore's own service user (its login, or its right to
validate tokens). `--keystone-timeout` bounds the whole validation: auth_token's retries are
off, and in a gevent worker one deadline covers every call a validation makes.

`warm_up` (at app start, in each worker) builds auth_token, finds Keystone's API version and
logs the service user in, so that no client's request pays for them; it fails soft.

The keystone section of the access file maps identities to grants::

    keystone:
      rules:
        - {project: admin, role: admin, grants: [admin]}
        - {project: cloud-1, role: member, grants: ['writer:env:1']}
        - {user: puppet, grants: [reader, secrets]}
        - {system: all, role: admin, grants: [admin]}

A rule matches when each of `user`, `project`, `system`, `role` it names matches (names in the
domain `domain`, `Default` when not given; `system: all` matches a system-scoped token, as
Keystone's secure-RBAC administrators hold); the identity gets the grants of every matching
rule. An identity no rule matches is refused (403) saying so.

keystonemiddleware is imported only when a validator is first used: it is an optional extra
(`pip install gitstore[keystone]`), needed by servers started with `--keystone-url` only.
"""

from __future__ import annotations

import configparser
import contextlib
import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from gitstore.errors import Forbidden, GitstoreError, InvalidInput, Unauthorized, Unavailable

log = logging.getLogger("gitstore.access.keystone")

DEFAULT_DOMAIN = "Default"
DEFAULT_CACHE_SECONDS = 300
DEFAULT_TIMEOUT_SECONDS = 5.0
_RULE_KEYS = frozenset({"user", "project", "system", "role", "domain", "grants"})
_MATCH_KEYS = ("user", "project", "system", "role")
#: The system scopes Keystone issues tokens for (`"system": {"all": true}`).
SYSTEM_SCOPES = ("all",)
#: The logger auth_token writes to.
_MIDDLEWARE_LOG = "keystonemiddleware.auth_token"
#: Validated at worker start to set auth_token up: Keystone refuses it (401), as expected.
_WARM_UP_TOKEN = "gitstore-worker-start"
#: How much of Keystone's answer a log line quotes.
_QUOTE = 300
#: auth_token's section of an OpenStack config file (`--keystone-config`).
_GROUP = "keystone_authtoken"
#: App config key: the `KeystoneSettings` of a server started with `--keystone-url`.
KEYSTONE = "GITSTORE_KEYSTONE"


@dataclass(frozen=True)
class KeystoneSettings:
    """Where Keystone is and how gitstore authenticates to it to validate tokens.

    `config_file` is an OpenStack-style ini file whose `[keystone_authtoken]` section holds
    any of auth_token's options; the other fields, when given, take precedence over it.
    """

    auth_url: str | None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    project_name: str | None = None
    user_domain_name: str = DEFAULT_DOMAIN
    project_domain_name: str = DEFAULT_DOMAIN
    cache_seconds: int = DEFAULT_CACHE_SECONDS
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    config_file: str | None = None

    def options(self) -> dict[str, Any]:
        """auth_token's own options (its paste-deploy form: these win over the config file)."""
        options: dict[str, Any] = {
            "token_cache_time": self.cache_seconds,
            # an integer option (2.5 would be 2): the session gets the exact value
            # (`_build_middleware`); a retry would double the wait
            "http_connect_timeout": max(1, round(self.timeout)),
            "http_request_max_retries": 0,
            "delay_auth_decision": False,
            "include_service_catalog": False,
        }
        if self.auth_url:
            options["www_authenticate_uri"] = self.auth_url
        if self.username:
            options["auth_type"] = "password"
        return options

    def challenge_uri(self) -> str | None:
        """The identity URL a 401 names (`WWW-Authenticate: Keystone uri=...`), as
        keystonemiddleware sends it: `--keystone-url`, else the config file's."""
        if self.auth_url or not self.config_file:
            return self.auth_url
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(self.config_file)
        except configparser.Error:
            return None
        for name in ("www_authenticate_uri", "auth_uri", "auth_url"):
            if parser.get(_GROUP, name, fallback=None):
                return parser.get(_GROUP, name)
        return None

    def service_user(self) -> str:
        """gitstore's service user as a message names it."""
        if not self.username:
            return "gitstore's service user (see the config file)"
        project = f", project {self.project_name!r}" if self.project_name else ""
        return f"gitstore's service user {self.username!r}{project}"

    def login(self) -> dict[str, str]:
        """The service user's login (options of keystoneauth1's password plugin)."""
        if not self.username:
            return {}
        return {
            "auth_url": self.auth_url or "",
            "username": self.username,
            "password": self.password or "",
            "project_name": self.project_name or "",
            "user_domain_name": self.user_domain_name,
            "project_domain_name": self.project_domain_name,
        }


@dataclass(frozen=True)
class KeystoneUser:
    """What Keystone vouched for: the user, the project the token is scoped to, its roles."""

    name: str
    domain: str
    project: str | None
    project_domain: str | None
    roles: frozenset[str]
    #: The system scope of a system-scoped token (`all`); None for any other token.
    system: str | None = None

    @property
    def scope(self) -> str:
        """What the token is scoped to, as `whoami` shows it."""
        if self.project:
            return f"project {self.project}"
        return f"system {self.system}" if self.system else "unscoped"

    def describe(self) -> str:
        if self.project:
            scope = f"project {self.project!r}"
        else:
            scope = f"system {self.system!r}" if self.system else "no project (unscoped)"
        roles = ", ".join(sorted(self.roles)) or "none"
        return f"Keystone user {self.name!r} (domain {self.domain}; {scope}; roles: {roles})"


@dataclass(frozen=True)
class KeystoneRule:
    """One rule of the keystone section: who it matches and the grant texts it gives."""

    grants: tuple[str, ...]
    user: str | None = None
    project: str | None = None
    role: str | None = None
    domain: str = DEFAULT_DOMAIN
    system: str | None = None

    def matches(self, who: KeystoneUser) -> bool:
        if self.user is not None and (self.user, self.domain) != (who.name, who.domain):
            return False
        if self.system is not None and self.system != who.system:
            return False
        if self.project is not None and (self.project, self.domain) != (
            who.project,
            who.project_domain,
        ):
            return False
        return self.role is None or self.role in who.roles


def parse_rules(section: Any, check_grants: Any) -> tuple[KeystoneRule, ...]:
    """The rules of the access file's `keystone` section; InvalidInput naming the bad part.

    `check_grants(texts)` validates a rule's grant texts (the policy's own parser).
    """
    if section is None:
        return ()
    if not isinstance(section, dict) or set(section) - {"rules"}:
        raise InvalidInput("keystone must be a mapping with one key, rules")
    rules = section.get("rules") or []
    if not isinstance(rules, list):
        raise InvalidInput("keystone.rules must be a list")
    return tuple(
        _rule(entry, f"keystone.rules[{index}]", check_grants) for index, entry in enumerate(rules)
    )


def _rule(entry: Any, where: str, check_grants: Any) -> KeystoneRule:
    if not isinstance(entry, dict):
        raise InvalidInput(f"{where} must be a mapping")
    unknown = set(entry) - _RULE_KEYS
    if unknown:
        raise InvalidInput(f"{where}: unknown key {sorted(unknown)[0]!r}")
    if not any(entry.get(key) for key in _MATCH_KEYS):
        raise InvalidInput(f"{where} must name a user, a project, a system or a role to match")
    if entry.get("system") and str(entry["system"]) not in SYSTEM_SCOPES:
        raise InvalidInput(f"{where}.system must be one of: {', '.join(SYSTEM_SCOPES)}")
    if entry.get("system") and entry.get("project"):
        raise InvalidInput(f"{where}: a token is scoped to a project or to the system, not both")
    grants = entry.get("grants")
    if not isinstance(grants, list) or not grants:
        raise InvalidInput(f"{where}.grants must be a non-empty list of roles")
    check_grants([str(text) for text in grants])
    names = {key: str(entry[key]) for key in _MATCH_KEYS if entry.get(key)}
    return KeystoneRule(
        tuple(str(text) for text in grants),
        domain=str(entry.get("domain") or DEFAULT_DOMAIN),
        **names,
    )


def grants_for(who: KeystoneUser, rules: tuple[KeystoneRule, ...]) -> tuple[str, ...]:
    """The grant texts of every rule matching `who`; Forbidden saying so when none does."""
    texts = [text for rule in rules if rule.matches(who) for text in rule.grants]
    if not texts:
        raise Forbidden(
            f"{who.describe()} matches no rule of the keystone section of the access file, "
            "so it has no gitstore role",
            key="role",
        )
    return tuple(dict.fromkeys(texts))


class KeystoneValidator:
    """Validates Keystone tokens for one server process (auth_token and its cache inside)."""

    def __init__(self, settings: KeystoneSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._middleware: Any = None

    def validate(self, token: str) -> KeystoneUser:
        """Who `token` belongs to; Unauthorized when Keystone refuses it, Unavailable when
        Keystone cannot be asked or refuses gitstore's own service user."""
        import webob  # noqa: PLC0415 - part of the optional keystone extra

        middleware = self._auth_token()
        request = webob.Request.blank("/", headers={"X-Auth-Token": token})
        deadline = _deadline(self.settings.timeout)
        try:
            with deadline:
                response = request.get_response(middleware)
        except _KeystoneFailed as exc:
            raise self._failure(exc.cause) from exc.cause
        except Exception as exc:  # raised past auth_token: its service login or discovery
            raise self._failure(exc) from exc
        except BaseException as exc:
            if exc is not deadline:
                raise
            raise self._unreachable(f"no answer in {self.settings.timeout:g} s") from None
        if response.status_int == 401:
            raise Unauthorized("Keystone refused the token (expired, revoked or not its own)")
        if response.status_int != 200:
            raise self._unreachable(response.status)
        return _user_of(request.environ)

    def warm_up(self) -> None:
        """Build auth_token, find Keystone's API version and log the service user in now (a
        made-up token is validated), so that the first client's token does not wait for them.
        Fails soft: the first Keystone token tries again."""
        # auth_token warns of every refused token: this one is refused on purpose. Nothing
        # else logs through it yet (the worker serves nothing before its app is built), and
        # it is built first, so that what it says at start is still logged.
        chatty = logging.getLogger(_MIDDLEWARE_LOG)
        level = chatty.level
        try:
            self._auth_token()
            chatty.setLevel(logging.ERROR)
            self.validate(_WARM_UP_TOKEN)
        except Unauthorized:
            log.info("Keystone at %s is ready to validate tokens", self._where())
        except GitstoreError as exc:
            log.warning("Keystone is not ready at worker start: %s", exc.message)
        finally:
            chatty.setLevel(level)

    def _failure(self, cause: BaseException) -> Unavailable:
        """Why auth_token could not ask Keystone: its refusal of gitstore's service user (logged
        with Keystone's answer), or no answer."""
        refusal = _refusal_of(cause)
        if refusal is None:
            return self._unreachable(str(cause) or type(cause).__name__)
        status, answer = refusal
        who = self.settings.service_user()
        if status == 401:
            what = (
                f"Keystone at {self._where()} refused the login of {who} (wrong "
                "--keystone-username or --keystone-password, or the user is disabled)"
            )
        else:
            what = (
                f"Keystone at {self._where()} refused {who} the right to validate tokens "
                "(it needs the service or admin role)"
            )
        log.error("%s: Keystone answered %s %s", what, status, answer[:_QUOTE])
        return Unavailable(
            f"{what}, so no Keystone token can be checked; the server's operator must fix "
            "gitstore's Keystone settings. gitstore's own tokens and passwords still work"
        )

    def _unreachable(self, detail: str) -> Unavailable:
        return Unavailable(
            f"Keystone at {self._where()} cannot be reached to validate the token ({detail}); "
            "gitstore's own tokens and passwords still work"
        )

    def _where(self) -> str:
        return self.settings.auth_url or "(see the config file)"

    def _auth_token(self) -> Any:
        with self._lock:
            if self._middleware is None:
                self._middleware = _build_middleware(self.settings)
            return self._middleware


class _KeystoneFailed(Exception):
    """auth_token could not ask Keystone: carries the cause its 503 would hide."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(str(cause))
        self.cause = cause or self


def _deadline(seconds: float) -> Any:
    """One deadline for the whole validation in a gevent worker (a gevent.Timeout, raised
    into the waiting green thread); elsewhere each call to Keystone has its own timeout."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is None or not monkey.is_module_patched("socket"):
        return contextlib.nullcontext()
    import gevent  # noqa: PLC0415 - present when gevent patched the process

    return gevent.Timeout(seconds)


def _refusal_of(cause: BaseException) -> tuple[int, str] | None:
    """(status, Keystone's answer) when Keystone refused gitstore's service user: 401 to its
    login (or to its token), 403 to validating tokens with it; None for anything else."""
    seen: BaseException | None = cause
    while seen is not None:
        status = getattr(seen, "http_status", None)
        if status in (401, 403):
            response = getattr(seen, "response", None)
            return status, getattr(response, "text", "") or str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _confirmed(environ: dict, start_response: Any) -> list[bytes]:
    """The app behind auth_token: reached only with a confirmed token."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b""]


def _build_middleware(settings: KeystoneSettings) -> Any:
    try:
        from keystonemiddleware import auth_token  # noqa: PLC0415 - optional extra
        from oslo_config import cfg  # noqa: PLC0415
    except ImportError as exc:
        raise Unavailable(
            "Keystone support needs keystonemiddleware: pip install 'gitstore[keystone]'"
        ) from exc
    # A configuration object of our own: the global one would read the process's argv
    # (gunicorn's) and the default /etc/... files.
    conf = cfg.ConfigOpts()
    files = [settings.config_file] if settings.config_file else []
    conf([], project="gitstore", default_config_files=files)
    timeout = settings.timeout
    login = settings.login()
    if login:
        # the password plugin's options are registered (and then read) by auth_token only
        # from its config object: given in its paste-deploy dict, each is warned about
        from keystoneauth1 import loading  # noqa: PLC0415

        plugin_options = loading.get_auth_plugin_conf_options("password")
        conf.register_opts(plugin_options, group=_GROUP)
        for name, value in login.items():
            conf.set_override(name, value, group=_GROUP)

    class Validating(auth_token.AuthProtocol):
        """auth_token, telling why it could not ask Keystone instead of a bare 503."""

        def fetch_token(self, token: str, **kwargs: Any) -> Any:
            import webob.exc  # noqa: PLC0415 - optional extra

            try:
                return super().fetch_token(token, **kwargs)
            except webob.exc.HTTPServiceUnavailable as exc:
                raise _KeystoneFailed(exc.__context__) from exc.__context__

        def _create_session(self, **kwargs: Any) -> Any:
            # its timeout option is an integer: a fractional --keystone-timeout would shrink
            kwargs["timeout"] = timeout
            return super()._create_session(**kwargs)

    return Validating(_confirmed, {**settings.options(), "oslo_config_config": conf})


def _user_of(environ: dict) -> KeystoneUser:
    """The identity auth_token put in the request's headers."""

    def header(name: str) -> str | None:
        return environ.get(f"HTTP_X_{name}") or None

    roles = frozenset(role.strip() for role in (header("ROLES") or "").split(",") if role.strip())
    return KeystoneUser(
        name=header("USER_NAME") or header("USER_ID") or "?",
        domain=header("USER_DOMAIN_NAME") or DEFAULT_DOMAIN,
        project=header("PROJECT_NAME"),
        project_domain=header("PROJECT_DOMAIN_NAME"),
        roles=roles,
        system=environ.get("HTTP_OPENSTACK_SYSTEM_SCOPE") or None,
    )
