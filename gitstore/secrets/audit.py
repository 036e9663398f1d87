"""The reveal audit log: who saw which secrets, when; never the values.

`<root>/secrets-audit.log`, mode 0600, one JSON object per line::

    {"time": "2024-05-01T10:00:00Z", "who": "puppet", "environment": 1,
     "what": "hiera node 3", "commit": "4f1c...", "paths": ["resources.astute.nova.db_password"]}

Lines are appended with one `write` on a file opened `O_APPEND`, so lines of several gunicorn
workers never interleave. Rotate it with `logrotate` (`copytruncate` is not needed: each reveal
opens the file anew).

A Puppet master asks for the same revealed node document at every compile: the line's part
after the time is kept per (who, environment, what, commit, paths), so a repeated reveal costs
the write, not the encoding of its paths again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from gitstore import logs

AUDIT_FILE = "secrets-audit.log"
#: Encoded lines kept (their part after the time), cleared when full.
_KEPT_LINES = 256
_STAMP = logs.PerSecond(lambda second: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))


class AuditLog:
    """The audit log of a store root."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.path = Path(root) / AUDIT_FILE
        self._lines: dict[tuple, bytes] = {}

    def record(
        self,
        who: str | None,
        environment: int | None,
        what: str,
        commit: str | None,
        paths: Sequence[str],
    ) -> None:
        """Append one reveal; `who` None is an unauthenticated caller of an open store, and
        `environment` None the catalog (plan parameters)."""
        stamp = _STAMP.text(int(time.time()))
        line = (
            b'{"time": "'
            + stamp.encode()
            + b'", '
            + self._rest(who, environment, what, commit, tuple(paths))
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def _rest(self, who, environment, what, commit, paths: tuple[str, ...]) -> bytes:
        """The line after `{"time": "...", `: what json.dumps writes for the other fields."""
        key = (who, environment, what, commit, paths)
        rest = self._lines.get(key)
        if rest is None:
            entry = {
                "who": who or "(open store: no user)",
                "environment": environment,
                "what": what,
                "commit": commit,
                "paths": list(paths),
            }
            rest = (json.dumps(entry, ensure_ascii=False)[1:] + "\n").encode("utf-8")
            if len(self._lines) >= _KEPT_LINES:
                self._lines.clear()
            self._lines[key] = rest
        return rest

    def entries(self) -> list[dict]:
        """Every recorded reveal, oldest first."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
