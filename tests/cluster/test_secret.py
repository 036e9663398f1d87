"""The cluster secret (gitstore/cluster/secret.py): `gitstore cluster key` makes it, `gitstore
serve --cluster` refuses to start without a usable one, and a signature is only as good as the
secret and the time it was made with."""

from __future__ import annotations

import stat
import subprocess

import pytest
from live_server import GITSTORE, isolated_env

from gitstore.cluster.secret import MAX_SKEW_SECONDS, ClusterSecret
from gitstore.errors import InvalidInput

PEERS = "a=http://127.0.0.1:8001,b=http://127.0.0.1:8002"
CLUSTER = ["--cluster", "etcd://127.0.0.1:2379", "--node-name", "a", "--peers", PEERS]


def gitstore(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(GITSTORE), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )


def test_cluster_key_writes_a_private_secret_once(tmp_path):
    made = gitstore(tmp_path, "cluster", "key", "--root", str(tmp_path))
    assert made.returncode == 0, made.stderr
    key = tmp_path / "cluster.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    secret = ClusterSecret.load(key)
    assert secret.verify(secret.header_value())
    again = gitstore(tmp_path, "cluster", "key", "--root", str(tmp_path))
    assert again.returncode == 1 and "exists" in again.stderr
    assert ClusterSecret.load(key).verify(secret.header_value())  # not replaced


@pytest.mark.parametrize(
    ("content", "mode", "words"),
    [
        (None, 0o600, "no cluster secret"),
        ("short\n", 0o600, "shorter than"),
        ("a" * 64 + "\n", 0o644, "chmod 600"),
    ],
)
def test_serve_refuses_a_missing_or_unsafe_secret(tmp_path, content, mode, words):
    key = tmp_path / "elsewhere.key"
    if content is not None:
        key.write_text(content)
        key.chmod(mode)
    flags = [*CLUSTER, "--cluster-secret-file", str(key)]
    result = gitstore(tmp_path, "serve", "--root", str(tmp_path), *flags)
    assert result.returncode == 2, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr


def test_a_signature_needs_the_same_secret_and_a_recent_time():
    secret, other = ClusterSecret(b"k" * 64), ClusterSecret(b"o" * 64)
    now = 1_800_000_000
    assert secret.verify(secret.header_value(now), now=now)
    assert secret.verify(secret.header_value(now - MAX_SKEW_SECONDS), now=now)
    assert not secret.verify(secret.header_value(now - MAX_SKEW_SECONDS - 1), now=now)
    assert not secret.verify(other.header_value(now), now=now)
    assert not secret.verify(None, now=now)
    assert not secret.verify("", now=now)
    assert not secret.verify(f"{now}.", now=now)
    stamp, _, mac = secret.header_value(now).partition(".")
    assert not secret.verify(f"{int(stamp) + 1}.{mac}", now=now)  # the time is signed too
    with pytest.raises(InvalidInput, match="shorter"):
        ClusterSecret(b"short")
