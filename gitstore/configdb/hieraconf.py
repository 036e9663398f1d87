"""A Hiera 5 `hiera.yaml` read for import, and its hierarchy mapped to an environment's levels.

Each hierarchy path becomes one layer (docs/hiera.md#import):

- a plain path (`common.yaml`) is the global level;
- a path with one interpolation (`%{trusted.certname}`, `%{facts.os.family}`, `%{::role}`) is a
  level whose values are the file names found; `trusted.certname` (or `clientcert`) is the
  `nodes` level, the most specific;
- two adjacent paths of one variable (or two plain paths) are one level's `values` (the less
  specific) and `overrides` (the more specific).

Anything else is either refused (a `hiera.yaml` of version 3 or 4, an unknown backend, a
function in a path) or listed as lossy. Every refusal names the file, the line and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gitstore import yamlio
from gitstore.errors import InvalidInput
from gitstore.layout import NODES_LEVEL
from gitstore.names import RESERVED_LEVEL_NAMES, check_level_name

YAML_BACKENDS = ("yaml_data", "json_data")
EYAML_BACKEND = "eyaml_lookup_key"
_CERTNAME = {"trusted.certname", "clientcert", "facts.clientcert", "trusted.hostname"}
_INTERPOLATION = re.compile(r"%\{([^}]*)\}")
_FUNCTION = re.compile(r"^\s*(lookup|alias|hiera|literal|scope|strict_alias)\s*\(")
_PATH_KEYS = ("path", "paths", "glob", "globs", "mapped_paths", "uri", "uris")


@dataclass
class Entry:
    """One path of a hierarchy entry, in Hiera's order (most specific first)."""

    name: str
    template: str  # relative to `datadir`
    datadir: Path
    eyaml: bool
    line: int
    variable: str | None  # the interpolated variable, None for a plain path
    eyaml_keys: dict[str, str] = field(default_factory=dict)  # options' key paths

    @property
    def level_key(self) -> str:
        """What groups paths into one level: the variable (certnames into `nodes`)."""
        if self.variable is None:
            return ""
        return NODES_LEVEL if self.variable in _CERTNAME else self.variable


@dataclass
class Layer:
    """Where the files of one entry go: a level (None = global) and a kind."""

    entry: Entry
    level: str | None
    kind: str


@dataclass
class LevelMapping:
    """The hierarchy mapped: levels least specific first, layers, and what is lost."""

    levels: list[str]
    layers: list[Layer]
    lossy: list[str]


def read(config: Path, datadir: Path | None) -> tuple[list[Entry], list[str]]:
    """The entries of `config` (a hiera.yaml) and the lossy notes of the entries skipped."""
    text = _read_text(config)
    data = yamlio.load(text, path=str(config))
    lines = {**yamlio.key_lines(text), **_hierarchy_lines(text)}
    where = _Where(str(config), lines)
    if not isinstance(data, dict):
        raise InvalidInput(f"{config}: hiera.yaml must be a mapping", path=str(config))
    version = data.get("version", data.get(":version"))
    if version != 5:
        shown = "3 (no version key)" if version is None else repr(version)
        raise where.error(("version",), f"version {shown}: only Hiera 5 can be imported")
    defaults = data.get("defaults") or {}
    base = config.parent
    default_dir = datadir or base / str(defaults.get("datadir", "data"))
    entries: list[Entry] = []
    lossy: list[str] = []
    for index, raw in enumerate(data.get("hierarchy") or []):
        if not isinstance(raw, dict):
            raise where.error(("hierarchy",), f"entry {index + 1} is not a mapping")
        key_of = where.entry(index, raw)
        eyaml = _backend(raw, defaults, key_of, where)
        entry_dir = base / str(raw["datadir"]) if "datadir" in raw else default_dir
        found = _paths(raw, key_of, where, lossy)
        for template in found:
            entries.append(
                Entry(
                    str(raw.get("name", template)),
                    template,
                    entry_dir,
                    eyaml,
                    where.line(key_of(_path_key(raw))),
                    _variable(template, key_of, where),
                    dict(raw.get("options") or defaults.get("options") or {}) if eyaml else {},
                )
            )
    return entries, lossy


