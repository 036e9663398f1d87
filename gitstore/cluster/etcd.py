"""The few etcd operations a cluster member needs, over etcd's JSON gateway (`/v3/...`).

Built on `etcd3gw` (OpenStack's gateway client: leases, transactions, watches; no protobuf).
`tooz` was not used: its leader election hides the lease and the leader key's revision, and
every commit's transaction must name them to be fenced (docs/ha.md). Every failure of etcd
(unreachable, timed out, refused) becomes `Unavailable`, so no etcd3gw or requests exception
leaves this module.

etcd3gw is imported when a client is made, not with this module: it brings `requests` and
`ssl`, slow to import, which a single node, the CLI and gunicorn's arbiter never need.
"""

from __future__ import annotations

import base64
import functools
import warnings
from dataclasses import dataclass
from typing import Any

from gitstore.errors import Unavailable

#: etcd 3.4's gateway path (etcd3gw would otherwise ask /version first).
API_PATH = "/v3/"


@dataclass(frozen=True)
class Entry:
    """One key of etcd: its value and the revisions that fence a transaction on it."""

    value: str
    create_revision: int
    mod_revision: int
    lease: int


@dataclass(frozen=True)
class Compare:
    """One condition of a transaction: `target` (VALUE, CREATE, MOD, VERSION) EQUAL to."""

    key: str
    target: str
    expected: str | int

    def as_json(self) -> dict[str, Any]:
        field = {"VALUE": "value", "CREATE": "create_revision", "MOD": "mod_revision"}
        name = field.get(self.target, "version")
        expected = _b64(self.expected) if self.target == "VALUE" else str(self.expected)
        return {"key": _b64(self.key), "target": self.target, "result": "EQUAL", name: expected}


def _b64(text: str | int) -> str:
    return base64.b64encode(str(text).encode()).decode()


def _text(data: str) -> str:
    return base64.b64decode(data).decode()


def _translated(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            import requests
            from etcd3gw import exceptions

            if isinstance(exc, exceptions.Etcd3Exception | requests.RequestException | OSError):
                raise Unavailable(f"etcd at {self.address} did not answer ({exc})") from exc
            raise

    return wrapper


class Etcd:
    """A client of one etcd endpoint, each call bounded by `timeout` seconds."""

    def __init__(self, host: str, port: int, timeout: float = 2.0) -> None:
        with warnings.catch_warnings():  # etcd3gw's futurist tries `import eventlet`: it warns
            warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
            import etcd3gw

        self.address = f"{host}:{port}"
        self._etcd3gw = etcd3gw
        self._client = etcd3gw.Etcd3Client(host=host, port=port, timeout=timeout, api_path=API_PATH)

    @_translated
    def get(self, key: str, *, prefix: bool = False) -> tuple[int, dict[str, Entry]]:
        """(the store's revision, {key: Entry}) of `key`, or of every key below it."""
        request: dict[str, Any] = {"key": _b64(key)}
        if prefix:
            request["range_end"] = _b64(key[:-1] + chr(ord(key[-1]) + 1))
        answer = self._client.post(self._client.get_url("/kv/range"), json=request)
        entries = {_text(kv["key"]): _entry(kv) for kv in answer.get("kvs", [])}
        return int(answer["header"]["revision"]), entries

    @_translated
    def transaction(self, compare: list[Compare], puts: dict[str, str], lease: int = 0) -> bool:
        """Put every `puts` key if every `compare` holds, atomically; whether it did."""
        request = {
            "compare": [c.as_json() for c in compare],
            "success": [
                {"request_put": {"key": _b64(k), "value": _b64(v), "lease": str(lease)}}
                for k, v in puts.items()
            ],
        }
        answer = self._client.post(self._client.get_url("/kv/txn"), json=request)
        return bool(answer.get("succeeded"))

    @_translated
    def grant(self, ttl: int) -> int:
        """A new lease of `ttl` seconds: its id."""
        return self._client.lease(ttl).id

    @_translated
    def keep_alive(self, lease: int) -> bool:
        """Renew `lease`; False when it has expired already."""
        return self._etcd3gw.Lease(lease, client=self._client).refresh() > 0

    @_translated
    def revoke(self, lease: int) -> None:
        self._etcd3gw.Lease(lease, client=self._client).revoke()

    @_translated
    def wait_for_change(self, prefix: str, after_revision: int, timeout: float) -> None:
        """Return when a key below `prefix` changed after `after_revision`, or after `timeout`
        seconds (a watch: no polling of the keys)."""
        try:
            self._client.watch_prefix_once(
                prefix, timeout=timeout, start_revision=after_revision + 1
            )
        except self._etcd3gw.exceptions.WatchTimedOut:
            return


def _entry(kv: dict[str, Any]) -> Entry:
    return Entry(
        value=_text(kv.get("value", "")),
        create_revision=int(kv.get("create_revision", 0)),
        mod_revision=int(kv.get("mod_revision", 0)),
        lease=int(kv.get("lease", 0)),
    )
