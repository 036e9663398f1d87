"""The read side: secret leaves masked by default, revealed (opened) for those allowed.

Masking needs no key: a leaf is masked when it is a sealed value, or when a rule makes it secret
(a plain value at a secret path, stored before the rule existed). It becomes `"******"` and its
dotted key path is listed. Revealing opens each sealed leaf at the file it is stored in: for an
effective document that is the most specific layer holding the very same ciphertext at that key
path. A sealed value never passes through as if it were a value: it opens or it is an error.

Inputs are often shared cached objects: every function here returns new containers (or the input
itself when nothing is masked) and never edits what it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gitstore.backend.cache import Caches
from gitstore.errors import Unavailable, Undecryptable
from gitstore.secrets import cipher
from gitstore.secrets.cipher import PREFIX, Place
from gitstore.secrets.keyring import Keys
from gitstore.secrets.leaves import MISSING, rebuild, replaced, value_at
from gitstore.secrets.rules import WILDCARD, Rules, default_match
from gitstore.secrets.seal import MASK

#: What the store keeps of masking (`Caches`): masked documents by (the caller's id of the
#: document's inputs, rules), an entry keeping a whole effective document alive (~50 KB for a
#: Fuel node); the rules compiled (`_Plan`, equal rules share one); and per (rules, inherited)
#: the last masked top-level entry of each key name: a table of key -> (its value, masked,
#: masked paths), reused while a document holds the very same value at that key (see
#: `_mask_entries`). A table is a plain dict, asked once per mapping or list entry, where an
#: LRUCache's lock and metric, or hashing the rules, cost more than walking a small entry. A
#: new value at a key replaces the old, so a table holds one value per key name; it is emptied
#: past `MAX_ENTRIES`. Without `Caches`, masking compiles the rules and walks every entry.
MAX_ENTRIES = 4096
#: (file, parsed document) of the layers that may hold a value, most specific first.
Sources = Sequence[tuple[str, Any]]
NOTE = "secret changed"
#: What masking walks into (a tuple: `dict | list` in an isinstance costs more).
_CONTAINERS = (dict, list)


def _ancestors_secret(rules: Rules, base: tuple[str, ...]) -> bool:
    return any(rules.starts_here(base[:depth]) for depth in range(len(base)))


def dotted(path: Sequence[str]) -> str:
    return ".".join(path)


def mask(value: Any, rules: Rules, base: tuple[str, ...] = ()) -> tuple[Any, list[str]]:
    """`value` (found at key path `base`) with secret leaves masked, and their dotted paths."""
    result, paths = mask_paths(value, rules, base)
    return result, [dotted(path) for path in paths]


def mask_paths(
    value: Any, rules: Rules, base: tuple[str, ...] = (), caches: Caches | None = None
) -> tuple[Any, list[tuple[str, ...]]]:
    """`mask`, with the masked key paths as tuples; a document's entries kept in `caches`."""
    if not base and isinstance(value, dict):
        return _mask_entries(value, rules, caches)
    return _mask_walk(value, rules, base, _ancestors_secret(rules, base))


def _mask_walk(
    value: Any, rules: Rules, base: tuple[str, ...], inherited: bool
) -> tuple[Any, list[tuple[str, ...]]]:
    masked: list[tuple[str, ...]] = []

    def leaf(item: Any, stored: Any, path: tuple[str, ...], secret: bool) -> Any:
        if cipher.is_sealed(item) or (secret and item is not None):
            masked.append(path)
            return MASK
        return item

    return rebuild(value, rules, leaf, MISSING, base, inherited), masked


