"""The push gate's rule list is explicit and whole, whatever was imported first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def _rule_functions() -> set[str]:
    """Every public function of the library whose one parameter is a `TreeCheck`: a rule."""
    found = set()
    for path in (PROJECT / "gitstore").rglob("*.py"):
        module = ".".join(path.relative_to(PROJECT).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            params = node.args.args
            annotation = params[0].annotation if len(params) == 1 else None
            if isinstance(annotation, ast.Name) and annotation.id == "TreeCheck":
                found.add(f"{module}.{node.name}")
    return found


def _listed_in_a_fresh_interpreter() -> dict[str, list[str]]:
    """RULES as seen by a process that imports nothing but the gate's list."""
    script = (
        "import json, gitstore.gitops.rules as r\n"
        "print(json.dumps({k: [f'{f.__module__}.{f.__name__}' for f in v]"
        " for k, v in r.RULES.items()}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=PROJECT
    )
    import json

    return json.loads(out.stdout)


def test_every_rule_of_the_library_is_in_the_list():
    listed = _listed_in_a_fresh_interpreter()
    everywhere = {name for names in listed.values() for name in names}
    assert _rule_functions() - everywhere == set()


def test_the_list_is_complete_without_importing_the_store():
    listed = _listed_in_a_fresh_interpreter()
    assert len(listed["environment"]) >= 9 and len(listed["catalog"]) >= 5
    assert "gitstore.deployment.graphs.cluster_graphs" in listed["environment"]
    assert "gitstore.plans.gate.no_plain_hidden_values" in listed["catalog"]
