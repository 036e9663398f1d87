"""A real Keystone for the tests: SQLite, fernet tokens, served by `keystone_server.py`.

`start_keystone(folder)` writes a keystone.conf, runs `keystone-manage` (db_sync, fernet and
credential keys, bootstrap of the admin user, project, roles and the identity endpoints) and
starts the server; about 25 s on this machine, once per test session. `Keystone` then speaks
Keystone's own REST API (`/v3/...`) to create what the tests need.
"""

from __future__ import annotations

import datetime
import getpass
import grp
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
from live_server import free_port, stop_process

BIN = Path(sys.executable).parent
LAUNCHER = Path(__file__).resolve().parent / "keystone_server.py"
ADMIN_PASSWORD = "keystone-admin-pw"
REGION = "RegionOne"
START_TIMEOUT = 90


@dataclass
class Keystone:
    """A running Keystone: its base URL, its process and what it logged."""

    base: str
    process: subprocess.Popen
    log: Path
    _admin: str | None = field(default=None, repr=False)

    @property
    def auth_url(self) -> str:
        return f"{self.base}/v3"

    # -- tokens ------------------------------------------------------------------------------
    def token(self, user: str, password: str, project: str | None) -> str:
        """A token of `user` (domain Default), scoped to `project` unless it is None."""
        identity = {
            "methods": ["password"],
            "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}},
        }
        auth: dict = {"identity": identity}
        if project:
            auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
        return self._issue({"auth": auth})

    def system_token(self, user: str, password: str) -> str:
        """A system-scoped token of `user` (`"system": {"all": true}`, as Keystone's
        secure-RBAC administrators use; bootstrap gives admin the admin role on the system)."""
        identity = {
            "methods": ["password"],
            "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}},
        }
        return self._issue({"auth": {"identity": identity, "scope": {"system": {"all": True}}}})

    def app_credential_token(self, credential_id: str, secret: str) -> str:
        identity = {
            "methods": ["application_credential"],
            "application_credential": {"id": credential_id, "secret": secret},
        }
        return self._issue({"auth": {"identity": identity}})

    def _issue(self, body: dict) -> str:
        answer = requests.post(f"{self.auth_url}/auth/tokens", json=body, timeout=30)
        assert answer.status_code == 201, answer.text
        return answer.headers["X-Subject-Token"]

    def revoke(self, token: str) -> None:
        answer = self._call("DELETE", "/auth/tokens", headers={"X-Subject-Token": token})
        assert answer.status_code == 204, answer.text

    def revoke_all_of(self, user_id: str) -> None:
        """Revoke every token of the user issued so far (disabled, then enabled again: Keystone
        records a revocation of the user's earlier tokens; new logins work at once)."""
        for enabled in (False, True):
            answer = self._call("PATCH", f"/users/{user_id}", json={"user": {"enabled": enabled}})
            assert answer.status_code == 200, answer.text

    def validations(self) -> int:
        """How many token validations (`GET /v3/auth/tokens`) Keystone has answered so far."""
        return self.requests("GET /v3/auth/tokens ")

    def lines(self) -> list[str]:
        """Every `METHOD PATH AGENT` line Keystone logged so far."""
        return [line for line in self.log.read_text(errors="replace").splitlines() if line]

    def requests(self, prefix: str) -> int:
        """How many requests Keystone logged whose `METHOD PATH AGENT` line starts so."""
        lines = self.log.read_text(errors="replace").splitlines()
        return sum(line.startswith(prefix) for line in lines)

    # -- the identity API --------------------------------------------------------------------
    def admin_token(self) -> str:
        if self._admin is None:
            self._admin = self.token("admin", ADMIN_PASSWORD, "admin")
        return self._admin

    def _call(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {"X-Auth-Token": self.admin_token(), **kwargs.pop("headers", {})}
        return requests.request(
            method, f"{self.auth_url}{path}", headers=headers, timeout=30, **kwargs
        )

    def create(self, collection: str, body: dict) -> dict:
        """POST /v3/<collection>s; the created entity."""
        answer = self._call("POST", f"/{collection}s", json={collection: body})
        assert answer.status_code == 201, answer.text
        return answer.json()[collection]

    def find(self, collection: str, name: str) -> dict:
        answer = self._call("GET", f"/{collection}s", params={"name": name})
        assert answer.status_code == 200, answer.text
        (entity,) = answer.json()[f"{collection}s"]
        return entity

    def user(self, name: str, password: str, project: str, roles: list[str]) -> dict:
        """A user of domain Default with `roles` on `project` (both created when missing)."""
        user = self.create("user", {"name": name, "password": password, "domain_id": "default"})
        project_id = self.ensure("project", project, domain_id="default")["id"]
        for role in roles:
            role_id = self.ensure("role", role)["id"]
            answer = self._call("PUT", f"/projects/{project_id}/users/{user['id']}/roles/{role_id}")
            assert answer.status_code == 204, answer.text
        return user

    def ensure(self, collection: str, name: str, **extra: str) -> dict:
        answer = self._call("GET", f"/{collection}s", params={"name": name})
        found = answer.json()[f"{collection}s"]
        return found[0] if found else self.create(collection, {"name": name, **extra})

    def app_credential(self, user_id: str, user_token: str, expires_in: float) -> tuple[str, str]:
        """(id, secret) of an application credential of the user expiring in `expires_in` s;
        Keystone caps the tokens it issues for it at that time."""
        expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=expires_in)
        body = {
            "application_credential": {
                "name": f"short-{time.monotonic_ns()}",
                "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.%f"),
            }
        }
        answer = requests.post(
            f"{self.auth_url}/users/{user_id}/application_credentials",
            json=body,
            headers={"X-Auth-Token": user_token},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        credential = answer.json()["application_credential"]
        return credential["id"], credential["secret"]

    def stop(self) -> None:
        stop_process(self.process)


def _conf(folder: Path, port: int) -> Path:
    keys = {name: folder / name for name in ("fernet-keys", "receipt-keys", "credential-keys")}
    for path in keys.values():
        path.mkdir(mode=0o700)
    conf = folder / "keystone.conf"
    conf.write_text(
        "[DEFAULT]\n"
        f"log_file = {folder / 'keystone-oslo.log'}\n"
        "[database]\n"
        f"connection = sqlite:///{folder / 'keystone.db'}\n"
        "[token]\n"
        "provider = fernet\n"
        "[fernet_tokens]\n"
        f"key_repository = {keys['fernet-keys']}\n"
        "[fernet_receipts]\n"
        f"key_repository = {keys['receipt-keys']}\n"
        "[credential]\n"
        f"key_repository = {keys['credential-keys']}\n"
    )
    return conf


def _manage(conf: Path, *args: str) -> subprocess.Popen:
    """`keystone-manage ARGS`, started; `_finish` waits for it."""
    return subprocess.Popen(
        [str(BIN / "keystone-manage"), "--config-file", str(conf), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(*runs: subprocess.Popen) -> None:
    for run in runs:
        _, errors = run.communicate(timeout=300)
        assert run.returncode == 0, f"{' '.join(run.args[3:5])} failed:\n{errors[-3000:]}"


def start_keystone(folder: Path) -> Keystone:
    """Set up and start a Keystone in `folder`; waits until it answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    conf = _conf(folder, port)
    owner = ["--keystone-user", getpass.getuser(), "--keystone-group"]
    owner.append(grp.getgrgid(os.getgid()).gr_name)
    # the key repositories do not need the database: made while it is created
    _finish(
        _manage(conf, "db_sync"),
        _manage(conf, "fernet_setup", *owner),
        _manage(conf, "credential_setup", *owner),
    )
    urls = []
    for interface in ("admin", "public", "internal"):
        urls += [f"--bootstrap-{interface}-url", f"{base}/v3"]
    _finish(_manage(conf, "bootstrap", "--bootstrap-password", ADMIN_PASSWORD, *urls,
                    "--bootstrap-region-id", REGION))  # fmt: skip
    return launch(folder, conf, port)


def launch(folder: Path, conf: Path, port: int) -> Keystone:
    log = folder / "keystone.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, str(LAUNCHER), str(conf), str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    keystone = Keystone(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"keystone exited:\n{log.read_text()[-4000:]}")
        try:
            if requests.get(keystone.auth_url, timeout=5).status_code == 200:
                return keystone
        except requests.RequestException:
            time.sleep(0.2)
    keystone.stop()
    raise RuntimeError(f"keystone did not answer in {START_TIMEOUT}s:\n{log.read_text()[-4000:]}")
