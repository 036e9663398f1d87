"""The pre-receive hook: the push gate.

git runs it (through the launcher gitstore writes into every repository's `hooks/`) before any
ref of a push moves, with one `<old> <new> <ref>` line per ref on stdin. A non-zero exit refuses
the whole push; what this prints on stderr reaches the pusher as `remote:` lines. The rules are
`GitOps.check_push`; this module only speaks the hook protocol.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TextIO

from gitstore import Store, limits, logs, metrics
from gitstore.errors import GitstoreError
from gitstore.gitops.pushes import staged_push
from gitstore.layout import store_root_of
from gitstore.validation import format_problem

_log = logging.getLogger("gitstore.gate")
#: Problems listed per refused ref: one broken catalog entry can refuse a push with tens of
#: thousands of problems (megabytes of `remote:` lines); the first ones say what to fix,
#: `gitstore validate` lists them all.
SHOWN_PROBLEMS = 50


def gate(lines: list[str], git_dir: Path) -> list[str]:
    """The refusal messages for a push (empty: accept it)."""
    root = store_root_of(git_dir)
    limits.configure(root)
    try:
        store = Store(root)
        store.format.check_writable()  # a store of an older format is read-only
    except GitstoreError as exc:
        return [f"gitstore: {exc.message}"]
    name = git_dir.relative_to(root).as_posix()
    messages: list[str] = []
    staged = staged_push(os.environ)
    _recover(store, git_dir, [line.split()[2] for line in lines if line.strip()])
    for line in lines:
        if not line.strip():
            continue
        old, new, ref = line.split()
        try:
            store.gitops.check_push(git_dir, old, new, ref, staged=staged)
        except GitstoreError as exc:
            metrics.gate_refused(name, metrics.refusal_rule(exc), exc.message)
            if not exc.errors:
                messages.append(f"gitstore: {exc.message}")
                continue
            count = len(exc.errors)
            messages.append(
                f"gitstore: {name}: push to {ref} refused, commit {new[:12]} "
                f"has {count} problem{'s' if count > 1 else ''}:"
            )
            messages.extend(_problem_lines(exc.errors))
    if not messages:
        updates = [line.split() for line in lines if line.strip()]  # git's `old new ref` lines
        store.gitops.accepted_push(git_dir, [(old, new, ref) for old, new, ref in updates])
    return messages


def _problem_lines(problems: list[dict]) -> list[str]:
    """The `remote:` lines of a refusal's problems, the first `SHOWN_PROBLEMS` of them."""
    lines = [f"gitstore:   {format_problem(p)}" for p in problems[:SHOWN_PROBLEMS]]
    hidden = len(problems) - SHOWN_PROBLEMS
    if hidden > 0:
        lines.append(f"gitstore:   ... and {hidden} more (`gitstore validate` lists them all)")
    return lines


def _recover(store: Store, git_dir: Path, pushed_refs: list[str]) -> None:
    """Clear what killed pushes left (stale ref locks, quarantines): best effort, never a
    reason to refuse this push; what is removed is logged, not told to the pusher."""
    try:
        for path in store.gitops.recover_from_killed_pushes(git_dir, pushed_refs):
            _log.warning("removed %s, left by a killed push", path)
    except (GitstoreError, OSError) as exc:
        _log.warning("could not clear what killed pushes left in %s: %s", git_dir, exc)


def main(stdin: TextIO = sys.stdin, stderr: TextIO = sys.stderr) -> int:
    # Our stderr goes to the pusher: commit and refusal lines go to the server's log instead
    logs.configure_child("gitstore.events")
    git_dir = Path(os.environ.get("GIT_DIR", ".")).resolve()
    # The hook has no log of its own, and stderr is the pusher's: only refusals go there.
    logging.getLogger("gitstore").addHandler(logging.NullHandler())
    try:
        messages = gate(stdin.read().splitlines(), git_dir)
    except GitstoreError as exc:
        messages = [f"gitstore: push refused: {exc.message}"]
    except Exception as exc:  # noqa: BLE001 - fail closed: an unchecked push is never served
        messages = [
            f"gitstore: push refused: the gate failed ({type(exc).__name__}: {exc}); "
            "this is a bug, please report it"
        ]
    for message in messages:
        print(message, file=stderr)
    return 1 if messages else 0


if __name__ == "__main__":
    sys.exit(main())