def _path_key(raw: dict) -> str:
    return next((key for key in _PATH_KEYS if key in raw), "name")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot be read: {exc}", path=str(path)) from exc


class _Where:
    """File, line and key of a part of hiera.yaml, for refusals."""

    def __init__(self, file: str, lines: dict) -> None:
        self.file, self.lines = file, lines

    def line(self, path: tuple[str, ...]) -> int:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def error(self, path: tuple[str, ...], message: str) -> InvalidInput:
        key = ".".join(path)
        return InvalidInput(
            f"{self.file} line {self.line(path)}, key {key}: {message}",
            path=self.file,
            key=key,
            errors=[{"file": self.file, "line": self.line(path), "key": key, "message": message}],
        )

    def entry(self, index: int, raw: dict):
        """Key paths of entry `index`: `hierarchy.<index>.<key>`."""

        def key_of(key: str) -> tuple[str, ...]:
            return ("hierarchy", str(index), key)

        return key_of


def _hierarchy_lines(text: str) -> dict[tuple[str, ...], int]:
    """Lines of the keys of each `hierarchy` entry (`key_lines` does not enter lists)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    lines: dict[tuple[str, ...], int] = {}
    if not isinstance(root, yaml.MappingNode):
        return lines
    for key, value in root.value:
        if key.value != "hierarchy" or not isinstance(value, yaml.SequenceNode):
            continue
        for index, item in enumerate(value.value):
            lines[("hierarchy", str(index))] = item.start_mark.line + 1
            if isinstance(item, yaml.MappingNode):
                for entry_key, _ in item.value:
                    path = ("hierarchy", str(index), str(entry_key.value))
                    lines[path] = entry_key.start_mark.line + 1
    return lines


def _backend(raw: dict, defaults: dict, key_of, where: _Where) -> bool:
    """True for an eyaml entry; a refusal for any backend other than YAML, JSON and eyaml."""
    for kind in ("data_hash", "lookup_key", "data_dig"):
        if kind in raw:
            name = raw[kind]
            break
    else:
        default = next((k for k in ("data_hash", "lookup_key", "data_dig") if k in defaults), None)
        name = defaults.get(default) if default else "yaml_data"
        kind = default or "data_hash"
    if kind == "data_hash" and name in YAML_BACKENDS:
        return False
    if kind == "lookup_key" and name == EYAML_BACKEND:
        return True
    raise where.error(
        key_of(kind),
        f"unknown backend {kind}: {name} (import reads {', '.join(YAML_BACKENDS)} and "
        f"lookup_key: {EYAML_BACKEND})",
    )


def _paths(raw: dict, key_of, where: _Where, lossy: list[str]) -> list[str]:
    present = [key for key in _PATH_KEYS if key in raw]
    if not present:
        lossy.append(f"hierarchy entry {raw.get('name')!r} names no path: not imported")
        return []
    key = present[0]
    value = raw[key]
    if key in ("uri", "uris", "mapped_paths"):
        lossy.append(f"hierarchy entry {raw.get('name')!r}: {key} is not imported")
        return []
    templates = value if isinstance(value, list) else [value]
    result = []
    for template in templates:
        template = str(template)
        _check_functions(template, key_of(key), where)
        if key in ("glob", "globs"):
            lossy.append(f"hierarchy entry {raw.get('name')!r}: glob {template!r} is not imported")
            continue
        result.append(template)
    return result


def _check_functions(template: str, key: tuple[str, ...], where: _Where) -> None:
    for inner in _INTERPOLATION.findall(template):
        if _FUNCTION.match(inner):
            raise where.error(
                key,
                f"path {template!r} calls {inner.split('(')[0].strip()}() in an interpolation: "
                "a level can only be named by a variable",
            )


def _variable(template: str, key_of, where: _Where) -> str | None:
    found = _INTERPOLATION.findall(template)
    if not found:
        return None
    if len(found) > 1:
        raise where.error(
            key_of(_path_key({})),
            f"path {template!r} interpolates {len(found)} variables; one maps to a level",
        )
    name = found[0].strip()
    if name.startswith("::"):
        name = name[2:]
    if name.startswith("facts.") and name[6:] in ("clientcert",):
        name = "clientcert"
    segment = next(part for part in template.split("/") if "%{" in part)
    rest = _INTERPOLATION.sub("", segment)
    if rest not in ("", ".yaml", ".yml", ".eyaml", ".json"):
        raise where.error(
            key_of("path"),
            f"path {template!r}: the interpolation must be a whole file or folder name",
        )
    return name


def map_levels(entries: list[Entry]) -> LevelMapping:
    """Entries grouped into levels, least specific first (see the module docstring)."""
    groups: list[list[Entry]] = []
    for entry in entries:
        if groups and groups[-1][0].level_key == entry.level_key:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    lossy: list[str] = []
    seen: set[str] = set()
    kept: list[list[Entry]] = []
    for group in groups:
        if group[0].level_key in seen:
            lossy.append(
                f"{group[0].template}: {group[0].level_key or 'the global level'} appears twice "
                "in the hierarchy with other levels between (its files are not imported)"
            )
            continue
        seen.add(group[0].level_key)
        if len(group) > 2:
            lossy.append(
                f"{', '.join(e.template for e in group[:-2])}: a level holds two files (values "
                "and overrides); these are not imported"
            )
            group = group[-2:]
        kept.append(group)
    _check_order(kept, lossy)
    levels: list[str] = []
    layers: list[Layer] = []
    names: set[str] = set()
    for group in reversed(kept):
        level = None if group[0].level_key == "" else _level_name(group[0], names)
        if level is not None:
            levels.append(level)
        kinds = ["values"] if len(group) == 1 else ["overrides", "values"]
        layers.extend(Layer(entry, level, kind) for entry, kind in zip(group, kinds, strict=True))
    return LevelMapping(levels, layers, lossy)


def _check_order(groups: list[list[Entry]], lossy: list[str]) -> None:
    """Global must be least specific and `nodes` most specific, as gitstore's chain is."""
    keys = [group[0].level_key for group in groups]
    if "" in keys and keys.index("") != len(keys) - 1:
        lossy.append("a plain path is above an interpolated one: global is the least specific")
    if NODES_LEVEL in keys and keys.index(NODES_LEVEL) != 0:
        lossy.append("the certname level is not the most specific: gitstore's nodes level is")


