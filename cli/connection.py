"""Where a command talks: the top-level connection options and the client built from them.

The root group stores a `Connection` on the click context; a store command asks it for its
client with `@pass_client`. The client is built on first use (once per run), so commands with
their own required arguments (`init`, `serve`) never need --url or --root.

Other command modules use this module as is::

    from cli.connection import pass_client

    @click.command()
    @pass_client
    def history(client, ...): ...
"""

from __future__ import annotations

import functools
import os
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from cli.client import Client
from cli.http_client import HttpClient
from cli.keystone import KeystoneSession, OpenStackAuth
from cli.local_client import LocalClient
from gitstore.backend.repository import Author


@dataclass
class Connection:
    """The connection options of one `gitstore` run."""

    url: str | None = None
    root: str | None = None
    token: str | None = None
    user: str | None = None
    password: str | None = None
    cacert: str | None = None
    #: A Keystone identity (--os-*, OS_*, --os-cloud): the token, and the URL when not given.
    openstack: OpenStackAuth | None = None
    _client: Client | None = field(default=None, repr=False)
    _keystone: KeystoneSession | None = field(default=None, repr=False)

    def client(self) -> Client:
        """The client for --url or --root; a usage error unless exactly one was given."""
        if self._client is None:
            self._client = self._build()
        return self._client

    def _build(self) -> Client:
        if self.openstack is not None and not self.root and not (self.token or self.user):
            self._log_in_to_keystone()
        if bool(self.url) == bool(self.root):
            given = "both were" if self.url else "neither was"
            raise click.UsageError(
                f"give exactly one of --url (GITSTORE_URL) or --root (GITSTORE_ROOT); "
                f"{given} given",
                ctx=click.get_current_context(silent=True),
            )
        if self.root:
            return LocalClient(self.root, author=self._local_author())
        self._check_http_options()
        assert self.url is not None  # exactly one of url and root, checked above
        return HttpClient(
            self.url,
            token=self.token,
            tokens=self._keystone,
            user=self.user,
            password=self.password,
            cacert=self.cacert,
        )

    def _log_in_to_keystone(self) -> None:
        """A Keystone login for the requests (its token is renewed as it expires, or when the
        server refuses it); gitstore's URL from the catalog unless --url."""
        assert self.openstack is not None  # called only with the --os-* options
        self._keystone = KeystoneSession(self.openstack, self.cacert)
        self._keystone.token()  # log in now: bad credentials fail before anything is sent
        if not self.url:
            self.url = self._keystone.endpoint()

    def _check_http_options(self) -> None:
        ctx = click.get_current_context(silent=True)
        problem = _url_problem(self.url or "")
        if problem:
            raise click.UsageError(f"--url {self.url!r} {problem}", ctx=ctx)
        if self.token and self.user:
            raise click.UsageError("give --token or --user/--password, not both", ctx=ctx)
        if self.user and not self.password and _on_a_terminal():
            self.password = click.prompt(f"Password for {self.user}", hide_input=True)
        if bool(self.user) != bool(self.password):
            raise click.UsageError(
                "--user and --password go together (the password is asked for on a terminal)",
                ctx=ctx,
            )

    def _local_author(self) -> Author | None:
        """Who a local write is by: --user, else git's author variables, else the default."""
        if self.user:
            return Author(self.user, f"{self.user}@gitstore")
        name = os.environ.get("GIT_AUTHOR_NAME")
        if name:
            return Author(name, os.environ.get("GIT_AUTHOR_EMAIL") or f"{name}@gitstore")
        return None


def _url_problem(url: str) -> str | None:
    """What makes `url` unusable as the server's base URL, or None.

    Checked before the first request: urllib would fail on each of these with a traceback
    (ValueError) or as an unreachable server, and `urlsplit` silently drops a newline that
    the request line and `Host` header would then carry.
    """
    if any(char.isspace() or not char.isprintable() for char in url):
        return "has a control character or a space (a newline from an env file?)"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - parsed on access: a bad port raises here
    except ValueError as exc:
        return f"is not a URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "names no host"
    return None


def _on_a_terminal() -> bool:
    """Whether a prompt can be answered: a script's stdin is no terminal, and it fails instead."""
    return sys.stdin is not None and sys.stdin.isatty()


def current_connection() -> Connection:
    """The connection options of the running command."""
    connection = click.get_current_context().find_object(Connection)
    assert connection is not None  # the top-level group puts one in the context
    return connection


def current_client() -> Client:
    """The client of the running command (see `Connection.client`)."""
    return current_connection().client()


def pass_client(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click callback so its first argument is the run's client."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return command(current_client(), *args, **kwargs)

    return wrapper
