"""Writes the Puppet control repository of the adoption tests: tests/data/hiera-control/.

`python tests/hiera_import/make_control_repo.py [DIR] [--scale N]`. The default writes the
checked-in copy (its eyaml keys are made once with `eyaml createkeys` and kept); `--scale 10`
writes a repository ten times larger for `bench/adoption.py`. Deterministic but for the eyaml
ciphertexts, which `eyaml encrypt` (the real CLI) makes.

Hierarchy, most specific first: node data, node secrets (eyaml), role, OS family, datacenter,
common secrets (eyaml), common. `nodes.yaml` names each node's facts.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parent / "data" / "hiera-control"
ROLES = ["web", "db", "app", "lb", "cache"]  # no role/cache.yaml: a level value without a file
OS_FAMILIES = ["Debian", "RedHat"]
DATACENTERS = ["dc1", "dc2", "dc3"]
CLASSES = [
    "base",
    "ntp",
    "web",
    "db",
    "monitoring",
    "firewall",
    "app1",
    "app2",
    "app3",
    "app4",
    "logging",
    "backup",
]
EYAML_OPTIONS = {
    "pkcs7_private_key": "keys/private_key.pkcs7.pem",
    "pkcs7_public_key": "keys/public_key.pkcs7.pem",
}

HIERA = {
    "version": 5,
    "defaults": {"datadir": "data", "data_hash": "yaml_data"},
    "hierarchy": [
        {"name": "Per-node data", "path": "nodes/%{trusted.certname}.yaml"},
        {
            "name": "Per-node secrets",
            "lookup_key": "eyaml_lookup_key",
            "path": "secrets/%{trusted.certname}.eyaml",
            "options": EYAML_OPTIONS,
        },
        {"name": "Role", "path": "role/%{facts.role}.yaml"},
        {"name": "OS family", "path": "os/%{facts.os.family}.yaml"},
        {"name": "Datacenter", "path": "datacenter/%{::datacenter}.yaml"},
        {
            "name": "Common secrets",
            "lookup_key": "eyaml_lookup_key",
            "path": "common.eyaml",
            "options": EYAML_OPTIONS,
        },
        {"name": "Common", "path": "common.yaml"},
    ],
}

LOOKUP_OPTIONS = {
    "profile::base::packages": {"merge": "unique"},
    "profile::base::users": {"merge": "hash"},
    "profile::base::sysctl": {"merge": "deep"},
    "profile::ntp::servers": {"merge": {"strategy": "deep", "knockout_prefix": "--"}},
    "profile::web::vhosts": {
        "merge": {"strategy": "deep", "knockout_prefix": "--", "sort_merged_arrays": True}
    },
    "profile::app1::pools": {"merge": {"strategy": "deep", "merge_hash_arrays": True}},
    "^profile::firewall::.*_rules$": {"merge": "unique"},
    "profile::monitoring::checks": {"merge": "first"},
}


def node_names(scale: int) -> list[str]:
    return [f"node{i:03d}.example.com" for i in range(1, 50 * scale + 3)]


def facts_of(index: int) -> dict:
    return {
        "role": ROLES[index % len(ROLES)],
        "os": {"family": OS_FAMILIES[(index // 5) % 2]},
        "datacenter": DATACENTERS[(index // 2) % 3],
    }


def _value(rng: random.Random, key: str, j: int):
    kind = j % 7
    if kind == 0:
        return rng.randint(1, 10_000)
    if kind == 1:
        return f"{key.split('::')[-1]}-{rng.randint(1, 999)}"
    if kind == 2:
        return rng.random() < 0.5
    if kind == 3:
        return [f"item{rng.randint(1, 50)}" for _ in range(rng.randint(1, 4))]
    if kind == 4:
        return {"enabled": rng.random() < 0.5, "size": rng.randint(1, 64), "tags": ["a", "b"]}
    if kind == 5:
        return None if rng.random() < 0.2 else f"/srv/{key.split('::')[1]}/{j}"
    return rng.choice(["%{facts.role}-x", "plain", "%{::datacenter}", "eu-%{facts.os.family}"])


def common(rng: random.Random, scale: int) -> dict:
    data: dict = {"lookup_options": LOOKUP_OPTIONS}
    for cls in CLASSES:
        for j in range(35 * scale):
            key = f"profile::{cls}::k{j:03d}"
            data[key] = _value(rng, key, j)
    data.update(
        {
            "profile::base::packages": ["vim", "curl", ["git", "tmux"]],
            "profile::base::users": {"root": {"uid": 0}, "ops": {"uid": 1000, "shell": "bash"}},
            "profile::base::sysctl": {
                "net": {"ipv4": {"ip_forward": 0, "tcp_syncookies": 1}},
                "vm": {"swappiness": 60},
            },
            "profile::ntp::servers": ["0.pool.ntp.org", "1.pool.ntp.org", "2.pool.ntp.org"],
            "profile::web::vhosts": {
                "default": {"port": 80, "aliases": ["b.example", "a.example"]}
            },
            "profile::app1::pools": [{"name": "a", "size": 1}, {"name": "b", "size": 2}],
            "profile::firewall::ssh_rules": [22],
            "profile::firewall::http_rules": [80, 443],
            "profile::monitoring::checks": {"cpu": {"warn": 80}},
            "profile::base::motd": {"text": "welcome", "color": "blue"},
            "unqualified_key": "top",
        }
    )
    return data


def level_data(rng: random.Random, name: str, overrides: int, own: int, scale: int) -> dict:
    data: dict = {}
    for j in rng.sample(range(35 * scale), overrides):
        cls = rng.choice(CLASSES)
        key = f"profile::{cls}::k{j:03d}"
        data[key] = _value(rng, key, j + 1)
    for j in range(own * scale):
        key = f"profile::{name}::k{j:03d}"
        data[key] = _value(rng, key, j)
    return data


STRATEGY_DATA = {
    "role/web": {
        "profile::base::packages": ["nginx", "curl"],
        "profile::web::vhosts": {
            "default": {"aliases": ["c.example", "--b.example"]},
            "shop": {"port": 443, "aliases": ["shop.example"]},
        },
        "profile::monitoring::checks": {"http": {"warn": 2}},
        "profile::firewall::http_rules": [8080],
    },
    "role/db": {
        "profile::base::users": {"postgres": {"uid": 120}},
        "profile::base::sysctl": {"net": {"ipv4": {"ip_forward": 1}}, "kernel": {"shmmax": 1}},
        "profile::firewall::ssh_rules": [2222, 22],
    },
    "role/app": {
        "profile::app1::pools": [{"size": 5}, {"size": 6, "extra": True}, {"name": "c"}],
        "profile::base::motd": {"text": "app node"},
    },
    "os/Debian": {"profile::base::packages": ["apt-transport-https", ["curl"]]},
    "os/RedHat": {"profile::base::packages": ["yum-utils"], "profile::ntp::servers": ["rh.ntp"]},
    "datacenter/dc1": {"profile::ntp::servers": ["ntp.dc1", "0.pool.ntp.org"]},
    "datacenter/dc2": {"profile::base::sysctl": {"vm": {"swappiness": 30}}},
}


def node_data(rng: random.Random, index: int, name: str) -> dict | None:
    if index % 4 == 3:
        return None  # a node without a file of its own
    data = level_data(rng, "node", 5, 0, 1)
    variant = index % 8
    if variant == 0:
        data["profile::ntp::servers"] = ["--1.pool.ntp.org", "ntp.local"]
        data["profile::base::users"] = {"ops": {"uid": 1001}}
    elif variant == 1:
        data["profile::ntp::servers"] = ["--", "only.ntp"]
        data["profile::base::sysctl"] = {"vm": {"swappiness": 10, "dirty_ratio": 20}}
    elif variant == 2:
        data["profile::web::vhosts"] = {"shop": "--", "api": {"port": 8443}}
        data["profile::base::packages"] = ["htop", ["vim", "strace"]]
    elif variant == 4:
        data["profile::firewall::ssh_rules"] = [22, 23]
        data["profile::monitoring::checks"] = {"disk": {"warn": 90}}
    elif variant == 5:
        data["profile::base::motd"] = {"color": "red"}
    return data


def secrets(index: int, name: str) -> str | None:
    """A node's eyaml file (DEC markers for `eyaml encrypt -e`), for one node in five."""
    if index % 5 != 0:
        return None
    return (
        f"profile::db::node_password: DEC::PKCS7[node secret {name}]!\n"
        "profile::app2::node_token: >\n"
        f"    DEC::PKCS7[token-{index}-{'x' * 40}]!\n"
    )


