"""`gitstore serve`'s Keystone options: where Keystone is, and gitstore's service user there.

`keystone_options` adds the options to a command and hands it one `keystone` argument: the
`KeystoneSettings` of the server, or None when it was started without Keystone. Everything can
also come from an OpenStack-style ini file (`--keystone-config`, section
`[keystone_authtoken]`, as every OpenStack service configures auth_token); options given on the
command line win over the file.
"""

from __future__ import annotations

import functools
import importlib.util
import urllib.parse
from collections.abc import Callable
from typing import Any

import click

from gitstore.access.keystone import KeystoneSettings

_NAMES = (
    "keystone_url",
    "keystone_username",
    "keystone_password",
    "keystone_project",
    "keystone_user_domain",
    "keystone_project_domain",
    "keystone_cache_time",
    "keystone_timeout",
    "keystone_config",
)

_OPTIONS = [
    click.option(
        "--keystone-url",
        envvar="GITSTORE_KEYSTONE_URL",
        metavar="URL",
        help="Accept Keystone tokens, validated by this Keystone (its identity URL, e.g. "
        "http://keystone:5000/v3); the access file's keystone rules map them to roles.",
    ),
    click.option(
        "--keystone-username",
        envvar="GITSTORE_KEYSTONE_USERNAME",
        help="gitstore's service user in Keystone (it needs the service or admin role to "
        "validate tokens).",
    ),
    click.option(
        "--keystone-password",
        envvar="GITSTORE_KEYSTONE_PASSWORD",
        help="Password of --keystone-username (better: $GITSTORE_KEYSTONE_PASSWORD).",
    ),
    click.option(
        "--keystone-project",
        envvar="GITSTORE_KEYSTONE_PROJECT",
        default="service",
        show_default=True,
        help="Project of the service user's token.",
    ),
    click.option("--keystone-user-domain", default="Default", show_default=True),
    click.option("--keystone-project-domain", default="Default", show_default=True),
    click.option(
        "--keystone-cache-time",
        type=click.IntRange(min=0),
        default=300,
        show_default=True,
        help="Seconds a validated token is remembered by each worker (no call to Keystone); "
        "a revoked token is refused at the latest this long after its revocation.",
    ),
    click.option(
        "--keystone-timeout",
        type=click.FloatRange(min=0.1),
        default=5.0,
        show_default=True,
        help="Seconds to wait for Keystone, in all, before answering 503.",
    ),
    click.option(
        "--keystone-config",
        type=click.Path(dir_okay=False, exists=True),
        help="An ini file whose [keystone_authtoken] section holds auth_token's options "
        "(the same as the options above, in OpenStack's form).",
    ),
]


def keystone_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the Keystone options to `command`, which receives them as `keystone=`."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in _NAMES}
        return command(*args, keystone=settings(**values), **kwargs)

    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def settings(
    keystone_url: str | None,
    keystone_username: str | None,
    keystone_password: str | None,
    keystone_project: str,
    keystone_user_domain: str,
    keystone_project_domain: str,
    keystone_cache_time: int,
    keystone_timeout: float,
    keystone_config: str | None,
) -> KeystoneSettings | None:
    """The server's Keystone settings; None without --keystone-url or --keystone-config."""
    if not keystone_url and not keystone_config:
        return None
    if keystone_url and urllib.parse.urlsplit(keystone_url).scheme not in ("http", "https"):
        raise click.BadParameter(
            f"{keystone_url!r} must start with http:// or https://", param_hint="--keystone-url"
        )
    if bool(keystone_username) != bool(keystone_password):
        raise click.UsageError("--keystone-username and --keystone-password go together")
    if not _installed("keystonemiddleware"):
        raise click.UsageError(
            "Keystone support needs keystonemiddleware, which is not installed: "
            "pip install 'gitstore[keystone]'"
        )
    return KeystoneSettings(
        auth_url=keystone_url,
        username=keystone_username,
        password=keystone_password,
        project_name=keystone_project,
        user_domain_name=keystone_user_domain,
        project_domain_name=keystone_project_domain,
        cache_seconds=keystone_cache_time,
        timeout=keystone_timeout,
        config_file=keystone_config,
    )


def _installed(package: str) -> bool:
    """Whether `package` can be found, without importing it: imported here, in gunicorn's
    arbiter, it would import `ssl` before the gevent workers patch it (gevent warns that this
    may break TLS)."""
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:
        return False
