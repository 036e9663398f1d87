"""Installation of git hooks into the store's bare repositories.

The hooks themselves live in the top-level `webhooks` package; a repository only gets a small
launcher script that runs them with the interpreter that runs gitstore.
"""

from __future__ import annotations

from pathlib import Path

#: Hook name -> launcher body. Filled by the GitOps gate (pre-receive); empty means none.
HOOKS: dict[str, str] = {}


def install_hooks(repo_path: Path) -> None:
    """Write every launcher of HOOKS into `repo_path/hooks` (idempotent)."""
    hooks_dir = Path(repo_path) / "hooks"
    hooks_dir.mkdir(exist_ok=True)
    for name, body in HOOKS.items():
        target = hooks_dir / name
        target.write_text(body)
        target.chmod(0o755)