COMMON_SECRETS = "".join(
    [f"profile::db::password_{i:02d}: DEC::PKCS7[common secret {i} ünïcode]!\n" for i in range(10)]
    + [f"profile::app3::api_token_{i:02d}: >\n    DEC::PKCS7[block token {i}]!\n" for i in range(6)]
    + [
        "profile::backup::credentials:\n",
        "  user: backup\n",
        "  password: DEC::PKCS7[backup pass]!\n",
        "profile::db::replicas:\n",
        "  - host: replica1\n",
        "    password: DEC::PKCS7[replica one]!\n",
        "  - host: replica2\n",
        "    password: >\n",
        "        DEC::PKCS7[replica two]!\n",
    ]
)


def write(out: Path, scale: int, keys_from: Path | None) -> None:
    rng = random.Random(39)
    data = out / "data"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    (out / "hiera.yaml").write_text(yaml.safe_dump(HIERA, sort_keys=False))
    _keys(out, keys_from)
    _dump(data / "common.yaml", common(rng, scale))
    for dc in DATACENTERS:
        _dump(data / f"datacenter/{dc}.yaml", level_data(rng, dc, 20, 10, scale))
    for family in OS_FAMILIES:
        _dump(data / f"os/{family}.yaml", level_data(rng, family.lower(), 15, 10, scale))
    for role in ROLES[:-1]:
        _dump(data / f"role/{role}.yaml", level_data(rng, f"role_{role}", 25, 15, scale))
    for place, extra in STRATEGY_DATA.items():
        path = data / f"{place}.yaml"
        current = yaml.safe_load(path.read_text())
        _dump(path, {**current, **extra})
    names = node_names(scale)
    facts = {}
    eyaml_files = {data / "common.eyaml": COMMON_SECRETS}
    for index, name in enumerate(names):
        facts[name] = facts_of(index)
        own = node_data(rng, index, name)
        if own is not None:
            _dump(data / f"nodes/{name}.yaml", own)
        plain = secrets(index, name)
        if plain is not None:
            eyaml_files[data / f"secrets/{name}.eyaml"] = plain
    _dump(out / "nodes.yaml", facts)
    _encrypt(out, eyaml_files)


def _dump(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


def _keys(out: Path, keys_from: Path | None) -> None:
    keys = out / "keys"
    if keys_from is not None and keys_from.resolve() != keys.resolve():
        shutil.copytree(keys_from, keys, dirs_exist_ok=True)
    if not (keys / "private_key.pkcs7.pem").exists():
        subprocess.run(["eyaml", "createkeys"], cwd=out, check=True, capture_output=True)


def _encrypt(out: Path, files: dict[Path, str]) -> None:
    """Each eyaml file through the real `eyaml encrypt -e` (DEC markers to ENC values)."""
    for path, plain in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(plain)
        done = subprocess.run(
            [
                "eyaml",
                "encrypt",
                "-e",
                str(path),
                "--pkcs7-public-key",
                str(out / "keys/public_key.pkcs7.pem"),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        path.write_text(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    write(args.out, args.scale, DEFAULT / "keys" if (DEFAULT / "keys").exists() else None)


if __name__ == "__main__":
    main()
