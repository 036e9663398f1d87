"""Health, readiness and the metrics endpoint on the real app (in process): access rules,
thresholds, and what readiness names."""

from __future__ import annotations

import pytest

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app
from gitstore.ops.health import parse_size
from gitstore.secrets.keyring import Keyring

ADMIN = ("boss", "Boss-pw-1234")
READER = ("watcher", "Watcher-pw-1234")


@pytest.fixture
def guarded(store):
    access = AccessFile(store.root)
    access.add_user(ADMIN[0], parse_grants(["admin"]), ADMIN[1])
    access.add_user(READER[0], parse_grants(["reader"]), READER[1])
    return store


def _client(store, **config):
    return create_app({"TESTING": True, **config}, store=store).test_client()


def test_probes_and_metrics_need_no_credentials_by_default(guarded):
    client = _client(guarded, GITSTORE_MIN_FREE_DISK=1)
    assert client.get("/api/v1/config/environments").status_code == 401
    for path in ("/healthz", "/readyz", "/metrics"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["Cache-Control"] == "no-store"


def test_metrics_role_makes_metrics_require_it(guarded):
    client = _client(guarded, GITSTORE_METRICS_ROLE="admin")
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", auth=READER).status_code == 403
    answer = client.get("/metrics", auth=ADMIN)
    assert answer.status_code == 200 and b"gitstore_http_requests_total" in answer.data
    assert client.get("/healthz").status_code == 200  # probes stay open


def test_readiness_names_low_disk_and_a_missing_keyring(store):
    client = _client(store, GITSTORE_MIN_FREE_DISK=2**62)
    answer = client.get("/readyz")
    assert answer.status_code == 503
    failed = {c["name"]: c for c in answer.json["checks"] if not c["ok"]}
    assert list(failed) == ["disk"] and "below the minimum" in failed["disk"]["message"]
    Keyring.of_root(store.root).path.unlink()
    answer = _client(store, GITSTORE_MIN_FREE_DISK=1).get("/readyz")
    assert answer.status_code == 503
    assert [c["name"] for c in answer.json["checks"] if not c["ok"]] == ["keyring"]


def test_readiness_names_a_ref_that_is_not_a_commit_id(fuel_store):
    client = _client(fuel_store, GITSTORE_MIN_FREE_DISK=1)
    ref = fuel_store.root / "environments" / "1.git" / "refs" / "heads" / "main"
    ref.write_text("garbage\n")
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert [c["name"] for c in answer.json["checks"] if not c["ok"]] == [
        "repository environments/1.git"
    ]


@pytest.mark.parametrize(
    "text, size",
    [("1GiB", 1024**3), ("500M", 500_000_000), ("1048576", 1048576), ("0", 0), ("1.5k", 1500)],
)
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1G", "5 parsecs", "G"])
def test_bad_sizes(text):
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)
