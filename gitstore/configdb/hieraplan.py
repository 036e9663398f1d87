"""The plan of a Hiera import: every data file read, checked and placed, before anything is written.

Hiera keys go into resources by their class prefix (`profile::ntp::servers` -> resource
`profile/ntp`, keeping the key whole, since Puppet looks the whole key up), keys without one into
`common`; `resource` puts every key into one resource. `lookup_options` become the environment's
(merge/strategies.py); eyaml values are decrypted into the plan, which holds them only in memory
and never prints them. Every refusal names the file, the line and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitstore import yamlio
from gitstore.configdb import hieraconf
from gitstore.errors import GitstoreError, InvalidInput
from gitstore.merge import strategies
from gitstore.names import check_resource_name
from gitstore.secrets import eyaml

COMMON_RESOURCE = "common"
MAX_FILE_BYTES = 16 << 20


@dataclass
class Plan:
    """What an import writes: documents by (pairs, resource, kind), and the environment fields."""

    hierarchy: list[str]
    documents: dict[tuple, dict] = field(default_factory=dict)
    lookup_options: dict[str, Any] = field(default_factory=dict)
    secret_keys: list[str] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    lossy: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    secrets: int = 0
    #: The Hiera variable of each level (`os`: `facts.os.family`), for export.
    variables: dict[str, str] = field(default_factory=dict)
    #: The eyaml key pair's PEM bytes (public, private), kept for pushes by `apply`.
    eyaml_pair: tuple[bytes, bytes] | None = field(default=None, repr=False)

    @property
    def resources(self) -> list[str]:
        return sorted({resource for _, resource, _ in self.documents})

    def summary(self) -> dict:
        """The plan as `--dry-run` prints it: no value, secret or not."""
        return {
            "hierarchy": self.hierarchy,
            "files": self.files,
            "resources": self.resources,
            "keys": len(self.keys),
            "secrets": self.secrets,
            "secret_keys": self.secret_keys,
            "lookup_options": self.lookup_options,
            "lossy": self.lossy,
        }


def build(
    config: Path,
    datadir: Path | None,
    keys: eyaml.EyamlKeys | None = None,
    resource: str | None = None,
) -> Plan:
    """Read `config` and its data files into a Plan (InvalidInput on the first bad file)."""
    entries, lossy = hieraconf.read(config, datadir)
    mapping = hieraconf.map_levels(entries)
    plan = Plan(mapping.levels, lossy=lossy + mapping.lossy)
    plan.variables = {
        layer.level: layer.entry.variable or "" for layer in mapping.layers if layer.level
    }
    if resource is not None:
        check_resource_name(resource)
    options_seen: dict[str, tuple[Any, str]] = {}
    secret_paths: set[str] = set()
    for layer in mapping.layers:
        for value, path in hieraconf.files_of(layer.entry).items():
            data, lines = _read(path)
            where = f"{path}"
            pairs = ((layer.level, value),) if layer.level else ()
            _take_options(data.pop("lookup_options", None), where, lines, options_seen, plan)
            for key, item in data.items():
                key = str(key)
                if layer.entry.eyaml:
                    item = _decrypted(item, (key,), where, lines, keys, secret_paths)
                target = resource or _resource_of(key)
                plan.documents.setdefault((pairs, target, layer.kind), {})[key] = item
                plan.keys.add(key)
            plan.files.append(
                {
                    "file": str(path),
                    "level": layer.level or "global",
                    "value": value or None,
                    "kind": layer.kind,
                    "keys": len(data),
                }
            )
    plan.lookup_options = {key: options for key, (options, _) in options_seen.items()}
    strategies.parse(plan.lookup_options, "shallow")
    plan.secret_keys = sorted(secret_paths)
    plan.secrets = _count_secrets(plan)
    plan.lossy += _knockout_keys(plan)
    return plan


def _read(path: Path) -> tuple[dict, dict]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read: {exc}", path=str(path)) from exc
    if len(raw) > MAX_FILE_BYTES:
        raise InvalidInput(f"{path}: larger than {MAX_FILE_BYTES} bytes", path=str(path))
    data = yamlio.load_mapping(raw, path=str(path), strict=True)
    return data, yamlio.key_lines(raw)


def _refusal(where: str, lines: dict, path: tuple[str, ...], message: str) -> InvalidInput:
    line = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), 1)
    key = ".".join(path)
    return InvalidInput(
        f"{where} line {line}, key {key}: {message}",
        path=where,
        key=key,
        errors=[{"file": where, "line": line, "key": key, "message": message}],
    )


def _take_options(options: Any, where: str, lines: dict, seen: dict, plan: Plan) -> None:
    if options is None:
        return
    try:
        strategies.parse(options, "shallow", "lookup_options")
    except GitstoreError as exc:
        raise _refusal(where, lines, ("lookup_options",), exc.message) from exc
    for key, value in options.items():
        if isinstance(value, dict) and set(value) - {"merge"}:
            plan.lossy.append(f"{where}: lookup_options of {key!r}: only merge is kept")
        if key in seen and seen[key][0] != value:
            plan.lossy.append(
                f"lookup_options of {key!r} differ between {seen[key][1]} and {where}: "
                f"the first is kept for every node"
            )
            continue
        seen.setdefault(key, (value, where))


def _decrypted(
    value: Any,
    path: tuple[str, ...],
    where: str,
    lines: dict,
    keys: eyaml.EyamlKeys | None,
    secret_paths: set[str],
) -> Any:
    """`value` with every eyaml leaf decrypted; the key path of each becomes a secret key."""
    if isinstance(value, dict):
        return {
            k: _decrypted(v, (*path, str(k)), where, lines, keys, secret_paths)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            _decrypted(v, (*path, str(i)), where, lines, keys, secret_paths)
            for i, v in enumerate(value)
        ]
    if not eyaml.is_encrypted(value):
        return value
    if keys is None:
        raise _refusal(where, lines, path, "an eyaml value, and no --eyaml-private-key was given")
    try:
        plain = eyaml.decrypt(value, keys)
    except ValueError as exc:
        raise _refusal(where, lines, path, f"the eyaml value cannot be decrypted: {exc}") from exc
    secret_paths.add(".".join(_pattern_segment(s) for s in path))
    return _Secret(plain)


class _Secret(str):
    """A decrypted value: a str that says nothing of itself when printed by mistake."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<secret>"


