"""Assertions and paths shared by the CLI tests (imported as a top-level module by pytest)."""

from __future__ import annotations

from pathlib import Path

from click.testing import Result

PROJECT = Path(__file__).resolve().parents[2]
SAMPLE_NODES = PROJECT / "sample_repo" / "environments" / "1" / "nodes"


def hiera_source(node: str) -> Path:
    """A node's /etc/hiera as the sample deployment has it (real Fuel astute data)."""
    return SAMPLE_NODES / node / "values"


def assert_usage_error(result: Result, fragment: str) -> None:
    """Exit 2 and exactly one line on stderr that names the problem."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert fragment in lines[0], lines[0]
    assert result.stdout == ""


def assert_failure(result: Result, fragment: str) -> None:
    """Exit 1 with the store's or server's message on stderr, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    assert fragment in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
