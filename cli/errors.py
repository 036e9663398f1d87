"""How the `gitstore` command fails: one policy for every command, caught once at the root.

- A usage mistake (bad or missing option, conflicting flags) prints ONE line to stderr and exits
  2. Click's default is three lines (usage, hint, error); scripts and people read one line better.
- An expected failure of the store or the server (`GitstoreError`) prints its message (and the
  listed problems of a validation failure, one per line) and exits 1. No traceback.
- A reader that stops reading (`gitstore ... | head -1`) ends the run silently with 141, the
  status a shell gives a writer killed by SIGPIPE: it is no refusal, so not 1 (click's).
- Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

import click

from gitstore.errors import GitstoreError

USAGE_EXIT = 2
FAILURE_EXIT = 1
#: 128 + SIGPIPE. Python ignores SIGPIPE, so the run is not killed by it: it exits with it.
PIPE_CLOSED_EXIT = 141
#: Click >= 8.2 raises this usage error for a group called without a command.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


def usage_line(exc: click.UsageError) -> str:
    """The one line a usage error prints: command path, message, where to look for help."""
    path = exc.ctx.command_path if exc.ctx is not None else "gitstore"
    message = " ".join(exc.format_message().split())
    return f"Error: {path}: {message} (see '{path} --help')"


def failure_lines(exc: GitstoreError) -> list[str]:
    """The message of a store or server error, then each listed problem."""
    lines = [f"Error: {exc.message}"]
    for item in exc.errors:
        detail = item.get("message") if isinstance(item, dict) else None
        where = ":".join(
            str(item[k])
            for k in ("path", "line", "key")
            if isinstance(item, dict) and item.get(k) is not None
        )
        lines.append(f"  {where + ': ' if where else ''}{detail or item}")
    return lines


class RootGroup(click.Group):
    """The top-level group: runs click in non-standalone mode and applies the policy above."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _discard_stdout()
            ctx.exit(PIPE_CLOSED_EXIT)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as exc:
            exc.show()  # a bare group (`gitstore config`) prints its help, not an error line
            sys.exit(USAGE_EXIT)
        except click.UsageError as exc:
            click.echo(usage_line(exc), err=True)
            sys.exit(USAGE_EXIT)
        except GitstoreError as exc:
            for line in failure_lines(exc):
                click.echo(line, err=True)
            sys.exit(FAILURE_EXIT)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(FAILURE_EXIT)
        # In non-standalone mode click returns the code of an explicit `ctx.exit(code)` (and of
        # --help), or the command's return value, which our commands leave as None.
        sys.exit(code if isinstance(code, int) else 0)


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for the closed pipe would otherwise
    fail once more when Python flushes it at exit (a warning on stderr, and exit 120)."""
    with contextlib.suppress(io.UnsupportedOperation, AttributeError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