def _pattern_segment(segment: str) -> str:
    """A key path segment as a `secret_keys` pattern segment (a dot or star cannot be named:
    `*` then matches it, more than needed, never less)."""
    return "*" if "." in segment or "*" in segment else segment


def _resource_of(key: str) -> str:
    if "::" not in key:
        return COMMON_RESOURCE
    name = "/".join(key.split("::")[:-1])
    try:
        return check_resource_name(name)
    except InvalidInput:
        return COMMON_RESOURCE


def _count_secrets(plan: Plan) -> int:
    def count(value: Any) -> int:
        if isinstance(value, dict):
            return sum(count(v) for v in value.values())
        if isinstance(value, list):
            return sum(count(v) for v in value)
        return isinstance(value, _Secret)

    return sum(count(doc) for doc in plan.documents.values())


def _knockout_keys(plan: Plan) -> list[str]:
    """Keys the store's `shallow` merge would read as knock-outs (Hiera's `first` does not)."""
    found = set()
    for document in plan.documents.values():
        for key, value in document.items():
            if key.startswith("--") or (
                strategies.Strategies("shallow", ()).of(key) is None
                and key not in plan.lookup_options
                and _has_knockout_key(value)
            ):
                found.add(key)
    return [
        f"key {key!r}: a mapping key starting with '--' is a knock-out here"
        for key in sorted(found)
    ]


def _has_knockout_key(value: Any) -> bool:
    if isinstance(value, dict):
        return any(str(k).startswith("--") or _has_knockout_key(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_knockout_key(v) for v in value)
    return False
