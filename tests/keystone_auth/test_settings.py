"""How a server and the CLI are told about Keystone: the config file, and clear refusals."""

from __future__ import annotations

import subprocess
import sys

import requests
from access.helpers import serve
from live_server import GITSTORE, isolated_env

from .conftest import SERVICE_PASSWORD, SERVICE_USER, keystone_store

#: Run the CLI with one package made unimportable, as on a host without the keystone extra.
WITHOUT = """
import sys
MISSING = sys.argv[1]
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == MISSING:
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Missing())
sys.argv = ["gitstore", *sys.argv[2:]]
from cli.main import main
main()
"""


def _without(package: str, home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, package, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=isolated_env(home),
    )


def test_keystone_settings_from_an_openstack_style_config_file(cloud, tmp_path):
    store, _ = keystone_store(tmp_path / "store")
    conf = tmp_path / "keystone.conf"
    conf.write_text(
        "[keystone_authtoken]\n"
        f"www_authenticate_uri = {cloud.keystone.auth_url}\n"
        "auth_type = password\n"
        f"auth_url = {cloud.keystone.auth_url}\n"
        f"username = {SERVICE_USER}\n"
        f"password = {SERVICE_PASSWORD}\n"
        "project_name = service\n"
        "user_domain_name = Default\n"
        "project_domain_name = Default\n"
    )
    server = serve(store.root, tmp_path, "--keystone-config", str(conf))
    try:
        answer = requests.get(
            server.url + "/api/v1/access/whoami",
            headers={"X-Auth-Token": cloud.token("alice")},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["user"] == "alice"
        anonymous = requests.get(server.url + "/api/v1/access/whoami", timeout=60)
        challenges = anonymous.raw.headers.getlist("WWW-Authenticate")
        assert challenges[0] == f'Keystone uri="{cloud.keystone.auth_url}"'  # the file's
    finally:
        server.stop()
    log = server.log.read_text()
    # keystonemiddleware is not imported before the gevent workers patch ssl
    assert "MonkeyPatchWarning" not in log
    # the service login reaches auth_token without a warning per option
    assert "is not known to keystonemiddleware" not in log


def test_keystone_without_an_access_file_is_refused_at_start(tmp_path):
    root = tmp_path / "store"
    keystone_store(root)
    (root / "access.yaml").unlink()
    done = subprocess.run(
        [str(GITSTORE), "serve", "--root", str(root),
         "--keystone-url", "http://127.0.0.1:5000/v3"],
        capture_output=True, text=True, timeout=60, env=isolated_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--keystone-url needs an access file" in done.stderr


def test_serving_keystone_without_the_extra_says_what_to_install(tmp_path):
    root = tmp_path / "store"
    keystone_store(root)
    args = ["serve", "--root", str(root), "--keystone-url", "http://127.0.0.1:5000/v3"]
    done = _without("keystonemiddleware", tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert "pip install 'gitstore[keystone]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_os_options_without_the_extra_say_what_to_install(tmp_path):
    args = ["--os-auth-url", "http://127.0.0.1:5000/v3", "--os-username", "alice"]
    done = _without("keystoneauth1", tmp_path, *args, "--os-password", "pw", "env", "list")
    assert done.returncode == 2, done.stderr
    assert "the --os-* options need keystoneauth1: pip install 'gitstore[keystone]'" in done.stderr
