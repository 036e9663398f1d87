"""The CLI as an OpenStack client: Keystone credentials, clouds.yaml, the service catalog.

The root group's `--os-*` options (and the `OS_*` variables an openrc file sets, and
`--os-cloud` naming an entry of clouds.yaml) describe a Keystone identity. When they are given
and neither --token nor --user is, the CLI gets a token from Keystone (keystoneauth1, the
OpenStack client library) and sends it to gitstore; without --url, it finds gitstore's URL in
the token's service catalog (service type `config`, interface public by default).

`gitstore keystone register` creates that service and its endpoints.

keystoneauth1 is an optional extra (`pip install 'gitstore[keystone]'`): it is imported only
when Keystone is used, and its absence is one clear line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import click

from gitstore import yamlio
from gitstore.errors import InvalidInput, NotFound, Unauthorized, Unavailable

SERVICE_TYPE = "config"
SERVICE_NAME = "gitstore"
INTERFACES = ("public", "internal", "admin")
#: Where OpenStack clients look for clouds.yaml, first match wins (after $OS_CLIENT_CONFIG_FILE).
CLOUDS_YAML = (
    Path("clouds.yaml"),
    Path("~/.config/openstack/clouds.yaml"),
    Path("/etc/openstack/clouds.yaml"),
)


@dataclass(frozen=True)
class OpenStackAuth:
    """A Keystone identity from --os-* options, OS_* variables or a clouds.yaml entry."""

    auth_url: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    project_name: str | None = None
    user_domain_name: str | None = None
    project_domain_name: str | None = None
    region_name: str | None = None
    interface: str | None = None
    cacert: str | None = None

    def given(self) -> bool:
        return bool(self.auth_url or self.username)

    def over(self, base: OpenStackAuth) -> OpenStackAuth:
        """These values, each missing one taken from `base` (a clouds.yaml entry)."""
        return replace(
            base, **{f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}
        )


_OPTIONS = [
    ("--os-cloud", "OS_CLOUD", "Entry of clouds.yaml to take the --os-* values from."),
    ("--os-auth-url", "OS_AUTH_URL", "Keystone URL: authenticate with Keystone."),
    ("--os-username", "OS_USERNAME", "Keystone user name."),
    ("--os-password", "OS_PASSWORD", "Keystone password."),
    ("--os-project-name", "OS_PROJECT_NAME", "Project to scope the Keystone token to."),
    ("--os-user-domain-name", "OS_USER_DOMAIN_NAME", "Domain of the user (default: Default)."),
    (
        "--os-project-domain-name",
        "OS_PROJECT_DOMAIN_NAME",
        "Domain of the project (default: Default).",
    ),
    ("--os-region-name", "OS_REGION_NAME", "Region of gitstore's endpoint in the catalog."),
    (
        "--os-interface",
        "OS_INTERFACE",
        "Endpoint interface to use from the catalog: public (default) or internal.",
    ),
]


def openstack_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the --os-* options to the root group; its callback receives `openstack=`."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name[2:].replace("-", "_"): kwargs.pop(name[2:].replace("-", "_"))
                  for name, _, _ in _OPTIONS}  # fmt: skip
        return command(*args, openstack=_auth_of(values), **kwargs)

    for name, envvar, text in reversed(_OPTIONS):
        choice = click.Choice(INTERFACES) if name == "--os-interface" else None
        wrapper = click.option(name, envvar=envvar, show_envvar=True, type=choice, help=text)(
            wrapper
        )
    return wrapper


def _auth_of(values: dict[str, str | None]) -> OpenStackAuth | None:
    named = {key.removeprefix("os_"): value for key, value in values.items()}
    cloud = named.pop("cloud")
    given = OpenStackAuth(**named)
    if cloud:
        given = given.over(cloud_entry(cloud))
    return given if given.given() else None


def clouds_file() -> Path | None:
    explicit = os.environ.get("OS_CLIENT_CONFIG_FILE")
    if explicit:
        return Path(explicit)
    for candidate in CLOUDS_YAML:
        path = candidate.expanduser()
        if path.is_file():
            return path
    return None


def cloud_entry(name: str) -> OpenStackAuth:
    """The identity of cloud `name` in clouds.yaml; a usage error naming what is missing."""
    path = clouds_file()
    if path is None:
        raise click.UsageError(
            f"--os-cloud {name}: no clouds.yaml (looked at $OS_CLIENT_CONFIG_FILE, "
            + ", ".join(str(p) for p in CLOUDS_YAML)
            + ")"
        )
    try:
        data = yamlio.load_mapping(path.read_bytes(), path=str(path))
    except (OSError, InvalidInput) as exc:
        raise click.UsageError(f"--os-cloud {name}: cannot read {path}: {exc}") from None
    cloud = (data.get("clouds") or {}).get(name)
    if not isinstance(cloud, dict):
        known = ", ".join(sorted(data.get("clouds") or {})) or "none"
        raise click.UsageError(f"--os-cloud {name}: no such cloud in {path} (clouds: {known})")
    auth = cloud.get("auth") or {}
    return OpenStackAuth(
        auth_url=auth.get("auth_url"),
        username=auth.get("username"),
        password=auth.get("password"),
        project_name=auth.get("project_name"),
        user_domain_name=auth.get("user_domain_name"),
        project_domain_name=auth.get("project_domain_name"),
        region_name=cloud.get("region_name"),
        interface=cloud.get("interface"),
        cacert=cloud.get("cacert"),
    )


class KeystoneSession:
    """A Keystone login: its token, and endpoints from its service catalog."""

    def __init__(self, auth: OpenStackAuth, cacert: str | None = None) -> None:
        missing = [n for n in ("auth_url", "username", "password") if not getattr(auth, n)]
        if missing:
            names = ", ".join("--os-" + n.replace("_", "-") for n in missing)
            raise click.UsageError(f"Keystone authentication needs {names} (or OS_* variables)")
        self.auth = auth
        v3, session = _keystoneauth()
        plugin = v3.Password(
            auth_url=auth.auth_url,
            username=auth.username,
            password=auth.password,
            project_name=auth.project_name,
            user_domain_name=auth.user_domain_name or "Default",
            project_domain_name=auth.project_domain_name or "Default",
        )
        self.session = session.Session(auth=plugin, verify=cacert or auth.cacert or True)

    def token(self) -> str:
        """The login's token; keystoneauth logs in again shortly before it expires."""
        return self._call(self.session.get_token)

    def new_token(self) -> str:
        """A new login's token: the one in hand was refused (revoked, or expired early)."""
        self.session.invalidate()
        return self.token()

    def endpoint(self) -> str:
        """gitstore's URL from the catalog (service type `config`)."""
        interface = self.auth.interface or "public"
        try:
            url = self._call(
                self.session.get_endpoint,
                service_type=SERVICE_TYPE,
                interface=interface,
                region_name=self.auth.region_name,
            )
        except NotFound:  # keystoneauth's EndpointNotFound: the same answer, with the hint
            url = None
        if not url:
            region = f" in region {self.auth.region_name}" if self.auth.region_name else ""
            raise NotFound(
                f"the Keystone catalog has no {interface} endpoint of service type "
                f"{SERVICE_TYPE!r}{region}: give --url, or register gitstore with "
                "`gitstore keystone register`",
                key="url",
            )
        return url.rstrip("/")

    def identity(self, method: str, path: str, **kwargs: Any) -> Any:
        """A call to Keystone's identity API (`path` under /v3); the answer's JSON."""
        answer = self._call(
            self.session.request,
            path,
            method,
            endpoint_filter={"service_type": "identity", "interface": "public"},
            **kwargs,
        )
        return answer.json() if answer.content else None

    def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from keystoneauth1 import exceptions  # noqa: PLC0415 - optional extra

        where = f"Keystone at {self.auth.auth_url}"
        try:
            return function(*args, **kwargs)
        except exceptions.Unauthorized as exc:
            who = self.auth.username
            raise Unauthorized(f"{where} refused the credentials of {who!r}") from exc
        except exceptions.Forbidden as exc:
            raise Unauthorized(f"{where} refused: {exc.message}") from exc
        except exceptions.EndpointNotFound as exc:
            raise NotFound(f"{where}: {exc}") from exc
        except exceptions.ClientException as exc:
            raise Unavailable(f"{where} cannot be used: {exc}") from exc