def _mask_entries(
    document: dict, rules: Rules, caches: Caches | None
) -> tuple[dict, list[tuple[str, ...]]]:
    """A document masked entry by entry, each mapping or list entry kept in `caches`.

    A cold lookup's effective document shares most of its entries with the layers it was
    merged from, and so with every other node's: masking walked every leaf of each (much of a
    cold lookup, docs/performance.md); now only the node's own entries, with
    the rules compiled once (`_Plan`). It relies on merged documents sharing their layers'
    entries by identity (the identity contract, gitstore/served.py).
    """
    inherited = rules.starts_here(())  # what `rebuild` passes the root's children
    if caches is None:
        plan, kept = _Plan(rules), {}
    else:
        plan = caches.secret_rules.get_or_compute(rules, lambda: _Plan(rules))
        kept = caches.masked_entries.get_or_compute((rules, inherited), dict)
    plain = not (inherited or plan.root or plan.everything)
    entry = plan.plain_entry if plain else plan.entry
    names = plan.names if plain and plan.defaults else {}  # name -> a default pattern matches
    result: dict | None = None
    masked: list[tuple[str, ...]] = []
    for key, child in document.items():
        if names.get(key) is False and not isinstance(child, _CONTAINERS):
            # A scalar at a key name known to be plain (a string: `names` holds strings)
            # and with no rule: `plain_entry` inlined (asked of ~150 entries per lookup).
            if isinstance(child, str) and child.startswith(PREFIX):
                masked.append((key,))
                shown = MASK
            else:
                shown = child
        elif isinstance(child, _CONTAINERS):
            found = kept.get(key)
            if found is None or found[0] is not child:
                paths: list[tuple[str, ...]] = []
                found = (child, entry(key, child, inherited, paths), tuple(paths))
                _keep_entry(kept, key, found)
            shown = found[1]
            if found[2]:
                masked.extend(found[2])
        else:
            shown = entry(key, child, inherited, masked)
        if shown is not child:  # a copy of the document, changed only where masked
            if result is None:
                result = dict(document)
            result[key] = shown
    return (document if result is None else result), masked


def _keep_entry(kept: dict, key: Any, entry: tuple) -> None:
    if len(kept) >= MAX_ENTRIES:
        kept.clear()  # the shared entries come back at the next lookup of each
    kept[key] = entry


#: Pattern trie: segment (or `*`) -> child node; `_END` marks where a pattern ends.
_Trie = dict
_END = None  # a key no segment is (segments are strings)
_NO_LIVE: tuple = ()


class _Plan:
    """`_mask_walk` with the rules compiled: the exact same result and masked paths, in the
    same order (tests/secrets/test_mask_entries.py compares the two).

    Below a key no pattern can still reach and that no rule made secret, only a key's name
    (the default patterns, kept per name) and a leaf's value (sealed or not) matter: such
    subtrees are walked without a key path or a rule call per leaf (a rule call and a seal
    check per leaf were a visible share of a cold lookup).
    """

    def __init__(self, rules: Rules) -> None:
        self.everything = rules.everything
        self.defaults = rules.defaults
        self.root: tuple = _NO_LIVE
        if rules.patterns:
            trie: _Trie = {}
            for pattern in rules.patterns:
                node = trie
                for segment in pattern:
                    node = node.setdefault(segment, {})
                node[_END] = True
            self.root = (trie,)
        self.names: dict[str, bool] = {}  # the default patterns' verdict per key name

    def entry(self, key: Any, value: Any, inherited: bool, masked: list) -> Any:
        """A top-level entry masked (`inherited`: the root is secret)."""
        return self._child(value, (), str(key), inherited, self.root, masked)

    def plain_entry(self, key: Any, value: Any, inherited: bool, masked: list) -> Any:
        """`entry` where no pattern applies at the top and the root is not secret."""
        segment = key if type(key) is str else str(key)
        if self.defaults and self._named(segment):
            return _all_masked(value, (segment,), masked)
        if isinstance(value, str):
            if value.startswith(PREFIX):
                masked.append((segment,))
                return MASK
            return value
        if isinstance(value, dict):
            return self._walk_map(value, (segment,), masked)
        if isinstance(value, list):
            return self._walk_list(value, (segment,), masked)
        return value

    def _named(self, segment: str) -> bool:
        found = self.names.get(segment)
        if found is None:  # a bounded table: key names are the stored documents'
            if len(self.names) >= MAX_ENTRIES:
                self.names.clear()
            found = self.names[segment] = default_match(segment)
        return found

    def _child(
        self, value: Any, path: tuple, segment: str, secret: bool, live: tuple, masked: list
    ) -> Any:
        """`value` at `path` + `segment` (`secret`: its parent is), masked."""
        if self.everything:
            secret = True
        elif not secret:
            if self.defaults and self._named(segment):
                secret = True
            elif live:
                live, secret = _advance(live, segment)
        if isinstance(value, _CONTAINERS):
            if secret:
                return _all_masked(value, (*path, segment), masked)
            return self._walk(value, (*path, segment), live, masked)
        if (secret and value is not None) or (isinstance(value, str) and value.startswith(PREFIX)):
            masked.append((*path, segment))
            return MASK
        return value

    def _walk(self, value: Any, path: tuple, live: tuple, masked: list) -> Any:
        """A mapping or list below no secret key, masked (new containers only where changed)."""
        if live:
            items = value.items() if isinstance(value, dict) else enumerate(value)
            return _rebuilt(
                value,
                ((k, self._child(c, path, str(k), False, live, masked)) for k, c in items),
            )
        if isinstance(value, dict):
            return self._walk_map(value, path, masked)
        return self._walk_list(value, path, masked)

    def _walk_map(self, value: dict, path: tuple, masked: list) -> dict:
        result = None
        names = self.names if self.defaults else None
        for key, child in value.items():
            segment = key if type(key) is str else str(key)
            if names is not None and names.get(segment, True) and self._named(segment):
                new = _all_masked(child, (*path, segment), masked)
            elif isinstance(child, str):
                if not child.startswith(PREFIX):
                    continue
                masked.append((*path, segment))
                new = MASK
            elif isinstance(child, _CONTAINERS):
                new = self._walk(child, (*path, segment), _NO_LIVE, masked)
            else:
                continue
            if new is not child:
                if result is None:
                    result = dict(value)
                result[key] = new
        return value if result is None else result

    def _walk_list(self, value: list, path: tuple, masked: list) -> list:
        """List indices are digits: no default pattern matches them."""
        result = None
        for index, child in enumerate(value):
            if isinstance(child, str):
                if not child.startswith(PREFIX):
                    continue
                masked.append((*path, str(index)))
                new = MASK
            elif isinstance(child, _CONTAINERS):
                new = self._walk(child, (*path, str(index)), _NO_LIVE, masked)
            else:
                continue
            if new is not child:
                if result is None:
                    result = list(value)
                result[index] = new
        return value if result is None else result


