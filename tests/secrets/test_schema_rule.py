"""Schemas and secrets (issue 25, item 10): REST writes and the push gate apply one rule.

The gate holds no key and sees a secret as `ENC[...]`; REST sees the plain value. So a schema
checks a secret's presence and place, never its value, on both sides: a REST write the schema
accepts can never make the environment invalid for every later push.
"""

from __future__ import annotations

import subprocess

from secrets_helpers import VALUES

DEFINITIONS = "/api/v1/config/resource_definitions"
SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "maxLength": 3},
        "nova": {
            "type": "object",
            "properties": {"db_password": {"type": "string", "maxLength": 3}},
        },
    },
}


def _give_astute_a_schema(client) -> None:
    astute = next(d for d in client.get(DEFINITIONS).json if d["name"] == "astute")
    assert client.patch(f"{DEFINITIONS}/{astute['id']}", json={"schema": SCHEMA}).status_code == 200


def _git(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_a_secret_the_schema_accepts_over_rest_keeps_the_environment_valid(
    fuel_store, client, tmp_path
):
    _give_astute_a_schema(client)
    document = {"nova": {"db_password": "abc", "user": "nova"}, "region": "one"}
    assert client.put(VALUES, json=document).status_code == 204
    assert fuel_store.gitops.validate_all()["environments/1.git"] == []
    clone = tmp_path / "clone"
    _git("clone", "-q", str(fuel_store.environment_path(1)), str(clone), cwd=tmp_path)
    overrides = clone / "global" / "overrides" / "astute.yaml"
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text("debug: true\n")
    _git("add", "-A", cwd=clone)
    _git("commit", "-qm", "an unrelated change", cwd=clone)
    pushed = _git("push", "-q", "origin", "HEAD:main", cwd=clone)
    assert pushed.returncode == 0, pushed.stderr


def test_value_constraints_skip_secrets_on_both_sides_and_bind_plain_keys(fuel_store, client):
    _give_astute_a_schema(client)
    long_secret = {"nova": {"db_password": "longer-than-three"}, "region": "one"}
    assert client.put(VALUES, json=long_secret).status_code == 204
    assert fuel_store.gitops.validate_all()["environments/1.git"] == []
    long_plain = {"nova": {"db_password": "abc"}, "region": "four"}
    refused = client.put(VALUES, json=long_plain)
    assert refused.status_code == 400 and "region" in refused.get_data(as_text=True)
