"""Per-key merge strategies after Hiera 5's `lookup_options` (docs/hiera.md#merge-strategies).

An environment's `lookup_options` name top-level keys (or `^...` patterns) and how their values
merge across the layers: `first`, `unique`, `hash` or `deep` (with `knockout_prefix`,
`sort_merged_arrays`, `merge_hash_arrays`). A key so named gets exactly the value Puppet's lookup
gives: the values of the layers that hold it are folded most specific first, as Puppet's
`MergeStrategy#lookup` folds hierarchy levels, and `deep` is a port of the `deep_merge` gem
Puppet calls (`deep_merge!(higher, clone(lower))`, its quirks kept). Every other key merges by
the environment's mode (`effective.py`).

Such a fold is not a left fold from the least specific layer, so a document with strategies is
merged from all its layers at once: a caller may not merge a scope's own layers over its parent's
document (`folds_left`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitstore.errors import InvalidInput

FIRST, UNIQUE, HASH, DEEP = "first", "unique", "hash", "deep"
NAMES = (FIRST, UNIQUE, HASH, DEEP)
_DEEP_OPTIONS = ("knockout_prefix", "sort_merged_arrays", "merge_hash_arrays")


@dataclass(frozen=True)
class Strategy:
    """How one key's values merge."""

    name: str
    knockout_prefix: str | None = None
    sort_merged_arrays: bool = False
    merge_hash_arrays: bool = False


@dataclass(frozen=True)
class Strategies:
    """An environment's merge: its mode for every key, and the strategies of named keys.

    Hashable and comparable: it stands where the mode string stands in cache keys.
    """

    mode: str
    keys: tuple[tuple[str, Strategy], ...]

    def of(self, key: Any) -> Strategy | None:
        """The strategy of top-level key `key` (an exact name wins over a pattern)."""
        for name, strategy in self.keys:
            if name == key:
                return strategy
        if isinstance(key, str):
            for name, strategy in self.keys:
                if name.startswith("^") and _pattern(name).search(key):
                    return strategy
        return None


def folds_left(mode: Any) -> bool:
    """Whether documents of `mode` are a left fold (a scope's layers over its parent's result)."""
    return not isinstance(mode, Strategies)


def parse(options: Any, mode: str, where: str = "lookup_options") -> str | Strategies:
    """`mode` alone when `options` is empty, else the Strategies `options` (Hiera's
    `lookup_options` mapping) give; InvalidInput naming the key of a bad entry."""
    if not options:
        return mode
    if not isinstance(options, Mapping):
        raise InvalidInput(f"{where} must be a mapping of key to options", key=where)
    keys = tuple(
        (str(key), _strategy(entry, f"{where}.{key}"))
        for key, entry in options.items()
        if not (isinstance(entry, Mapping) and "merge" not in entry)  # convert_to alone
    )
    for name, _ in keys:
        if name.startswith("^"):
            _pattern(name, where)
    return Strategies(mode, keys) if keys else mode


def _strategy(entry: Any, where: str) -> Strategy:
    merge = entry.get("merge") if isinstance(entry, Mapping) else None
    if isinstance(merge, str):
        merge = {"strategy": merge}
    if not isinstance(merge, Mapping) or merge.get("strategy") not in NAMES:
        raise InvalidInput(
            f"{where}: merge must be one of {', '.join(NAMES)} or a mapping with such a "
            f"'strategy' (got {entry!r})",
            key=where,
        )
    name = merge["strategy"]
    unknown = sorted(set(merge) - {"strategy", *(_DEEP_OPTIONS if name == DEEP else ())})
    if unknown:
        raise InvalidInput(f"{where}: option {unknown[0]!r} is not one of {name}'s", key=where)
    prefix = merge.get("knockout_prefix")
    if prefix is not None and (not isinstance(prefix, str) or not prefix):
        raise InvalidInput(f"{where}: knockout_prefix must be a non-empty string", key=where)
    return Strategy(
        name, prefix, bool(merge.get("sort_merged_arrays")), bool(merge.get("merge_hash_arrays"))
    )


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(text: str, where: str = "lookup_options") -> re.Pattern[str]:
    found = _PATTERNS.get(text)
    if found is None:
        try:
            found = re.compile(text)
        except re.error as exc:
            raise InvalidInput(f"{where}: {text!r} is not a pattern: {exc}", key=where) from exc
        if len(_PATTERNS) < 1024:
            _PATTERNS[text] = found
    return found


def merge_keys(
    result: dict[str, Any], datas: Sequence[Mapping[str, Any] | None], strategies: Strategies
) -> dict[str, Any]:
    """`result` (the mode's merge of `datas`, least specific first) with every key that has a
    strategy replaced by that strategy's fold of its values."""
    named: dict[str, Strategy] = {}
    for data in datas:
        for key in data or ():
            if key not in named:
                strategy = strategies.of(key)
                if strategy is not None:
                    named[key] = strategy
    if not named:
        return result
    result = dict(result)
    for key, strategy in named.items():
        values = [data[key] for data in reversed(datas) if data and key in data]
        result[key] = fold(values, strategy)
    return result


