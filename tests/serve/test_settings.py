"""`gitstore.serve.settings.check`: the settings of `gitstore serve` that cannot work are refused
before anything starts, each naming its option; the others come back with what they imply.
(tests/test_serve.py, tests/access/test_serve.py and tests/cluster/test_settings.py run the
command itself.)"""

from __future__ import annotations

import ssl

import pytest

from gitstore import Store, limits
from gitstore.access.keystone import KeystoneSettings
from gitstore.errors import InvalidInput
from gitstore.serve.settings import TIMEOUT_MARGIN, Settings, check


@pytest.fixture
def root(tmp_path):
    return Store.init(tmp_path / "store").root


def _with_access_file(root):
    (root / "access.yaml").write_text("users: {}\n")
    return root


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"keyfile": "key.pem"}, "--certfile and --keyfile go together"),
        ({"ca_certs": "ca.pem"}, "--ca-certs needs --certfile"),
        ({"node_name": "a"}, "need --cluster"),
        ({"cluster": "etcd://127.0.0.1:2379"}, "--cluster needs --node-name and --peers"),
        ({"host": "0.0.0.0"}, "refusing to listen on 0.0.0.0"),
        ({"keystone": KeystoneSettings(auth_url="http://k:5000/v3")}, "--keystone-url needs"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_option(root, options, words):
    with pytest.raises(InvalidInput) as refused:
        check(Settings(root=root, **options))
    assert words in refused.value.message


def test_a_limits_file_that_does_not_load_is_refused(root):
    (root / limits.LIMITS_FILE).write_text("no_such_limit: 1\n")
    with pytest.raises(InvalidInput, match="no_such_limit"):
        check(Settings(root=root))


def test_an_open_store_on_loopback_needs_nothing_more(root):
    checked = check(Settings(root=root))
    assert checked.membership is None and checked.tls == {}
    assert checked.access_required is False
    assert checked.timeout == limits.DEFAULT.graph_execute_seconds + TIMEOUT_MARGIN


def test_open_serves_an_open_store_beyond_loopback_without_requiring_access(root):
    assert check(Settings(root=root, host="0.0.0.0", open_store=True)).access_required is False


def test_access_control_beyond_loopback_stays_required(root):
    checked = check(Settings(root=_with_access_file(root), host="0.0.0.0"))
    assert checked.access_required is True


def test_tls_files_are_named_by_absolute_path(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tls = check(Settings(root=root, certfile="c.pem", keyfile="k.pem", ca_certs="ca.pem")).tls
    assert tls["certfile"] == str(tmp_path / "c.pem") and tls["keyfile"] == str(tmp_path / "k.pem")
    assert tls["ca_certs"] == str(tmp_path / "ca.pem") and tls["cert_reqs"] == ssl.CERT_REQUIRED
