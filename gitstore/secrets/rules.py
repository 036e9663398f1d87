"""Which values of an environment are secret.

A value is secret when its key path, or a key path above it, matches a rule:

- the store's default patterns, on every resource document and settings file: a key whose name
  ends with `password`, `passwd`, `secret`, `token` or `_key` (any case);
- `secret_keys` of the resource's definition (resource documents only) and of the environment's
  `environment.yaml` (every resource document and settings file): dotted key paths where `*`
  stands for any one segment (`nodes.*.admin_pass`);
- `settings/generated.yaml` is secret as a whole.

Other files of an environment (`environment.yaml`, inventory, graphs, transactions) hold no
secrets. Everything below a secret key is secret, leaf by leaf; a list's items are addressed by
their index (`users.0.password`). `None` is never secret: it is the absence of a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitstore.errors import InvalidInput
from gitstore.layout import parse_data_path

DEFAULT_SUFFIXES = ("password", "passwd", "secret", "token", "_key")
SETTINGS = "settings/"
WHOLLY_SECRET = ("settings/generated.yaml",)
WILDCARD = "*"
_YAML = ".yaml"


@dataclass(frozen=True)
class Rules:
    """The rules of one file: patterns (tuples of segments), defaults on, or all secret."""

    patterns: tuple[tuple[str, ...], ...] = ()
    defaults: bool = True
    everything: bool = False

    def starts_here(self, path: Sequence[str]) -> bool:
        """Whether the node at `path` matches a rule itself (not through an ancestor)."""
        if self.everything:
            return True
        if not path:
            return False
        if self.defaults and default_match(path[-1]):
            return True
        return any(len(p) == len(path) and _pattern_match(p, path) for p in self.patterns)

    def secret(self, path: Sequence[str]) -> bool:
        """Whether the value at `path` is secret (it or an ancestor matches)."""
        return any(self.starts_here(path[:depth]) for depth in range(0, len(path) + 1))


NO_SECRETS = Rules(defaults=False)


def default_match(segment: str) -> bool:
    """Whether a key of this name is secret by the default patterns (`*password`, ...)."""
    name = segment.lower()
    return not name.isdigit() and name.endswith(DEFAULT_SUFFIXES)


def _pattern_match(pattern: Sequence[str], path: Sequence[str]) -> bool:
    return all(p in (WILDCARD, s) for p, s in zip(pattern, path, strict=True))


def parse_patterns(keys: Any, where: str) -> tuple[tuple[str, ...], ...]:
    """`secret_keys` as patterns; InvalidInput naming `where` for anything else."""
    if keys is None:
        return ()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise InvalidInput(f"{where} must be a list of dotted key paths", key="secret_keys")
    patterns = []
    for key in keys:
        segments = tuple(key.split("."))
        if not key or any(not segment for segment in segments):
            raise InvalidInput(
                f"{where}: {key!r} is not a dotted key path (empty segment)", key="secret_keys"
            )
        patterns.append(segments)
    return tuple(dict.fromkeys(patterns))


def rules_for_file(
    file: str, definitions: Mapping[str, Mapping] | None, environment: Mapping | None
) -> Rules:
    """The rules of `file` of an environment.

    Args:
        file: the repository-relative path.
        definitions: resource name -> definition (with `secret_keys`) of the environment's
            components; None when the catalog is not at hand (defaults and the environment's
            own keys still apply).
        environment: the parsed `environment.yaml` (its `secret_keys`), or None.
    """
    if file in WHOLLY_SECRET:
        return Rules(everything=True)
    env_patterns = _lenient(environment.get("secret_keys") if environment else None)
    if file.startswith(SETTINGS) and file.endswith(_YAML):
        return Rules(env_patterns)
    parsed = parse_data_path(file)
    if parsed is None:
        return NO_SECRETS
    resource = parsed[2]
    definition = (definitions or {}).get(resource) or {}
    return Rules(tuple(dict.fromkeys(env_patterns + _lenient(definition.get("secret_keys")))))


def _lenient(keys: Any) -> tuple[tuple[str, ...], ...]:
    """Patterns of stored `secret_keys`; a malformed list is the push gate's to report."""
    if not isinstance(keys, list):
        return ()
    return tuple(tuple(k.split(".")) for k in keys if isinstance(k, str) and k)


def describe(
    definitions: Mapping[str, Mapping], environment: Mapping | None, resources: Iterable[str]
) -> dict[str, Any]:
    """The rules in force, as `gitstore secrets rules` shows them."""
    return {
        "default_patterns": [f"*{suffix}" for suffix in DEFAULT_SUFFIXES],
        "default_applies_to": "every resource document and settings/*.yaml",
        "wholly_secret_files": list(WHOLLY_SECRET),
        "environment_secret_keys": list((environment or {}).get("secret_keys") or []),
        "resource_secret_keys": {
            name: list((definitions.get(name) or {}).get("secret_keys") or [])
            for name in sorted(resources)
        },
    }