def fold(values: Iterable[Any], strategy: Strategy) -> Any:
    """Puppet's merge of one key's values, most specific first (never mutates them)."""
    memo: Any = _NOT_FOUND
    for value in values:
        value = copy.deepcopy(value)
        if memo is _NOT_FOUND:
            memo = _flatten(value) if strategy.name == UNIQUE else value
            if strategy.name == FIRST:
                return memo
        elif strategy.name == UNIQUE:
            memo = _union(_flatten(memo), _flatten(value))
        elif strategy.name == HASH:
            memo = {**value, **memo} if _both_mappings(memo, value) else memo
        else:
            memo = deep_merge(memo, value, strategy)
    return None if memo is _NOT_FOUND else memo


_NOT_FOUND = object()


def _both_mappings(a: Any, b: Any) -> bool:
    return isinstance(a, dict) and isinstance(b, dict)


def _flatten(value: Any) -> list[Any]:
    if not isinstance(value, list):
        return [value]
    flat: list[Any] = []
    for item in value:
        flat.extend(_flatten(item) if isinstance(item, list) else [item])
    return flat


def _identity(value: Any) -> Any:
    """Ruby's `eql?` for data: `1`, `1.0`, `"1"` and `true` differ; mappings by content, in any
    key order, whatever their keys' types (YAML keys may be numbers or booleans)."""
    if isinstance(value, dict):
        return ("map", frozenset((_identity(k), _identity(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(_identity(item) for item in value))
    return (type(value).__name__, value if _hashable(value) else repr(value))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _union(first: list[Any], second: list[Any]) -> list[Any]:
    """Ruby's `first | second`: items in order, duplicates dropped."""
    seen: set[Any] = set()
    result = []
    for item in [*first, *second]:
        identity = _identity(item)
        if identity not in seen:
            seen.add(identity)
            result.append(item)
    return result


def _truthy(value: Any) -> bool:
    return value is not None and value is not False


def deep_merge(source: Any, dest: Any, strategy: Strategy) -> Any:
    """The `deep_merge` gem's `deep_merge!(source, dest)` with Puppet's options: `source` (the
    more specific value) over `dest`. Both are the caller's copies; either may be changed."""
    prefix = strategy.knockout_prefix
    if source is None:
        return dest
    if not _truthy(dest):
        return source
    if isinstance(source, dict):
        for key, value in list(source.items()):
            if isinstance(dest, dict):
                below = dest.get(key)
                below = below if _truthy(below) else copy.copy(value)
                dest[key] = deep_merge(value, below, strategy)
            else:
                dest = _overwrite(source, dest, prefix)
        return dest
    if isinstance(source, list):
        if prefix is not None and prefix in [i for i in source if isinstance(i, str)]:
            dest = _cleared(dest)
            source[:] = [i for i in source if i != prefix]
        if not isinstance(dest, list):
            return _overwrite(source, dest, prefix)
        if prefix is not None:
            source[:] = _knock_out(source, dest, prefix)
        if (
            strategy.merge_hash_arrays
            and all(isinstance(i, dict) for i in source)
            and all(isinstance(i, dict) for i in dest)
        ):
            merged = [
                deep_merge(source[i] if i < len(source) else {}, d, strategy)
                for i, d in enumerate(dest)
            ]
            dest = merged + source[len(dest) :]
        else:
            dest = _union(dest, source)
        if strategy.sort_merged_arrays:
            dest.sort()
        return dest
    return _overwrite(source, dest, prefix)


def _knock_out(source: list[Any], dest: list[Any], prefix: str) -> list[Any]:
    """`source` without its knock-out items; each removes its target (and itself) from `dest`."""
    kept = []
    for item in source:
        target = _strip(item, prefix) if isinstance(item, str) else item
        if target != item:
            dest[:] = [d for d in dest if d != target and d != item]
        else:
            kept.append(item)
    return kept


def _strip(text: str, prefix: str) -> str:
    return re.sub("^" + re.escape(prefix), "", text, flags=re.MULTILINE)


def _cleared(value: Any) -> Any:
    """Ruby's `clear_or_nil`: an emptied array, mapping or string; None for anything else."""
    if isinstance(value, list | dict):
        value.clear()
        return value
    if isinstance(value, str):
        return ""
    return None


def _overwrite(source: Any, dest: Any, prefix: str | None) -> Any:
    """`overwrite_unmergeables`: a string with the knock-out prefix empties the value; an
    array's knock-out items are dropped."""
    if prefix is None:
        return source
    if isinstance(source, str):
        return source if _strip(source, prefix) == source else ""
    if isinstance(source, list):
        source[:] = [i for i in source if not (isinstance(i, str) and _strip(i, prefix) != i)]
    return source
