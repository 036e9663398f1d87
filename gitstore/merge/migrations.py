"""Carrying an environment's settings into a newer release: migration rules and the two merges.

Pure functions on plain data. A release's `upgrade.yaml` declares, in data, how settings written
for older releases change shape (`{rules: [{since, op, path, value?, to?}]}`); a clone applies
every rule whose `since` lies in (original release version, target release version], oldest
first, then merges the result into the target release's defaults:

- editable settings (`{section: {key: {value, label, type, ...}}}`): for every key both sides
  have, the original's `value` replaces the default's; the rest of the attribute (label, type,
  restrictions) is the new release's, keys only in the original are dropped, section `metadata`
  is never copied, and sections a release owns outright (`repo_setup`) keep the new defaults;
- generated settings (credentials): a deep merge in which the original's values win.

Release versions look like Fuel's (`newton-10.0`, `2015.1.0-7.0`) or plain (`9.0`): the part
after the last `-` is compared as a tuple of integers.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from gitstore.bodies import Body
from gitstore.errors import InvalidInput

OPS = ("set", "delete", "rename", "text_to_list")
#: The two documents a rule path may start with.
ROOTS = ("editable", "generated")
#: Sections whose content belongs to a release (package repositories), never to an environment.
RELEASE_OWNED_SECTIONS = ("repo_setup",)
METADATA = "metadata"
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")
RULES_BODY = Body("upgrade rules", ("rules",), example='{"rules": [...]}')
RULE_BODY = Body("upgrade rule", ("since", "op", "path", "value", "to"))

Version = tuple[int, ...]


# -- versions ---------------------------------------------------------------------------------
def parse_version(text: Any, what: str = "version") -> Version:
    """`newton-10.0` -> (10, 0); `9.0` -> (9, 0). InvalidInput names `what` otherwise."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise InvalidInput(f"{what} {text!r} is not a release version like '9.0'", key=what)
    tail = text.rsplit("-", 1)[-1].strip()
    if not _VERSION.match(tail):
        raise InvalidInput(
            f"{what} {text!r} is not a release version like 'newton-10.0' or '9.0'", key=what
        )
    return tuple(int(part) for part in tail.split("."))


# -- rules ------------------------------------------------------------------------------------
def check_rules(document: Any) -> dict[str, Any]:
    """An `upgrade.yaml` document `{rules: [...]}` whose every rule is well formed."""
    rules = RULES_BODY.check(document).get("rules") or []
    if not isinstance(rules, list):
        raise InvalidInput("field 'rules' must be a list", key="rules")
    for index, rule in enumerate(rules):
        _check_rule(rule, f"rules[{index}]")
    return {"rules": rules}


def _check_rule(rule: Any, where: str) -> None:
    rule = RULE_BODY.check(rule, where)
    parse_version(rule.get("since"), f"{where}.since")
    if rule.get("op") not in OPS:
        raise InvalidInput(f"{where}.op must be one of {', '.join(OPS)}", key="rules")
    _check_path(rule.get("path"), f"{where}.path")
    if rule["op"] == "set" and "value" not in rule:
        raise InvalidInput(f"{where}: op 'set' needs a 'value'", key="rules")
    if rule["op"] == "rename":
        if "to" not in rule:
            raise InvalidInput(f"{where}: op 'rename' needs a 'to'", key="rules")
        _check_path(rule["to"], f"{where}.to")
    elif "to" in rule:
        raise InvalidInput(f"{where}: only op 'rename' takes 'to'", key="rules")


def _check_path(path: Any, where: str) -> list[str]:
    parts = path.split(".") if isinstance(path, str) else []
    if len(parts) < 2 or parts[0] not in ROOTS or "" in parts:
        raise InvalidInput(
            f"{where} {path!r} must be a dotted path starting with 'editable.' or 'generated.'",
            key="rules",
        )
    return parts


def applicable(
    rules: list[dict[str, Any]], original: Version, target: Version
) -> list[dict[str, Any]]:
    """The rules with `original < since <= target`, oldest `since` first (stable)."""
    chosen = [r for r in rules if original < parse_version(r["since"]) <= target]
    return sorted(chosen, key=lambda r: parse_version(r["since"]))


