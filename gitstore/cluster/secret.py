"""The cluster secret: what makes a caller a member (docs/ha.md, docs/security.md).

Every member holds the same secret in a file only its user can read (`<root>/cluster.key` by
default, made by `gitstore cluster key`). A member's call to a peer (`/cluster/v1/*`, and the
`/git/` fetches that copy commits) carries `X-Gitstore-Member: <unix time>.<hmac>`, the
HMAC-SHA256 of the time under the secret. The secret itself never crosses the wire, and a header
seen on the wire is worth at most `MAX_SKEW_SECONDS` either side of its time (members keep their
clocks in step with NTP, as etcd's members do).

Every call also says which version of the members' protocol it speaks (`X-Gitstore-Protocol`),
so that members of adjacent gitstore versions can run side by side during a rolling upgrade: a
call in a protocol the receiver does not speak is refused with a message naming both (a 409),
never misread. A call without the header is of protocol 1 (members made before the header).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import time
from pathlib import Path

from gitstore.errors import Conflict, InvalidInput

#: The secret's file under the store root, unless `gitstore serve --cluster-secret-file`.
KEY_FILE = "cluster.key"
HEADER = "X-Gitstore-Member"
PROTOCOL_HEADER = "X-Gitstore-Protocol"
#: The protocol this member's calls speak, and those it answers.
PROTOCOL = 1
SPOKEN = frozenset({1})
#: How far a header's time may be from the receiver's clock.
MAX_SKEW_SECONDS = 300
#: Shorter secrets are refused: 32 random bytes as hex is what `gitstore cluster key` writes.
MIN_LENGTH = 32
_CONTEXT = b"gitstore-member-v1:"


class ClusterSecret:
    """Signs a member's calls and checks the calls it receives."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < MIN_LENGTH:
            raise InvalidInput(f"the cluster secret is shorter than {MIN_LENGTH} characters")
        self._secret = secret

    @classmethod
    def load(cls, path: str | Path) -> ClusterSecret:
        """The secret in `path`; InvalidInput when it is missing, short, or readable by others."""
        path = Path(path)
        try:
            mode = path.stat().st_mode
            text = path.read_bytes().strip()
        except OSError as exc:
            raise InvalidInput(
                f"no cluster secret at {path} ({exc.strerror}): make one with "
                "`gitstore cluster key` and install the same file on every member"
            ) from exc
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise InvalidInput(f"the cluster secret {path} is readable by others: chmod 600 it")
        return cls(text)

    def header_value(self, now: float | None = None) -> str:
        stamp = str(int(time.time() if now is None else now))
        return f"{stamp}.{self._mac(stamp)}"

    def headers(self) -> dict[str, str]:
        return {HEADER: self.header_value(), PROTOCOL_HEADER: str(PROTOCOL)}

    def git_env(self) -> dict[str, str]:
        """Environment that makes a `git fetch` send the headers (in the environment, not on
        the command line, which every local user can read in /proc)."""
        return {
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"{HEADER}: {self.header_value()}",
            "GIT_CONFIG_KEY_1": "http.extraHeader",
            "GIT_CONFIG_VALUE_1": f"{PROTOCOL_HEADER}: {PROTOCOL}",
        }

    def verify(self, value: str | None, now: float | None = None) -> bool:
        """Whether `value` is a header this secret signed within the allowed skew."""
        stamp, dot, mac = (value or "").strip().partition(".")
        if not dot or not stamp.isdigit() or len(stamp) > 12:
            return False
        now = time.time() if now is None else now
        if abs(now - int(stamp)) > MAX_SKEW_SECONDS:
            return False
        return hmac.compare_digest(mac.encode(), self._mac(stamp).encode())

    def _mac(self, stamp: str) -> str:
        return hmac.new(self._secret, _CONTEXT + stamp.encode(), hashlib.sha256).hexdigest()


def check_protocol(value: str | None) -> None:
    """Refuse a member's call in a protocol this member does not speak (None: protocol 1)."""
    text = (value or "1").strip()
    if text.isdigit() and len(text) < 6 and int(text) in SPOKEN:
        return
    spoken = ", ".join(map(str, sorted(SPOKEN)))
    raise Conflict(
        f"the calling member speaks cluster protocol {text[:20]!r}, this member speaks "
        f"{spoken}: run adjacent gitstore versions only during a rolling upgrade (docs/ha.md)"
    )


def create(path: str | Path) -> Path:
    """Write a new random secret to `path` (mode 0600); Conflict when one is there."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise Conflict(f"{path} exists: copy that one to every member instead") from exc
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
    return path
