"""How a node joins a cluster: `gitstore serve --cluster etcd://HOST:PORT --node-name N
--peers NAME=URL,...` (docs/ha.md), parsed into one immutable value."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from gitstore.errors import InvalidInput

#: etcd keys of the cluster live below this prefix (one etcd may serve several clusters).
DEFAULT_PREFIX = "/gitstore/"
#: The leader lease's time to live: a dead primary is replaced about this long after it died.
LEASE_TTL_SECONDS = 2
#: Every call of a member to a peer or to etcd ends within this share of the lease's TTL, so
#: that a hung peer never holds a takeover (or a renewal) past the lease.
CALL_SHARE_OF_TTL = 0.75
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


@dataclass(frozen=True)
class ClusterSettings:
    """One member's view of its cluster: etcd, its own name, every member's base URL."""

    etcd_host: str
    etcd_port: int
    node: str
    peers: dict[str, str] = field(default_factory=dict)
    min_replicas: int = 1
    prefix: str = DEFAULT_PREFIX
    lease_ttl: int = LEASE_TTL_SECONDS
    #: The file of the cluster secret (secret.py), as an absolute path.
    secret_file: str = ""

    @property
    def url(self) -> str:
        """This node's own base URL, as its peers reach it."""
        return self.peers[self.node]

    @property
    def call_timeout(self) -> float:
        """The deadline of one call to a peer or to etcd (HTTP, `git fetch`), in seconds."""
        return CALL_SHARE_OF_TTL * self.lease_ttl

    @property
    def others(self) -> dict[str, str]:
        return {name: url for name, url in self.peers.items() if name != self.node}

    @property
    def leader_key(self) -> str:
        return self.prefix + "leader"

    @property
    def repositories_prefix(self) -> str:
        return self.prefix + "repositories/"

    def key_of(self, repository: str) -> str:
        """The etcd key holding the commit of `main` of a repository (`environments/1.git`)."""
        return self.repositories_prefix + repository

    def as_dict(self) -> dict:
        return {
            "etcd": f"etcd://{self.etcd_host}:{self.etcd_port}",
            "node": self.node,
            "peers": dict(self.peers),
            "min_replicas": self.min_replicas,
            "prefix": self.prefix,
            "lease_ttl": self.lease_ttl,
            "secret_file": self.secret_file,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ClusterSettings:
        host, port = parse_etcd_url(data["etcd"])
        return cls(
            host,
            port,
            data["node"],
            dict(data["peers"]),
            int(data["min_replicas"]),
            data.get("prefix", DEFAULT_PREFIX),
            int(data.get("lease_ttl", LEASE_TTL_SECONDS)),
            data.get("secret_file", ""),
        )


def parse_etcd_url(text: str) -> tuple[str, int]:
    """`etcd://HOST:PORT` -> (HOST, PORT); InvalidInput naming the flag otherwise."""
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "etcd" or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise InvalidInput(f"--cluster {text!r} is not etcd://HOST:PORT", key="cluster")
    return parts.hostname, port


def parse_peers(text: str) -> dict[str, str]:
    """`a=http://h1:8000,b=http://h2:8000` -> {"a": "http://h1:8000", ...}."""
    peers: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, url = item.partition("=")
        if not sep or not _NODE_NAME.match(name) or urlsplit(url).scheme not in ("http", "https"):
            raise InvalidInput(
                f"--peers entry {item!r} is not NAME=http(s)://HOST:PORT", key="peers"
            )
        if name in peers:
            raise InvalidInput(f"--peers names {name!r} twice", key="peers")
        peers[name] = url.rstrip("/")
    return peers


def settings(
    cluster: str,
    node: str,
    peers: str,
    min_replicas: int | None = None,
    secret_file: str = "",
) -> ClusterSettings:
    """The settings the flags of `gitstore serve` name, checked together."""
    host, port = parse_etcd_url(cluster)
    members = parse_peers(peers)
    if not _NODE_NAME.match(node or ""):
        raise InvalidInput(f"--node-name {node!r} is not a node name", key="node-name")
    if node not in members:
        raise InvalidInput(
            f"--peers must name every member, this node ({node!r}) included", key="peers"
        )
    others = len(members) - 1
    wanted = min(1, others) if min_replicas is None else min_replicas
    if not 0 <= wanted <= others:
        raise InvalidInput(
            f"--min-replicas {wanted} is more than the {others} other members", key="min-replicas"
        )
    return ClusterSettings(host, port, node, members, wanted, secret_file=secret_file)
