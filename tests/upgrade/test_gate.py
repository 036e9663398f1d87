"""A `git push` of upgrade rules, release settings or networks meets the API's rules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from .conftest import ORIGINAL


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def push_change(repo: Path, work: Path, path: str, document: dict) -> subprocess.CompletedProcess:
    """Clone `repo`, commit `document` at `path`, push it back."""
    assert git("clone", "-q", str(repo), str(work), cwd=repo.parent).returncode == 0
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(yaml.safe_dump(document))
    git("add", "-A", cwd=work)
    assert git("commit", "-qm", f"change {path}", cwd=work).returncode == 0
    return git("push", "origin", "main", cwd=work)


def test_a_pushed_rule_without_its_field_is_rejected_naming_it(upgrade_store, tmp_path):
    path = "releases/Newton on Ubuntu 16.04/upgrade.yaml"
    bad = {"rules": [{"since": "10.0", "op": "rename", "path": "editable.a.b"}]}
    pushed = push_change(upgrade_store.root / "catalog.git", tmp_path / "catalog", path, bad)
    assert pushed.returncode != 0
    assert path in pushed.stderr and "rules[0]" in pushed.stderr and "'to'" in pushed.stderr


def test_a_pushed_vip_on_an_unknown_network_is_rejected(upgrade_store, tmp_path):
    repo = upgrade_store.environment_path(ORIGINAL)
    bad = {"vips": [{"name": "public", "network": "storage", "ip": "10.0.0.1"}]}
    pushed = push_change(repo, tmp_path / "env", "network/vips.yaml", bad)
    assert pushed.returncode != 0
    assert "network/vips.yaml" in pushed.stderr and "'storage'" in pushed.stderr
    good = {"vips": [{"name": "public", "network": "public", "ip": "172.16.0.9"}]}
    (tmp_path / "env" / "network/vips.yaml").write_text(yaml.safe_dump(good))
    git("commit", "-qam", "fix", cwd=tmp_path / "env")
    assert git("push", "origin", "main", cwd=tmp_path / "env").returncode == 0
    assert upgrade_store.networks.get(ORIGINAL).data["vips"] == good["vips"]
