"""The post-receive hook: pushed eyaml values become gitstore secrets in the served tree.

git runs it after a push moved refs. When an environment's main (or the staging ref a re-aimed
HTTP push lands from) moved and the store keeps an eyaml key pair, it starts a detached
`python -m webhooks.post_receive --seal GIT_DIR` and returns: the HTTP view holds the
repository's write lock until git's answer is complete, which includes this hook, so the sealing
commit (`EyamlPushes.seal`, which takes that lock) must not be made while it waits.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from gitstore import Store, logs
from gitstore.errors import GitstoreError
from gitstore.layout import parse_repository_name, store_root_of

_log = logging.getLogger("gitstore.gate")
_MOVED = ("refs/heads/main", "refs/gitstore/p")


def _environment(git_dir: Path) -> tuple[Path, int] | None:
    root = store_root_of(git_dir)
    target = parse_repository_name(git_dir.relative_to(root).as_posix())
    return (root, target.env_id) if target.env_id is not None else None


def after_push(lines: list[str], git_dir: Path) -> bool:
    """Start the sealer when main of an environment moved and eyaml keys are kept (True)."""
    if not any(len(line.split()) == 3 and line.split()[2] in _MOVED for line in lines):
        return False
    found = _environment(git_dir)
    if found is None or not (found[0] / "eyaml" / "public_key.pkcs7.pem").exists():
        return False
    subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-P", "-m", "webhooks.post_receive", "--seal", str(git_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return True


def seal(git_dir: Path) -> None:
    """Seal the eyaml values main holds, in one commit (nothing when it holds none)."""
    found = _environment(git_dir)
    if found is None:
        return
    root, env_id = found
    try:
        commit = Store(root).eyaml_pushes.seal(env_id)
    except GitstoreError as exc:
        _log.error("could not seal the eyaml values of environment %s: %s", env_id, exc.message)
        return
    if commit:
        _log.info("sealed pushed eyaml values of environment %s in %s", env_id, commit[:12])


def main() -> int:
    logs.configure_child("gitstore.events")
    if sys.argv[1:2] == ["--seal"]:
        seal(Path(sys.argv[2]))
        return 0
    git_dir = Path(os.environ.get("GIT_DIR", ".")).resolve()
    try:
        after_push(sys.stdin.read().splitlines(), git_dir)
    except (GitstoreError, OSError, ValueError) as exc:  # the push is in: never fail it now
        _log.error("post-receive: %s", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
