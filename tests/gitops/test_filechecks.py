"""The gate with per-file results kept (`gitstore.filechecks`) reports exactly what the full
check reports, tree after tree, whatever changed: files, environment.yaml, catalog, limits; a
preview's blast radius reads the documents its gate parsed instead of parsing them again."""

from __future__ import annotations

import pytest
import yaml

from gitstore import limits, yamlio
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.catalog.view import CatalogView
from gitstore.filechecks import FileChecks
from gitstore.gitops import rules
from gitstore.repositories import open_repository
from gitstore.validation import ENVIRONMENT

from .helpers import commit_files, git

SEED = Author("seed", "seed@example.com")

#: Trees in the order they are checked, each the previous one changed; valid and invalid ones,
#: with the rules that look across files triggered (hierarchy, components, secret_keys,
#: graphs, settings, networks).
STEPS: list[dict[str, str | None]] = [
    {},  # the seeded tree: valid
    {"global/values/astute.yaml": "port: 8001\ndebug: false\nregion: one\n"},
    {"nodes/3/values/globals.yaml": "a: 1\nb: {c: [1, 2}\n"},  # does not parse
    {"nodes/3/values/globals.yaml": "a: 1\na: 2\n"},  # a repeated key
    {"nodes/2/values/astute.yaml": "region: 7\n"},  # breaks the schema
    {"nodes/2/values/astute.yaml": "- a list\n", "inventory/nodes/4.yaml": "- no\n"},
    {"nodes/1/values/globals.yaml": "password: hunter2\nkeep: 1\n"},  # not secret yet
    # secret_keys makes the unchanged node 1 file hold a plain secret
    {"environment.yaml": None},  # replaced below, from the seeded one
    {"nodes/5/values/globals.yaml": "password: ENC[v1,broken\n"},
    {"role/compute/values/globals.yaml": "a: 1\n"},  # an undeclared level
    {"graphs/default.yaml": "tasks: nope\n", "settings/editable.yaml": "- x\n"},
    {"network/networks.yaml": "- not a mapping\n"},
    {"nodes/2/values/astute.yaml": "region: two\n", "inventory/nodes/4.yaml": "id: 4\n"},
    # the components list drops fuel: every resource file is undefined now
    {"environment.yaml": None},
]


def _environment_steps(seeded: str) -> list[str]:
    """The two rewrites of environment.yaml in STEPS: a secret key, then no components."""
    doc = yaml.safe_load(seeded)
    with_secret = {**doc, "secret_keys": ["password"]}
    without_components = {**with_secret, "components": []}
    return [yaml.safe_dump(with_secret), yaml.safe_dump(without_components)]


@pytest.fixture
def work(gitops_store, tmp_path):
    path = tmp_path / "work"
    git("clone", "-q", str(gitops_store.environment_path(1)), str(path))
    return path


def _check(store, work, commit: str, checks: FileChecks | None) -> list[dict]:
    snapshot = open_repository(work / ".git").snapshot(commit)
    catalog = CatalogView(store.catalog().snapshot())
    return rules.validate(snapshot, ENVIRONMENT, catalog=catalog, env_id=1, checks=checks)


def _commits(work) -> list[str]:
    rewrites = iter(_environment_steps((work / "environment.yaml").read_text()))
    commits = []
    for step in STEPS:
        files = {p: (next(rewrites) if p == "environment.yaml" else t) for p, t in step.items()}
        commits.append(
            commit_files(work, files)
            if files
            else git("rev-parse", "HEAD", cwd=work).stdout.strip()
        )
    return commits


def test_kept_results_report_what_the_full_check_reports(gitops_store, work):
    checks = FileChecks()
    commits = _commits(work)
    invalid = 0
    for commit in commits + commits[::-1]:  # each tree cold, then again from kept results
        full = _check(gitops_store, work, commit, None)
        assert _check(gitops_store, work, commit, checks) == full, commit
        invalid += bool(full)
    assert invalid >= 2 * (len(STEPS) - 3)  # most trees are invalid, each differently


def test_a_kept_file_is_not_parsed_again(gitops_store, work, monkeypatch):
    checks = FileChecks()
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    first = _check(gitops_store, work, head, checks)
    changed = commit_files(work, {"nodes/3/values/globals.yaml": "x: 2\n"})
    parsed = []
    strict = yamlio.load_strict
    monkeypatch.setattr(
        yamlio, "load_strict", lambda d, *, path: parsed.append(path) or strict(d, path=path)
    )
    assert _check(gitops_store, work, changed, checks) == first == []
    assert "nodes/3/values/globals.yaml" in parsed
    assert "global/values/astute.yaml" not in parsed and "inventory/nodes/4.yaml" not in parsed


def test_a_catalog_change_is_judged_again(gitops_store, work):
    checks = FileChecks()
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    assert _check(gitops_store, work, head, checks) == []
    catalog = gitops_store.catalog()
    component = yaml.safe_load(catalog.snapshot().read("components/fuel.yaml"))
    for definition in component["resource_definitions"]:
        if definition["name"] == "astute":
            definition["schema"]["properties"]["region"] = {"type": "integer"}
    changes = ChangeSet("region becomes a number")
    changes.put("components/fuel.yaml", yaml.safe_dump(component).encode())
    catalog.update(lambda _: changes, SEED)
    full = _check(gitops_store, work, head, None)
    assert full and _check(gitops_store, work, head, checks) == full


def test_lower_limits_are_judged_again(gitops_store, work):
    checks = FileChecks()
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    assert _check(gitops_store, work, head, checks) == []
    limits.configure(gitops_store.root, {"document_keys": 2})
    try:
        full = _check(gitops_store, work, head, None)
        assert full and _check(gitops_store, work, head, checks) == full
    finally:
        limits.configure(gitops_store.root / "nowhere")  # the defaults again for later tests


def test_previews_keep_results_in_the_stores_cache(gitops_store):
    assert len(gitops_store.file_checks) == 0
    first = gitops_store.previews.edit(1, [], "astute", "set", [["port", 9]]).data
    kept = len(gitops_store.file_checks)
    assert kept > 0 and first["valid"]
    again = gitops_store.previews.edit(1, [], "astute", "set", [["port", "x"]]).data
    assert not again["valid"] and again["errors"][0]["file"] == "global/overrides/astute.yaml"


def test_the_previews_blast_radius_reads_what_its_gate_parsed(gitops_store, monkeypatch):
    """A worker's first preview parses every node's file for the gate: the nodes' key indexes
    for the blast radius are made from those documents, not from a second parse."""
    read = []
    read_mapping = Snapshot.read_mapping
    monkeypatch.setattr(
        Snapshot, "read_mapping", lambda self, path: read.append(path) or read_mapping(self, path)
    )
    report = gitops_store.previews.edit(1, [], "astute", "set", [["port", 9]]).data
    changed = {n["node"]: n["resources"]["astute"]["changed"] for n in report["nodes"]}
    assert changed == {n: {"port": {"old": 8000, "new": 9}} for n in ("1", "2", "3", "4")}
    assert [p for p in read if p.startswith("nodes/")] == []