def _keystoneauth() -> tuple[Any, Any]:
    try:
        from keystoneauth1 import session  # noqa: PLC0415 - optional extra
        from keystoneauth1.identity import v3  # noqa: PLC0415
    except ImportError:
        raise click.UsageError(
            "the --os-* options need keystoneauth1: pip install 'gitstore[keystone]'"
        ) from None
    return v3, session


# -- gitstore keystone register ---------------------------------------------------------------


def register(group: click.Group) -> None:
    group.add_command(keystone)


@click.group()
def keystone() -> None:
    """gitstore in a Keystone catalog (with the --os-* credentials of a Keystone admin)."""


@keystone.command("register")
@click.option("--public-url", required=True, help="gitstore's URL for the public interface.")
@click.option("--internal-url", help="gitstore's URL for the internal interface.")
@click.option("--region", default="RegionOne", show_default=True, help="Region of the endpoints.")
@click.option("--name", default=SERVICE_NAME, show_default=True, help="The service's name.")
@click.pass_context
def register_service(
    ctx: click.Context, public_url: str, internal_url: str | None, region: str, name: str
) -> None:
    """Create the `config` service and its endpoints; running it again updates their URLs.

    Clients then find gitstore in the catalog: `gitstore --os-cloud X ...` without --url.
    """
    connection = ctx.find_root().obj
    if connection.openstack is None:
        raise click.UsageError("give the Keystone admin's --os-* options (or OS_* variables)")
    session = KeystoneSession(connection.openstack, connection.cacert)
    service_id = _service(session, name)
    click.echo(f"service {name} (type {SERVICE_TYPE}): {service_id}")
    urls = {"public": public_url, "internal": internal_url}
    for interface, url in urls.items():
        if url:
            done = _endpoint(session, service_id, interface, url, region)
            click.echo(f"{interface} endpoint: {done}")


def _service(session: KeystoneSession, name: str) -> str:
    found = session.identity("GET", "/services", params={"type": SERVICE_TYPE})["services"]
    if found:
        return found[0]["id"]
    body = {"service": {"type": SERVICE_TYPE, "name": name, "description": "gitstore"}}
    return session.identity("POST", "/services", json=body)["service"]["id"]


def _endpoint(session: KeystoneSession, service_id: str, interface: str, url: str, region: str):
    params = {"service_id": service_id, "interface": interface, "region_id": region}
    found = session.identity("GET", "/endpoints", params=params)["endpoints"]
    if found:
        body = {"endpoint": {"url": url}}
        session.identity("PATCH", f"/endpoints/{found[0]['id']}", json=body)
        return f"{url} (updated {found[0]['id']})"
    body = {"endpoint": {**params, "url": url}}
    created = session.identity("POST", "/endpoints", json=body)["endpoint"]
    return f"{url} (created {created['id']})"
