"""`gitstore serve --cluster ...`: bad flags are usage errors (exit 2) naming the flag, found
before gunicorn starts; the settings they make."""

from __future__ import annotations

import subprocess

import pytest
from live_server import GITSTORE, isolated_env

from gitstore.cluster.settings import settings as cluster_settings
from gitstore.errors import InvalidInput

PEERS = "a=http://127.0.0.1:8001,b=http://127.0.0.1:8002,c=http://127.0.0.1:8003"


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--cluster", "http://127.0.0.1:2379", "--node-name", "a", "--peers", PEERS], "--cluster"),
        (["--cluster", "etcd://127.0.0.1:2379"], "--node-name and --peers"),
        (["--cluster", "", "--node-name", "a", "--peers", PEERS], "--cluster ''"),
        (["--cluster", "etcd://h:0x", "--node-name", "a", "--peers", PEERS], "--cluster"),
        (["--cluster", "etcd://:2379", "--node-name", "a", "--peers", PEERS], "--cluster"),
        (["--cluster", "etcd://h:2379", "--node-name", "", "--peers", PEERS], "--node-name"),
        (["--cluster", "etcd://h:2379", "--node-name", "a", "--peers", ""], "--peers"),
        (["--node-name", "a"], "need --cluster"),
        (["--cluster", "etcd://h:2379", "--node-name", "d", "--peers", PEERS], "this node"),
        (["--cluster", "etcd://h:2379", "--node-name", "a", "--peers", "a=ftp://x"], "--peers"),
        (
            [
                "--cluster",
                "etcd://h:2379",
                "--node-name",
                "a",
                "--peers",
                PEERS,
                "--min-replicas",
                "3",
            ],
            "--min-replicas",
        ),
    ],
)
def test_bad_cluster_flags_are_usage_errors(tmp_path, flags, words):
    result = subprocess.run(
        [str(GITSTORE), "serve", "--root", str(tmp_path), *flags],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.stderr


def test_the_default_is_one_replica_and_none_for_a_cluster_of_one():
    three = cluster_settings("etcd://127.0.0.1:2379", "b", PEERS)
    assert (three.etcd_host, three.etcd_port, three.min_replicas) == ("127.0.0.1", 2379, 1)
    assert three.url == "http://127.0.0.1:8002" and set(three.others) == {"a", "c"}
    alone = cluster_settings("etcd://127.0.0.1:2379", "a", "a=http://127.0.0.1:8001")
    assert alone.min_replicas == 0


def test_a_peer_named_twice_is_refused():
    with pytest.raises(InvalidInput, match="twice"):
        cluster_settings("etcd://h:1", "a", "a=http://x:1,a=http://y:1")