def _advance(live: tuple, segment: str) -> tuple[tuple, bool]:
    """The trie nodes still matching after `segment`, and whether a pattern ends there."""
    ahead = []
    ends = False
    for node in live:
        for child in (node.get(segment), None if segment == WILDCARD else node.get(WILDCARD)):
            if child is not None:
                ends = ends or _END in child
                if len(child) > (_END in child):
                    ahead.append(child)
    return tuple(ahead), ends


def _all_masked(value: Any, path: tuple, masked: list) -> Any:
    """`value` at a secret `path`: every leaf but None masked."""
    if isinstance(value, _CONTAINERS):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return _rebuilt(value, ((k, _all_masked(c, (*path, str(k)), masked)) for k, c in items))
    if value is None:
        return value
    masked.append(path)
    return MASK


def _rebuilt(value: dict | list, pairs: Iterable[tuple[Any, Any]]) -> Any:
    """`value` with the (key or index, new child) `pairs`, or `value` itself if none is new."""
    kept = []
    changed = False
    for key, new in pairs:
        kept.append(new)
        changed = changed or new is not (value[key])
    if not changed:
        return value
    return dict(zip(value, kept, strict=True)) if isinstance(value, dict) else kept


def mask_cached(
    caches: Caches, key: Any, document: Any, rules: Rules
) -> tuple[Any, tuple[tuple[str, ...], ...]]:
    """`mask_paths` of a document identified by `key` (immutable inputs such as blob ids),
    kept in `caches`."""

    def compute() -> tuple[Any, tuple[tuple[str, ...], ...]]:
        data, paths = mask_paths(document, rules, caches=caches)
        return data, tuple(paths)

    return caches.masked_documents.get_or_compute((key, rules), compute)


class Opener:
    """Opens sealed values of one environment repository with the keyring's keys."""

    def __init__(self, repository: str, keys: Keys | None, keyring: str = "no keyring") -> None:
        self.repository = repository
        self.keys = keys
        self.keyring = keyring

    def open_at(self, value: str, file: str, path: tuple[str, ...]) -> Any:
        place = Place(self.repository, file, path)
        if self.keys is None:
            raise Unavailable(
                f"secrets are unavailable ({self.keyring}), so the secret at "
                f"{place.named()} cannot be revealed",
                path=file,
                key=place.dotted,
            )
        return cipher.open_sealed(value, self.keys.keys, place)

    def reveal(
        self, value: Any, rules: Rules, sources: Sources | str, base: tuple[str, ...] = ()
    ) -> tuple[Any, list[str]]:
        """`value` (at key path `base`) with sealed leaves opened, and the revealed paths.

        `sources` is the file the value is stored in, or the layers it was merged from: then
        each sealed leaf opens at the first layer holding the same text at its key path.
        """
        revealed: list[str] = []

        def leaf(item: Any, stored: Any, path: tuple[str, ...], secret: bool) -> Any:
            if cipher.is_sealed(item):
                revealed.append(dotted(path))
                file = sources if isinstance(sources, str) else _source_of(item, path, sources)
                return self.open_at(item, file, path)
            if secret and item is not None:
                revealed.append(dotted(path))
            return item

        result = rebuild(value, rules, leaf, MISSING, base, _ancestors_secret(rules, base))
        return result, revealed

    def reveal_paths(
        self, document: Any, paths: Sequence[tuple[str, ...]], sources: Sources | str
    ) -> tuple[Any, list[str]]:
        """`reveal` when the secret leaves are known (from a cached mask): only they are
        visited, so the cost follows the number of secrets, not the size of the document."""
        result, revealed = document, []
        for path in paths:
            item = value_at(document, path)
            if cipher.is_sealed(item):
                file = sources if isinstance(sources, str) else _source_of(item, path, sources)
                result = replaced(result, path, self.open_at(item, file, path))
            revealed.append(dotted(path))
        return result, revealed


