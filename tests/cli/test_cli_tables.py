"""Tables fit the terminal: long cells wrap or are cut; json and yaml stay complete."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import termios

import pytest
from click.testing import CliRunner
from live_server import GITSTORE, isolated_env

from cli.main import cli
from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The sample store: its first commit touches 17 files: a history row of ~1,000 chars."""
    root = tmp_path_factory.mktemp("tables") / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    return root


def run(root, *args: str, columns: str | None = None):
    env = {"COLUMNS": columns} if columns else {"COLUMNS": ""}
    result = CliRunner().invoke(cli, ["--root", str(root), *args], env=env)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize(
    "command",
    [["config", "history", "-e", "1"], ["node", "list", "-e", "1"], ["tag", "list", "-e", "1"]],
)
def test_every_line_fits_the_width(sample, command, columns):
    lines = run(sample, *command, columns=columns).splitlines()
    assert lines[1].startswith("-")  # one style: header, rule, rows
    assert max(len(line) for line in lines) <= int(columns), max(lines, key=len)


def test_json_stays_complete(sample):
    history = json.loads(run(sample, "config", "history", "-e", "1", "-f", "json", columns="80"))
    first = history["entries"][-1]
    assert len(json.dumps(first)) > 900  # the row a table has to cut


def test_without_a_terminal_a_table_is_not_cut(sample):
    lines = run(sample, "config", "history", "-e", "1").splitlines()
    assert max(len(line) for line in lines) > 900


def test_a_real_terminal_s_width_is_used(sample, tmp_path):
    terminal, child_end = pty.openpty()
    fcntl.ioctl(child_end, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 90, 0, 0))
    env = isolated_env(tmp_path)
    env.pop("COLUMNS", None)
    process = subprocess.Popen(
        [str(GITSTORE), "--root", str(sample), "config", "history", "-e", "1"],
        stdin=subprocess.DEVNULL,
        stdout=child_end,
        stderr=child_end,
        env=env,
    )
    os.close(child_end)
    out = b""
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # the process ended and closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(terminal)
    assert process.wait(timeout=60) == 0
    lines = out.decode().splitlines()
    assert len(lines) > 3 and max(len(line) for line in lines) <= 90
