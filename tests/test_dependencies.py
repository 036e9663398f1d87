"""`gitstore serve` runs on the runtime dependencies alone: `make demo` installs only those,
and the test extra brings more, which hid a gap once (gunicorn 27's gevent worker imports
`packaging` without declaring it, so a fresh `make demo` failed while every test passed).

The check imports what serving imports in a fresh interpreter that refuses every module of a
distribution outside the runtime dependencies' closure, as a runtime-only install would:
optional imports (`try: import wcwidth`) fall back as they do there, required ones fail.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from importlib import metadata

from packaging.markers import Marker  # the test extra has it (pytest depends on it)

#: What serving imports: the CLI, gunicorn's worker classes and the app with every blueprint.
SERVE = (
    "import cli.main, gitstore.serve.workers, gunicorn.app.base, gitstore.api;"
    " gitstore.api.create_app"
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
_GUARD = textwrap.dedent(
    """
    import importlib.abc, importlib.metadata, json, sys
    allowed = set(json.loads(sys.argv[1]))
    owners = importlib.metadata.packages_distributions()
    canonical = lambda name: name.lower().replace("_", "-").replace(".", "-")

    class RuntimeOnly(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            dists = {canonical(d) for d in owners.get(top, [])}
            if dists and not dists & allowed:
                raise ModuleNotFoundError(f"No module named {name!r} (not a runtime dependency)")
            return None

    sys.meta_path.insert(0, RuntimeOnly())
    """
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_closure() -> set[str]:
    """gitstore's runtime requirements and theirs, as installed here (requirements of extras
    and those whose markers do not apply left out)."""
    seen: set[str] = set()
    pending = ["gitstore"]
    while pending:
        name = _canonical(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        for requirement in metadata.requires(name) or []:
            marker = requirement.partition(";")[2].strip()
            if marker and not Marker(marker).evaluate({"extra": ""}):
                continue
            pending.append(_NAME.match(requirement).group(0))
    return seen


def test_serving_needs_only_the_runtime_dependencies():
    script = _GUARD + SERVE
    allowed = json.dumps(sorted(_runtime_closure()))
    result = subprocess.run(
        [sys.executable, "-c", script, allowed], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_guard_refuses_what_is_not_a_runtime_dependency():
    """The check can fail: pytest is installed here, but only by the test extra."""
    script = _GUARD + "import pytest"
    allowed = json.dumps(sorted(_runtime_closure()))
    result = subprocess.run([sys.executable, "-c", script, allowed], capture_output=True, text=True)
    assert "not a runtime dependency" in result.stderr
