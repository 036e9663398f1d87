"""docs/cli.md and the `gitstore` command cannot drift apart, in either direction.

- Every visible command of the click group is shown in a code block of docs/cli.md, as
  `gitstore <group> <command>` (or `gitstore <command>` for a top-level one).
- Every `gitstore ...` in the code blocks and inline code of docs/cli.md names commands that
  exist, with options those commands have (options before the command: the root group's).
- Every in-page link (the contents table) reaches a heading.
- cli/README.md's module table lists exactly the modules of cli/.

Code blocks are read two ways. ```console blocks are shell sessions: only `$ ` lines are
commands (a trailing backslash continues one), and shell operators (`|`, `&&`, `;`, `$(`, `>`)
end a command. Blocks without a language (or `text`) are synopses: an indented line continues
the one above, `[`, `]`, `(`, `)` and `|` only group alternatives, and an all-capital word where a
command belongs (`gitstore COMMAND ...`) is a placeholder.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
CLI_DOC = ROOT / "docs" / "cli.md"
CLI_README = ROOT / "cli" / "README.md"

SHELL_LANGUAGES = {"console", "sh", "shell", "bash"}
SYNOPSIS_LANGUAGES = {"", "text"}
_FENCE = re.compile(r"^```(\S*)\s*$")
_OPTION = re.compile(r"^--?[A-Za-z][\w-]*")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$")
_OPERATOR = set("();<>|&")


def visible_commands(group: click.Group = cli, prefix: str = "gitstore") -> set[str]:
    """`gitstore <group> <command>` of every command that `--help` lists."""
    found = set()
    for name, command in group.commands.items():
        if command.hidden:
            continue
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            found |= visible_commands(command, path)
        else:
            found.add(path)
    return found


def code_lines(markdown: str) -> list[tuple[str, str]]:
    """(mode, line) of every command line in the fenced blocks; mode is "shell" or "synopsis"."""
    lines: list[tuple[str, str]] = []
    language = None  # None: outside a block
    for raw in markdown.splitlines():
        fence = _FENCE.match(raw)
        if fence:
            language = fence.group(1) if language is None else None
            continue
        if language in SHELL_LANGUAGES:
            _add_shell_line(lines, raw, prompt=language == "console")
        elif language in SYNOPSIS_LANGUAGES:
            if raw[:1].isspace() and lines and lines[-1][0] == "synopsis":
                lines[-1] = ("synopsis", f"{lines[-1][1]} {raw.strip()}")
            elif raw.strip():
                lines.append(("synopsis", raw))
    return lines


def _add_shell_line(lines: list[tuple[str, str]], raw: str, prompt: bool) -> None:
    continued = lines and lines[-1][0] == "shell" and lines[-1][1].endswith("\\")
    if continued:
        lines[-1] = ("shell", lines[-1][1][:-1] + " " + raw.strip())
    elif not prompt:
        lines.append(("shell", raw))
    elif raw.startswith("$ "):
        lines.append(("shell", raw[2:]))


def inline_commands(markdown: str) -> list[tuple[str, str]]:
    """Inline code outside the blocks that starts with `gitstore `, read as shell."""
    outside = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    return [("shell", span) for span in re.findall(r"`(gitstore [^`]+)`", outside)]


def invocations(mode: str, line: str) -> list[list[str]]:
    """The token lists that start with `gitstore` in one command line."""
    if mode == "synopsis":
        tokens = shlex.split(re.sub(r"[][()|]", " ", line))
        return [tokens] if tokens[:1] == ["gitstore"] else []
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    for token in lexer:
        if set(token) <= _OPERATOR:
            segments.append([])
        else:
            segments[-1].append(token)
    found = []
    for segment in segments:
        while segment and re.match(r"^[A-Za-z_]\w*=", segment[0]):  # VAR=value gitstore ...
            segment = segment[1:]
        if segment[:1] == ["gitstore"]:
            found.append(segment)
    return found


def check(tokens: list[str]) -> tuple[str, list[str]]:
    """The command path a `gitstore ...` token list names, and what in it does not exist."""
    command: click.Command = cli
    path, problems = ["gitstore"], []
    index = 1
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if _OPTION.match(token):
            takes_value = _check_option(command, token, path, problems)
            if takes_value and isinstance(command, click.Group) and "=" not in token:
                index += 1  # the value of a group option is not a command name
        elif isinstance(command, click.Group):
            if _PLACEHOLDER.match(token):
                break
            if token not in command.commands:
                problems.append(f"{' '.join(path)} has no command {token!r}")
                break
            command = command.commands[token]
            path.append(token)
    return " ".join(path), problems


def _check_option(command: click.Command, token: str, path: list[str], problems: list[str]) -> bool:
    """Record an unknown option; whether the (last) option named takes a value."""
    takes_value = False
    for name in token.split("=", 1)[0].split("/"):  # --reprovision/--no-reprovision
        if name in ("-h", "--help"):
            continue
        option = _option(command, name)
        if option is None:
            problems.append(f"{' '.join(path)} has no option {name}")
        else:
            takes_value = not option.is_flag and not option.count
    return takes_value


def _option(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def doc_invocations(markdown: str, inline: bool) -> list[tuple[str, str, list[str]]]:
    """(line, command path, problems) of every `gitstore` invocation of the document."""
    lines = code_lines(markdown) + (inline_commands(markdown) if inline else [])
    found = []
    for mode, line in lines:
        for tokens in invocations(mode, line):
            found.append((line, *check(tokens)))
    return found


@pytest.fixture(scope="module")
def cli_doc() -> str:
    return CLI_DOC.read_text(encoding="utf-8")


def test_every_visible_command_is_shown_in_a_code_block(cli_doc):
    shown = {path for _line, path, _problems in doc_invocations(cli_doc, inline=False)}
    missing = sorted(visible_commands() - shown)
    assert missing == [], f"commands missing from docs/cli.md code blocks: {missing}"


def test_every_documented_invocation_exists(cli_doc):
    found = doc_invocations(cli_doc, inline=True)
    assert len(found) > 100  # the reader sees the document's examples at all
    bad = [f"{line!r}: {'; '.join(problems)}" for line, _path, problems in found if problems]
    assert bad == [], "docs/cli.md names what the CLI does not have:\n" + "\n".join(bad)


def test_the_reader_catches_drift():
    doc = "\n".join(
        [
            "```console",
            "$ gitstore --root /srv/s graph lst --env 1",
            "$ gitstore config get --env 1 --colour red | jq .",
            "$ T=$(gitstore --nope env list)",
            "```",
            "```",
            "gitstore tag list (--env ID | --cluster ID)",
            "gitstore COMMAND --help",
            "```",
            "Prose: `gitstore secrets rotate --no-old-key`.",
        ]
    )
    problems = [p for _line, _path, found in doc_invocations(doc, inline=True) for p in found]
    assert problems == [
        "gitstore graph has no command 'lst'",
        "gitstore config get has no option --colour",
        "gitstore has no option --nope",
        "gitstore tag list has no option --cluster",
        "gitstore secrets rotate has no option --no-old-key",
    ]
    assert "gitstore graph list" not in {path for _l, path, _p in doc_invocations(doc, False)}


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_in_page_link_reaches_a_heading(cli_doc):
    outside = re.sub(r"^```.*?^```", "", cli_doc, flags=re.S | re.M)
    anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", outside, flags=re.M)}
    links = re.findall(r"\]\(#([^)]+)\)", outside)
    assert len(links) >= 10
    assert sorted(set(links) - anchors) == []


def test_the_cli_readme_lists_every_module():
    rows = [
        line
        for line in CLI_README.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `")
    ]
    listed = {re.match(r"\| `([\w.]+)`", row).group(1) for row in rows}
    modules = {path.name for path in (ROOT / "cli").glob("*.py") if path.name != "__init__.py"}
    assert sorted(modules - listed) == [], "modules missing from cli/README.md"
    assert sorted(listed - modules) == [], "cli/README.md lists modules that do not exist"