def _level_name(entry: Entry, taken: set[str]) -> str:
    if entry.level_key == NODES_LEVEL:
        name = NODES_LEVEL
    else:
        parts = entry.template.split("/")
        index = next(i for i, part in enumerate(parts) if "%{" in part)
        name = parts[index - 1] if index else entry.level_key.split(".")[-1]
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        if name in RESERVED_LEVEL_NAMES or name == NODES_LEVEL or not name:
            name = f"{name}_level"
    base, count = name, 2
    while name in taken:
        name, count = f"{base}_{count}", count + 1
    taken.add(check_level_name(name))
    return name


def files_of(entry: Entry) -> dict[str, Path]:
    """The files of an entry by level value ('' for a plain path), inside its datadir.

    A file reached through `..` or a symlink that leaves the datadir is refused.
    """
    root = entry.datadir.resolve()
    if entry.variable is None:
        path = entry.datadir / entry.template
        return {"": _inside(path, root, entry)} if path.exists() else {}
    prefix, _, suffix = _INTERPOLATION.split(entry.template, maxsplit=1)
    found = {}
    for path in sorted(entry.datadir.glob(_INTERPOLATION.sub("*", entry.template))):
        relative = path.relative_to(entry.datadir).as_posix()
        if not (relative.startswith(prefix) and relative.endswith(suffix)):
            continue
        value = relative[len(prefix) : len(relative) - len(suffix)]
        if "/" in value or not value:
            continue
        found[value] = _inside(path, root, entry)
    return found


def _inside(path: Path, root: Path, entry: Entry) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise InvalidInput(
            f"{path}: hierarchy entry {entry.name!r} (hiera.yaml line {entry.line}, key path) "
            f"reaches {resolved}, outside the datadir {root} (through '..' or a symlink)",
            path=str(path),
            key="path",
            errors=[{"file": str(path), "line": entry.line, "key": "path"}],
        )
    return resolved
