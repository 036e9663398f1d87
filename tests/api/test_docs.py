"""docs/api.md stays true: its curl examples run, in order, against the sample store.

Each `curl` of a `sh` block becomes a request to the real app (test client); none may fail
with a 5xx, every answer shown in a `# ...` comment under it must be what the app answers, and
every ConfigDB route is shown with at least one example.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from gitstore import Store
from gitstore.api import create_app
from gitstore.configdb.importer import SAMPLE_DIR

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BASE = "/api/v1/config"
_RULE = re.compile(r"<(?:[a-z]+:)?[a-z_]+>")
CONFIGDB_BLUEPRINTS = ("catalog", "environments", "values")


def _examples() -> list[tuple[str, str, str | None, str, str | None]]:
    """(method, url, body, content type, expected answer or None) of every curl in the doc."""
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
    found = []
    for block in blocks:
        lines = block.replace("\\\n", " ").splitlines()
        for index, line in enumerate(lines):
            if line.strip().startswith("curl "):
                expected = _comment_after(lines, index)
                found.append((*_parse_curl(line.split(" # ")[0]), expected))
    return found


def _comment_after(lines: list[str], index: int) -> str | None:
    after = lines[index + 1].strip() if index + 1 < len(lines) else ""
    return after[1:].strip() if after.startswith("# ") else None


def _parse_curl(line: str) -> tuple[str, str, str | None, str]:
    words = shlex.split(line.replace("$BASE", BASE).replace('"$JSON"', "JSON"))
    method, body, url, content_type = "GET", None, None, "application/json"
    for index, word in enumerate(words):
        if word == "-X":
            method = words[index + 1]
        elif word == "-d":
            body = words[index + 1]
        elif word == "-H" and words[index + 1].lower().startswith("content-type:"):
            content_type = words[index + 1].split(":", 1)[1].strip()
        elif word.startswith("/") and words[index - 1] not in ("-X", "-d", "-H"):
            url = word
    if body is not None and method == "GET":
        method = "POST"
    return method, url, body, content_type


def _matches(expected: str, answer) -> bool:
    if "..." in expected:
        return True  # an abridged answer: only shown for orientation
    return json.loads(expected) == answer


@pytest.fixture
def sample_client(tmp_path):
    store = Store.init(tmp_path / "store")
    store.importer.load_tree(SAMPLE_DIR)
    return create_app({"TESTING": True}, store=store).test_client()


def test_every_example_runs_and_shows_the_real_answer(sample_client):
    examples = _examples()
    assert len(examples) > 40
    for method, url, body, content_type, expected in examples:
        response = sample_client.open(url, method=method, data=body, content_type=content_type)
        assert response.status_code < 500, (method, url)
        if expected is not None:
            assert _matches(expected, response.get_json()), (url, response.get_json())


def test_every_configdb_route_has_an_example(sample_client):
    shown = {(method, url.split("?")[0]) for method, url, *_ in _examples()}
    missing = []
    for rule in sample_client.application.url_map.iter_rules():
        if rule.endpoint.split(".")[0] not in CONFIGDB_BLUEPRINTS:
            continue
        pattern = _RULE.sub(_segment, rule.rule)
        missing += [
            (method, rule.rule)
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"})
            if not any(m == method and re.fullmatch(pattern, u) for m, u in shown)
        ]
    assert missing == [], f"routes without a curl example in {DOC.name}: {missing}"


def _segment(match: re.Match) -> str:
    return ".+" if match.group(0).startswith("<path:") else "[^/]+"