def _source_of(value: str, path: tuple[str, ...], sources: Sources) -> str:
    for file, document in sources:
        if value_at(document, path) == value:
            return file
    where = sources[0][0] if sources else "?"
    raise Undecryptable(
        f"the secret at {where}: key {dotted(path)!r} does not decrypt: no "
        "layer holds it at that key",
        path=where,
        key=dotted(path),
    )


# -- answers that show values of several places -------------------------------------------------
def mask_explain(data: dict, rules: Rules, opener: Opener | None = None) -> tuple[dict, list[str]]:
    """An explain answer with each key's value and layer values masked (or, with `opener`,
    opened at their own files). Returns the new answer and the masked (or revealed) paths."""
    keys, touched = [], []
    for item in data["keys"]:
        base = tuple(item["path"].split(".")) if item["path"] else ()
        layers = []
        for layer in item["layers"]:
            value, paths = _show(layer["value"], rules, base, opener, layer["file"])
            layers.append({**layer, "value": value})
            touched += paths
        winner = item["layers"][item["winner"]]["file"] if item["winner"] is not None else "?"
        value, paths = _show(item["value"], rules, base, opener, winner)
        keys.append({**item, "value": value, "layers": layers})
        touched += paths
    return {**data, "keys": keys}, list(dict.fromkeys(touched))


def _show(
    value: Any, rules: Rules, base: tuple[str, ...], opener: Opener | None, file: str
) -> tuple[Any, list[str]]:
    return mask(value, rules, base) if opener is None else opener.reveal(value, rules, file, base)


def mask_scopes(scopes: dict, rules_of: Callable[[str], Rules]) -> tuple[dict, list[str]]:
    """A diff (`{scope: {resource: {added, removed, changed}}}`) with secret values masked;
    a changed secret reads `{"old": "******", "new": "******", "note": "secret changed"}`.
    Masked paths are `<scope>:<resource>:<key>`."""
    result: dict = {}
    masked: list[str] = []
    for scope, resources in scopes.items():
        for resource, change in resources.items():
            shown, paths = mask_change(change, rules_of(resource))
            result.setdefault(scope, {})[resource] = shown
            masked += [f"{scope}:{resource}:{path}" for path in paths]
    return result, masked


def mask_change(change: dict, rules: Rules) -> tuple[dict, list[str]]:
    """One document's diff (`added`, `removed`, `changed` by dotted key) with secrets masked."""
    shown: dict = {}
    masked: list[str] = []
    for section in ("added", "removed"):
        entries = {}
        for key, value in change.get(section, {}).items():
            entries[key], paths = mask(value, rules, _split(key))
            masked += paths
        shown[section] = entries
    changed = {}
    for key, pair in change.get("changed", {}).items():
        old, old_paths = mask(pair["old"], rules, _split(key))
        new, new_paths = mask(pair["new"], rules, _split(key))
        changed[key] = {"old": old, "new": new}
        if old_paths or new_paths:
            changed[key]["note"] = NOTE
            masked += list(dict.fromkeys(old_paths + new_paths))
    shown["changed"] = changed
    return {**change, **shown}, masked


def mask_history(entries: list[dict], rules: Rules, key: str) -> tuple[list[dict], list[str]]:
    """Entries of one value's history (`old`, `new`) with secrets masked, changes noted."""
    base = _split(key)
    shown, masked = [], []
    for entry in entries:
        entry = dict(entry)
        paths: list[str] = []
        for side in ("old", "new"):
            if side in entry:
                entry[side], found = mask(entry[side], rules, base)
                paths += found
        if paths:
            entry["note"] = NOTE
            masked += paths
        shown.append(entry)
    return shown, list(dict.fromkeys(masked))


def _split(key: str) -> tuple[str, ...]:
    return tuple(key.split(".")) if key else ()