def apply_rules(settings: Mapping[str, Any], rules: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `{editable, generated}` with each rule applied in order.

    A rule whose path is absent changes nothing: settings of an environment need not hold
    every key a release ever had.
    """
    result = copy.deepcopy(dict(settings))
    for rule in rules:
        _APPLY[rule["op"]](result, rule["path"].split("."), rule)
    return result


def _parent(
    document: dict[str, Any], parts: list[str], create: bool = False
) -> dict[str, Any] | None:
    node: Any = document
    for part in parts[:-1]:
        if not isinstance(node, dict):
            return None
        if part not in node and create:
            node[part] = {}
        node = node.get(part)
    return node if isinstance(node, dict) else None


def _set(document: dict[str, Any], parts: list[str], rule: dict[str, Any]) -> None:
    parent = _parent(document, parts, create=True)
    if parent is not None:
        parent[parts[-1]] = copy.deepcopy(rule["value"])


def _delete(document: dict[str, Any], parts: list[str], rule: dict[str, Any]) -> None:
    parent = _parent(document, parts)
    if parent is not None:
        parent.pop(parts[-1], None)


def _rename(document: dict[str, Any], parts: list[str], rule: dict[str, Any]) -> None:
    parent = _parent(document, parts)
    if parent is None or parts[-1] not in parent:
        return
    value = parent.pop(parts[-1])
    target = rule["to"].split(".")
    new_parent = _parent(document, target, create=True)
    if new_parent is not None:
        new_parent[target[-1]] = value


def _text_to_list(document: dict[str, Any], parts: list[str], rule: dict[str, Any]) -> None:
    """A comma-separated string becomes a list; on a Fuel attribute (`{value, type}`) its
    `value` is converted and its `type` becomes `text_list`."""
    parent = _parent(document, parts)
    if parent is None or parts[-1] not in parent:
        return
    node = parent[parts[-1]]
    if isinstance(node, dict) and "value" in node:
        node["value"] = text_list(node["value"])
        if "type" in node:
            node["type"] = "text_list"
    else:
        parent[parts[-1]] = text_list(node)


def text_list(value: Any) -> Any:
    """`"8.8.8.8, 8.8.4.4"` -> `["8.8.8.8", "8.8.4.4"]`; a list or non-string stays as it is."""
    if not isinstance(value, str):
        return value
    return [item.strip() for item in value.split(",") if item.strip()]


_APPLY = {"set": _set, "delete": _delete, "rename": _rename, "text_to_list": _text_to_list}


# -- the two merges ---------------------------------------------------------------------------
def merge_editable(defaults: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, Any]:
    """The new release's editable `defaults` with the original's values for keys both have."""
    result = copy.deepcopy(dict(defaults))
    for section, attributes in result.items():
        theirs = original.get(section)
        if (
            section in RELEASE_OWNED_SECTIONS
            or not isinstance(attributes, dict)
            or not isinstance(theirs, Mapping)
        ):
            continue
        for key, attribute in attributes.items():
            if key != METADATA and key in theirs:
                attributes[key] = _carried(attribute, theirs[key])
    return result


def _carried(default: Any, original: Any) -> Any:
    """A Fuel attribute keeps its new definition and takes the original's `value`; any other
    setting is the original's whole."""
    if isinstance(default, dict) and "value" in default:
        if isinstance(original, Mapping) and "value" in original:
            return {**default, "value": copy.deepcopy(original["value"])}
        return default
    return copy.deepcopy(original)


def merge_generated(defaults: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, Any]:
    """A deep merge of generated settings in which the original's values win.

    Not `deepmerge`: its Merger edits the base in place and shares the merged-in leaves, while
    both inputs here may come from parse caches and the result is sealed and written (so every
    leaf is copied); eight lines say the rule exactly, without a dependency."""
    result = copy.deepcopy(dict(defaults))
    for key, value in original.items():
        mine = result.get(key)
        if isinstance(mine, dict) and isinstance(value, Mapping):
            result[key] = merge_generated(mine, value)
        else:
            result[key] = copy.deepcopy(value)
    return result
