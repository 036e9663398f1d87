"""Installation of git hooks into the store's bare repositories.

The hooks themselves live in the top-level `webhooks` package; a repository only gets a small
launcher script that runs them with the interpreter that runs gitstore.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

_PRE_RECEIVE = """#!/bin/sh
# The gitstore push gate (webhooks/pre_receive.py). Written by gitstore when a repository is
# created, by `gitstore init` and at every start of `gitstore serve`; edits are overwritten.
exec {python} -P -m webhooks.pre_receive
"""

_POST_RECEIVE = """#!/bin/sh
# gitstore's post-receive (webhooks/post_receive.py): seals pushed eyaml values. Written by
# gitstore when a repository is created, by `gitstore init` and at every start of
# `gitstore serve`; edits are overwritten.
exec {python} -P -m webhooks.post_receive
"""

#: Hook name -> launcher template; `{python}` becomes the interpreter running gitstore at
#: install time, so the hook runs with the same packages whatever PATH git gives it (and
#: `gitstore serve` rewrites them at start, so an upgraded installation runs its own).
HOOKS: dict[str, str] = {"pre-receive": _PRE_RECEIVE, "post-receive": _POST_RECEIVE}


def install_hooks(repo_path: Path) -> None:
    """Write every launcher of HOOKS into `repo_path/hooks` (idempotent)."""
    hooks_dir = Path(repo_path) / "hooks"
    hooks_dir.mkdir(exist_ok=True)
    for name, body in HOOKS.items():
        # Written aside, then renamed: a push running meanwhile sees the old or the new hook.
        partial = hooks_dir / f".{name}.tmp"
        partial.write_text(body.format(python=shlex.quote(sys.executable)))
        partial.chmod(0o755)
        partial.replace(hooks_dir / name)
