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
without `delay_auth_decision`, it answers 401 for a bad token and 503 when Keystone cannot be
reached, which become `Unauthorized` and `Unavailable`.

The keystone section of the access file maps identities to grants::

    keystone:
      rules:
        - {project: admin, role: admin, grants: [admin]}
        - {project: cloud-1, role: member, grants: ['writer:env:1']}
        - {user: puppet, grants: [reader, secrets]}

A rule matches when each of `user`, `project`, `role` it names matches (names in the domain
`domain`, `Default` when not given); the identity gets the grants of every matching rule. An
identity no rule matches is refused (403) saying so.

keystonemiddleware is imported only when a validator is first used: it is an optional extra
(`pip install gitstore[keystone]`), needed by servers started with `--keystone-url` only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from gitstore.errors import Forbidden, InvalidInput, Unauthorized, Unavailable

DEFAULT_DOMAIN = "Default"
DEFAULT_CACHE_SECONDS = 300
DEFAULT_TIMEOUT_SECONDS = 5.0
_RULE_KEYS = frozenset({"user", "project", "role", "domain", "grants"})
_MATCH_KEYS = ("user", "project", "role")
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
            "http_connect_timeout": self.timeout,
            "http_request_max_retries": 1,
            "delay_auth_decision": False,
            "include_service_catalog": False,
        }
        if self.auth_url:
            options["www_authenticate_uri"] = self.auth_url
        if self.username:
            options["auth_type"] = "password"
        return options

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

    def describe(self) -> str:
        project = f"project {self.project!r}" if self.project else "no project (unscoped)"
        roles = ", ".join(sorted(self.roles)) or "none"
        return f"Keystone user {self.name!r} (domain {self.domain}; {project}; roles: {roles})"


@dataclass(frozen=True)
class KeystoneRule:
    """One rule of the keystone section: who it matches and the grant texts it gives."""

    grants: tuple[str, ...]
    user: str | None = None
    project: str | None = None
    role: str | None = None
    domain: str = DEFAULT_DOMAIN

    def matches(self, who: KeystoneUser) -> bool:
        if self.user is not None and (self.user, self.domain) != (who.name, who.domain):
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
        raise InvalidInput(f"{where} must name a user, a project or a role to match")
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
        Keystone cannot be asked."""
        import webob  # noqa: PLC0415 - part of the optional keystone extra

        middleware = self._auth_token()
        request = webob.Request.blank("/", headers={"X-Auth-Token": token})
        try:
            response = request.get_response(middleware)
        except Exception as exc:  # raised past the middleware: a timeout of its service login
            raise self._unreachable(str(exc)) from exc
        if response.status_int == 401:
            raise Unauthorized("Keystone refused the token (expired, revoked or not its own)")
        if response.status_int != 200:
            raise self._unreachable(response.status)
        return _user_of(request.environ)

    def _unreachable(self, detail: str) -> Unavailable:
        where = self.settings.auth_url or "(see the config file)"
        return Unavailable(
            f"Keystone at {where} cannot be reached to validate the token ({detail}); "
            "gitstore's own tokens and passwords still work"
        )

    def _auth_token(self) -> Any:
        with self._lock:
            if self._middleware is None:
                self._middleware = _build_middleware(self.settings)
            return self._middleware


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
    login = settings.login()
    if login:
        # the password plugin's options are registered (and then read) by auth_token only
        # from its config object: given in its paste-deploy dict, each is warned about
        from keystoneauth1 import loading  # noqa: PLC0415

        plugin_options = loading.get_auth_plugin_conf_options("password")
        conf.register_opts(plugin_options, group=_GROUP)
        for name, value in login.items():
            conf.set_override(name, value, group=_GROUP)
    return auth_token.AuthProtocol(_confirmed, {**settings.options(), "oslo_config_config": conf})


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
    )
