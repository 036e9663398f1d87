"""How the suite and the benches start Debian's Chromium through Playwright: never a
downloaded browser, and flags that keep it off the network this machine cannot reach
(/work/shared/FACTS.md)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def record_errors(page) -> list[str]:
    """The script errors and console errors `page` logs from now on (a list that grows)."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems
