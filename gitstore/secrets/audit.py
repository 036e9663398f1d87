"""The reveal audit log: who saw which secrets, when; never the values.

`<root>/secrets-audit.log`, mode 0600, one JSON object per line::

    {"time": "2024-05-01T10:00:00Z", "who": "puppet", "environment": 1,
     "what": "hiera node 3", "commit": "4f1c...", "paths": ["resources.astute.nova.db_password"]}

Lines are appended with one `write` on a file opened `O_APPEND`, so lines of several gunicorn
workers never interleave. Rotate it with `logrotate` (`copytruncate` is not needed: each reveal
opens the file anew).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

AUDIT_FILE = "secrets-audit.log"


class AuditLog:
    """The audit log of a store root."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.path = Path(root) / AUDIT_FILE

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
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "who": who or "(open store: no user)",
            "environment": environment,
            "what": what,
            "commit": commit,
            "paths": list(paths),
        }
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def entries(self) -> list[dict]:
        """Every recorded reveal, oldest first."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
