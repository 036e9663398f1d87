"""Which `Host` an open store answers: a guard against DNS rebinding.

A store without an access file trusts whoever reaches it, which `gitstore serve` limits to
loopback. A web page in the operator's browser can still reach it under a name of its own
that it points at 127.0.0.1 (DNS rebinding), and then read and write as a local client would.
The browser sends that name as `Host`, so an open store answers only:

- IP address literals (rebinding needs a name; an address is what a local client dialled),
- `localhost` and names under `.localhost` (resolved to loopback by the client itself),
- the names it is served as (`GITSTORE_SERVED_HOSTS`: `gitstore serve --host`, and every
  `--allowed-host`).

Anything else is answered 421 (Misdirected Request: "not a name this server answers"). A store
with access control leaves names to its proxy: credentials, not names, decide there.
"""

from __future__ import annotations

import ipaddress
import os

from flask import Flask, current_app, request

from gitstore.access.policy import SERVED_HOSTS
from gitstore.api.http import app_store
from gitstore.errors import MisdirectedRequest


def register(app: Flask) -> None:
    """Check the `Host` of every request to `app` while its store is open."""
    names = app.config.get(SERVED_HOSTS)
    if names is None:
        names = [n for n in os.environ.get(SERVED_HOSTS, "").split(",") if n.strip()]
    app.config[SERVED_HOSTS] = frozenset(_normal(name) for name in names)
    app.before_request(_check_host)


def _check_host() -> None:
    access = app_store().access
    if access.policy() is not None:
        return
    name = _normal(hostname(request.host))
    if not answers(name, current_app.config[SERVED_HOSTS]):
        raise MisdirectedRequest(
            f"this open store does not answer to host {name!r}: use a loopback address or "
            "localhost, start it with `gitstore serve --allowed-host NAME`, or turn access "
            "control on (`gitstore user add`)",
            key="Host",
        )


def hostname(host: str) -> str:
    """`Host` without its port: `[::1]:80` -> `::1`, `example.org:80` -> `example.org`."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def answers(name: str, served: frozenset[str]) -> bool:
    if not name or name in served or name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _normal(name: str) -> str:
    return name.strip().lower().rstrip(".")
