"""The regular expressions of a resource schema (`pattern`, `patternProperties`), run on the
values and keys of a document with a time budget (docs/security.md, "Schema patterns").

jsonschema runs them with Python's `re`, which backtracks: `^(a+)+$` on `aaaa…a!` doubles its
time with every character, and a write of such a value held a worker until it ended.
The keywords that match a pattern are replaced here by the same code run through the `regex`
package, whose syntax and results are `re`'s (its default version is `re`-compatible) but whose
matching can be stopped: all the patterns one document meets share `PATTERN_SECONDS`. A linear
engine (jsonschema_rs's Rust `regex`, linear in the text) would remove the cost but
not keep the results: it follows ECMA-262 (`$` does not match before a final newline, `\\d` is
ASCII) and refuses look-around, so schemas that work today would judge differently.

`unevaluatedProperties` matches `patternProperties` deep inside jsonschema where no keyword can
reach it; `check` refuses a schema that holds both.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import jsonschema
import regex
from jsonschema.exceptions import ValidationError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

#: What every pattern one document meets may take together, in seconds: ordinary patterns
#: take microseconds, so only one that backtracks reaches it.
PATTERN_SECONDS = 1.0


class PatternError(Exception):
    """A pattern could not judge a value: it ran out of the document's budget, or `regex`
    does not compile what `re` did."""

    def __init__(self, pattern: str, why: str) -> None:
        super().__init__(f"pattern {pattern!r} {why}")
        self.pattern = pattern


class Budget(jsonschema.FormatChecker):
    """The time one document's patterns share, carried by its validator: jsonschema hands each
    keyword the validator and copies its `format_checker` into every subschema's, and no other
    field of it can carry a value. It checks no format, as a validator without one does.
    """

    def __init__(self, seconds: float = PATTERN_SECONDS) -> None:
        super().__init__(formats=())
        self.deadline = time.monotonic() + seconds


def errors(validator: Any, document: Any, seconds: float = PATTERN_SECONDS) -> list[Any]:
    """Every schema error of `document`, the patterns it meets sharing `seconds` (PatternError
    when they run out). `validator` comes from `bounded`."""
    return list(validator.evolve(format_checker=Budget(seconds)).iter_errors(document))


#: A group calling a group, or the whole pattern (`(?R)`, `(?1)`, `(?-1)`, `(?&name)`,
#: `(?P>name)`): `regex` has it, `re` has not, and a call of itself with nothing to consume
#: grew a worker's memory faster than the time budget could stop it (a MemoryError).
_RECURSION = re.compile(r"\(\?(?:R\)|[+-]?[0-9]+\)|&|P>)")
RECURSION = "uses recursion ((?R), (?1), (?&name)), which is not supported"


def recursive(pattern: str) -> bool:
    """Whether `pattern` calls a group or itself."""
    return _RECURSION.search(pattern) is not None


def search(pattern: str, text: str, budget: Budget | None = None) -> bool:
    """`re.search(pattern, text)`, stopped (PatternError) when `budget` runs out (None: it
    has `PATTERN_SECONDS` of its own)."""
    if recursive(pattern):
        raise PatternError(pattern, RECURSION)
    left = (budget.deadline - time.monotonic()) if budget is not None else PATTERN_SECONDS
    too_slow = f"took longer than {PATTERN_SECONDS:g} s (it backtracks: rewrite it)"
    if left <= 0:
        raise PatternError(pattern, too_slow)
    try:
        return regex.search(pattern, text, timeout=left) is not None
    except TimeoutError as exc:
        raise PatternError(pattern, too_slow) from exc
    except regex.error as exc:
        raise PatternError(pattern, f"does not compile: {exc}") from exc


def bounded(cls: type[Validator]) -> type[Validator]:
    """`cls` with the keywords that match patterns running them through `search`."""
    return _BOUNDED.get(cls) or _bound(cls)


def _bound(cls: type[Validator]) -> type[Validator]:
    keywords = {"pattern": _pattern, "patternProperties": _pattern_properties}
    keywords["additionalProperties"] = _additional_properties
    extended: type[Validator] = jsonschema.validators.extend(
        cls, {k: f for k, f in keywords.items() if k in cls.VALIDATORS}
    )
    return extended


def _budget(validator: Any) -> Budget | None:
    found = validator.format_checker
    return found if isinstance(found, Budget) else None


def check(schema_objects: Iterable[dict[str, Any]]) -> str | None:
    """Why a schema made of `schema_objects` cannot bound its patterns (None when it can)."""
    objects = list(schema_objects)
    seen = {k for contents in objects for k in contents}
    if "unevaluatedProperties" in seen and "patternProperties" in seen:
        return "unevaluatedProperties cannot be combined with patternProperties"
    for contents in objects:
        patterns = [contents.get("pattern"), *(contents.get("patternProperties") or {})]
        for pattern in patterns:
            if isinstance(pattern, str) and recursive(pattern):
                return f"pattern {pattern!r} {RECURSION}"
    return None


# -- jsonschema's keywords (jsonschema/_keywords.py), with `search` for `re.search` ----------
# (`validator` is jsonschema's own validator class: its keyword callbacks take it as Any)
def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(patrn, instance, _budget(validator)):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Any, pattern_properties: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if search(pattern, key, _budget(validator)):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, ap: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = set(_additional(instance, schema, _budget(validator)))
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            listed = ", ".join(repr(extra) for extra in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


def _additional(
    instance: dict[str, Any], schema: dict[str, Any], budget: Budget | None
) -> Iterator[Any]:
    properties = schema.get("properties", {})
    patterns = "|".join(schema.get("patternProperties", {}))
    for key in instance:
        if key not in properties and not (patterns and search(patterns, key, budget)):
            yield key


#: The drafts `jsonschema.validators.validator_for` answers with, bounded once at import.
_DRAFTS = (
    jsonschema.Draft3Validator,
    jsonschema.Draft4Validator,
    jsonschema.Draft6Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft202012Validator,
)
_BOUNDED: dict[type[Validator], type[Validator]] = {cls: _bound(cls) for cls in _DRAFTS}
