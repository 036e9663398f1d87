"""Fixtures of the Keystone tests: one real Keystone per session, its users, gitstore against it.

Identities (domain Default) and how the access file's keystone rules map them:

| Keystone user | project, role          | gitstore grants     |
|---------------|------------------------|---------------------|
| admin         | admin, admin           | admin               |
| alice         | cloud-1, member        | writer:env:1        |
| puppet        | service, reader        | reader, secrets     |  (by user name: a service user)
| admin         | system all, admin      | admin               |  (a system-scoped token)
| bob           | demo, member           | none: unmapped, 403 |
| gitstore      | service, service       | (validates tokens for gitstore serve) |
| no-role       | service, member        | (a service user Keystone refuses validations) |
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from access.helpers import serve

from gitstore import Store
from gitstore.access.policy import AccessFile, parse_grants

from .keystone_fixture import ADMIN_PASSWORD, Keystone, start_keystone

SERVICE_USER, SERVICE_PASSWORD = "gitstore", "gitstore-service-pw"
#: user -> (password, project, roles)
USERS = {
    "alice": ("alice-pw", "cloud-1", ["member"]),
    "bob": ("bob-pw", "demo", ["member"]),
    "puppet": ("puppet-pw", "service", ["reader"]),
    SERVICE_USER: (SERVICE_PASSWORD, "service", ["service"]),
    # a would-be service user without the service role: Keystone refuses it validations
    "no-role": ("no-role-pw", "service", ["member"]),
}
RULES = [
    {"project": "admin", "role": "admin", "grants": ["admin"]},
    {"project": "cloud-1", "role": "member", "grants": ["writer:env:1"]},
    {"user": "puppet", "grants": ["reader", "secrets"]},
    {"system": "all", "role": "admin", "grants": ["admin"]},
]
#: A gitstore user beside the Keystone ones: its token must work while Keystone is down.
LOCAL_USER = "local-reader"


@dataclass
class Cloud:
    """The session's Keystone and the ids of what the fixtures created in it."""

    keystone: Keystone
    user_ids: dict[str, str]

    def token(self, user: str) -> str:
        if user == "admin":
            return self.keystone.token("admin", ADMIN_PASSWORD, "admin")
        password, project, _ = USERS[user]
        return self.keystone.token(user, password, project)

    def password(self, user: str) -> str:
        return ADMIN_PASSWORD if user == "admin" else USERS[user][0]


@pytest.fixture(scope="session")
def cloud(tmp_path_factory) -> Cloud:
    keystone = start_keystone(tmp_path_factory.mktemp("keystone"))
    try:
        ids = {name: keystone.user(name, *USERS[name])["id"] for name in USERS}
        yield Cloud(keystone, ids)
    finally:
        keystone.stop()


def keystone_store(root: Path) -> tuple[Store, str]:
    """Environments 1 and 2 (component fuel), the keystone rules, and one gitstore user with
    a token (returned) beside them."""
    store = Store.init(root)
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": "astute"}, {"name": "globals"}]}
    )
    for env_id in (1, 2):
        store.environments.create(
            {"id": env_id, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
        )
    access = AccessFile(root)
    access.add_user(LOCAL_USER, parse_grants(["reader"]), "local-pw")
    _, token = access.create_token(LOCAL_USER, "keystone tests")
    with_rules = yaml.safe_load(access.path.read_text())
    with_rules["keystone"] = {"rules": RULES}
    access.path.write_text(yaml.safe_dump(with_rules))
    return store, token


@pytest.fixture(scope="session")
def server(cloud, tmp_path_factory):
    """`gitstore serve --keystone-url` (2 workers, cache 300 s, timeout 2 s) on the store of
    `keystone_store`; `server.local_token` is the gitstore user's token."""
    base = tmp_path_factory.mktemp("ks-serve")
    store, local_token = keystone_store(base / "store")
    running = serve(store.root, base, *serve_args(cloud, "--keystone-timeout", "2"))
    running.local_token = local_token
    yield running
    running.stop()


def serve_args(cloud: Cloud, *extra: str) -> list[str]:
    """`gitstore serve`'s Keystone options for the session's Keystone."""
    return [
        "--keystone-url",
        cloud.keystone.auth_url,
        "--keystone-username",
        SERVICE_USER,
        "--keystone-password",
        SERVICE_PASSWORD,
        "--keystone-project",
        "service",
        *extra,
    ]
