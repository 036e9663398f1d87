"""Validation of every name and path segment that comes from a request.

Nothing from a request touches a git tree before it passes one of these checks, so no request
can address a path outside the document it names.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any, TypeGuard

from gitstore.errors import InvalidInput

#: Top-level names of an environment repository that are not levels (docs/design.md, "The store
#: on disk").
RESERVED_TOP_LEVEL = frozenset(
    {"environment.yaml", "global", "graphs", "inventory", "settings", "transactions", "network"}
)
#: Level names that would make request paths ambiguous.
RESERVED_LEVEL_NAMES = RESERVED_TOP_LEVEL | {"resources"}
#: Resource name segments that would make request paths ambiguous.
RESERVED_RESOURCE_SEGMENTS = frozenset({"values", "overrides", "keys"})

_IDENTIFIER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MAX_SEGMENT = 200
#: The most digits `int` converts (Python's guard against quadratic conversions).
MAX_DIGITS = sys.int_info.default_max_str_digits
#: Unicode categories a name may not hold: format characters (zero-width, bidirectional
#: controls: a second `node-1` that looks like the first), line and paragraph separators,
#: surrogates and private use.
_INVISIBLE = frozenset({"Cf", "Zl", "Zp", "Cs", "Co"})
_COMMIT_ID = re.compile(r"[0-9a-fA-F]{40}")
_ABBREVIATED_ID = re.compile(r"[0-9a-fA-F]{4,40}")


def is_number(text: object) -> TypeGuard[str]:
    """`text` is a string of ASCII digits that `int` converts. `str.isdigit` also holds for `²`
    or `①`, which `int` refuses, and `int` refuses more than `MAX_DIGITS` digits (a number that
    long names nothing a store holds): every number read from a request is recognised here,
    never with `isdigit`."""
    return isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS


def is_commit_id(text: object) -> bool:
    """`text` is a full commit id: 40 hexadecimal digits, either case (what a `version` pins
    for ever; an abbreviated id may become ambiguous as history grows)."""
    return isinstance(text, str) and _COMMIT_ID.fullmatch(text) is not None


def looks_like_commit_id(text: object) -> bool:
    """`text` could be read as a commit id, whole or abbreviated (4 to 40 hex digits): a name
    that does is refused for labels and pushed refs, so `version=` never has two meanings."""
    return isinstance(text, str) and _ABBREVIATED_ID.fullmatch(text) is not None


def check_segment(value: object, field: str) -> str:
    """A single path segment: no `/`, not `.`/`..`, no leading `.`, no control characters, no
    invisible ones (zero-width, bidirectional controls)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field} must be a non-empty string", key=field)
    if len(value) > _MAX_SEGMENT:
        raise InvalidInput(f"{field} {value[:40]!r}... is longer than {_MAX_SEGMENT}", key=field)
    for separator in ("/", "\\"):
        if separator in value:
            raise InvalidInput(f"{field} {value!r} must not contain '{separator}'", key=field)
    if value.startswith("."):
        raise InvalidInput(f"{field} {value!r} must not start with '.'", key=field)
    if _CONTROL.search(value):
        raise InvalidInput(f"{field} {value!r} contains control characters", key=field)
    _check_visible(value, field)
    return value


def _check_visible(value: str, field: str) -> None:
    """Refuse characters that do not show, so two names that look the same are the same."""
    if value.isascii():
        return
    byte = not_utf8(value)
    if byte is not None:
        raise InvalidInput(
            f"{field} '{shown(value)}' is not valid UTF-8 (byte 0x{byte:02X})", key=field
        )
    for char in value:
        if unicodedata.category(char) in _INVISIBLE:
            name = unicodedata.name(char, "unnamed character")
            raise InvalidInput(
                f"{field} {value!r} contains U+{ord(char):04X} {name}, an invisible or "
                "direction-changing character",
                key=field,
            )


def not_utf8(text: str) -> int | None:
    """The first byte of `text` that was not UTF-8 (None: none was). A git path name is bytes;
    Python decodes each byte that is not UTF-8 to a lone surrogate U+DC80..U+DCFF."""
    for char in text:
        if 0xDC80 <= ord(char) <= 0xDCFF:
            return ord(char) - 0xDC00
    return None


def shown(text: str) -> str:
    """`text` as it can be printed and logged: a byte that was not UTF-8 as `\\xff`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_level_value(value: object, level: str = "level") -> str:
    """A level value such as `node-1`: one safe path segment."""
    return check_segment(value, f"value of level {level!r}")


def check_identifier(value: object, field: str) -> str:
    """A plain identifier (component, level, graph type names): letters, digits, `_.-`."""
    if not _IDENTIFIER.match(check_segment(value, field)):
        raise InvalidInput(
            f"{field} {value!r} may contain only letters, digits, '_', '.' and '-'", key=field
        )
    return value  # type: ignore[return-value]


def check_component_name(value: object, field: str = "name") -> str:
    """A component name: an identifier that is not all digits, because a reference to a
    component (`component_id`, an environment's `components`) reads digits as its id."""
    name = check_identifier(value, field)
    _check_not_number(name, f"component name {name!r}", field)
    return name


def _check_not_number(value: str, what: str, key: str) -> None:
    if is_number(value):
        raise InvalidInput(f"{what} must not be all digits", key=key)


def check_level_name(value: object) -> str:
    """A hierarchy level name: an identifier that is not reserved."""
    name = check_identifier(value, "hierarchy level")
    if name in RESERVED_LEVEL_NAMES:
        raise InvalidInput(f"hierarchy level {name!r} is a reserved name", key="hierarchy_levels")
    return name


def check_resource_name(value: object) -> str:
    """A resource name: `/`-separated identifiers, none reserved, not all digits."""
    if not isinstance(value, str) or not value:
        raise InvalidInput("resource name must be a non-empty string", key="name")
    for segment in value.split("/"):
        check_identifier(segment, "resource name segment")
        if segment in RESERVED_RESOURCE_SEGMENTS:
            raise InvalidInput(
                f"resource name {value!r}: segment {segment!r} is reserved", key="name"
            )
    _check_not_number(value, f"resource name {value!r}", "name")
    return value


def parse_flag(raw: str | None, name: str) -> bool:
    """A query flag: absent = off; bare, `1/true/yes` = on; `0/false/no` = off; else invalid."""
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in ("", "1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    raise InvalidInput(f"flag {name!r} must be one of 1/true/yes or 0/false/no, not {raw!r}")


#: The longest commit message a request may give (one line).
MAX_MESSAGE = 500


def commit_message(message: Any, default: str) -> str:
    """A request's commit `message` (one printable line of at most MAX_MESSAGE characters), or
    `default` when it gives none; InvalidInput naming `message` otherwise."""
    if message is None:
        return default
    if (
        not isinstance(message, str)
        or not message.strip()
        or len(message) > MAX_MESSAGE
        or any(ord(c) < 32 for c in message)
    ):
        raise InvalidInput(
            f"'message' must be one printable line of at most {MAX_MESSAGE} characters",
            key="message",
        )
    return message
