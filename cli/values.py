"""Values from the command line and from stdin or files, with the Fuel client's type rules.

A value comes from exactly one source:

- `--type T --value V` where T is int, str, json, yaml or bool (bool takes 1/true/0/false in any
  case); `--value` without `--type` is a usage error;
- `--type null` alone (no `--value`);
- `--format json|yaml`: the value is read from stdin (or a file); YAML takes the first document
  of the stream and warns if there are more.

Input is held to the push gate's rules, so what the CLI writes a `git push` could have written:
it must be UTF-8, and YAML or JSON must not repeat a key in one mapping (either would keep the
last value without a word). Mistakes in the options are usage errors (exit 2); a stream that
breaks those rules or does not parse is bad input (exit 1). Every value is normalised to what
JSON can carry (dates become ISO strings, keys become strings), so a local store and a server
store the same thing.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

import click

from gitstore import keypaths, yamlio
from gitstore.errors import InvalidInput
from gitstore.layout import parse_levels
from gitstore.names import check_identifier, check_level_value, is_number

#: The type of every `--env` option: ids start at 1, so `-e -1` is a usage error naming the
#: option, not a request for a route that cannot exist.
ENV_ID = click.IntRange(min=1)
TYPES = ("null", "int", "str", "json", "yaml", "bool")
STREAM_FORMATS = ("json", "yaml")
_TRUE = ("1", "true")
_FALSE = ("0", "false")


# -- option callbacks ----------------------------------------------------------------------
def levels_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> list[tuple[str, str]]:
    """`--level nodes=1,role=compute` as level pairs; a malformed part is a usage error."""
    if value is None:
        return []
    try:
        pairs = parse_levels(value)
        for level, level_value in pairs:
            check_identifier(level, "level name")
            check_level_value(level_value, level)
    except InvalidInput as exc:
        raise click.BadParameter(exc.message, ctx, param) from None
    return pairs


def key_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A dotted key path `a.b.0`; an empty segment is a usage error."""
    if value is not None:
        try:
            keypaths.split_dotted(value)
        except InvalidInput as exc:
            raise click.BadParameter(exc.message, ctx, param) from None
    return value


def version_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--version N|REVISION`: an empty value is a usage error (not "the latest")."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "must be a version number or a git revision, not empty", ctx, param
        )
    return value


def list_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> list | None:
    """A comma-separated list (`a,b`); `''` or `[]` is the empty list; all-digit items are ids."""
    if value is None:
        return None
    if value.strip() in ("", "[]"):
        return []
    items = [item.strip() for item in value.split(",")]
    if "" in items:
        raise click.BadParameter(f"{value!r} has an empty item", ctx, param)
    return [int(item) if is_number(item) else item for item in items]


# -- typed values --------------------------------------------------------------------------
def typed_value(
    type_: str | None,
    value: str | None,
    fmt: str | None,
    *,
    value_flag: str = "--value",
    format_flag: str = "--format",
    stream: Any = None,
    source: str = "<stdin>",
) -> Any:
    """The value the options describe (see the module docstring); `stream` is read for fmt."""
    _check_sources(type_, value, fmt, value_flag, format_flag)
    if type_ == "null":
        return None
    if type_ is not None:
        return jsonable(cast(type_, value or "", value_flag))
    text = read_text(stream or sys.stdin, source)
    return jsonable(parse_stream(text, fmt or "yaml", source))


def read_text(stream: Any, source: str) -> str:
    """All of `stream` (stdin or a file, text or binary), which must be UTF-8.

    The bytes are read and decoded here: a text stream would fail inside its own read, or
    (stdin under surrogateescape) inside the YAML parser, with a traceback.
    """
    data = getattr(stream, "buffer", stream).read()
    return data if isinstance(data, str) else decoded(data, source)


def decoded(data: bytes, source: str) -> str:
    """`data` as UTF-8 text; else bad input naming `source` and where the first bad byte is."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(
            f"{source} is not UTF-8: byte 0x{data[exc.start]:02x} at line {line}", path=source
        ) from None


def _check_sources(
    type_: str | None, value: str | None, fmt: str | None, flag: str, fmt_flag: str
) -> None:
    if value is not None and type_ is None:
        raise click.UsageError(f"{flag} needs --type ({'|'.join(TYPES)})")
    if value is not None and fmt is not None:
        raise click.UsageError(
            f"{flag} and {fmt_flag} exclude each other: {fmt_flag} "
            f"describes stdin; give --type for {flag}"
        )
    if type_ == "null" and value is not None:
        raise click.UsageError(f"--type null takes no {flag}")
    if type_ is not None and fmt is not None:
        raise click.UsageError(f"--type describes {flag}; to read stdin give only {fmt_flag}")
    if type_ not in (None, "null") and value is None:
        raise click.UsageError(f"--type {type_} needs {flag}")
    if type_ is None and fmt is None:
        raise click.UsageError(
            f"give --type and {flag}, --type null, or {fmt_flag} json|yaml to read stdin"
        )


def cast(type_: str, value: str, flag: str = "--value") -> Any:
    """`value` read as `type_`; a value that does not fit is a usage error naming it."""
    if type_ == "str":
        return value
    if type_ == "bool":
        if value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
        raise click.UsageError(f"{flag} {value!r} is not a bool: use 1, true, 0 or false")
    if type_ == "int":
        try:
            return int(value)
        except ValueError:
            raise click.UsageError(f"{flag} {value!r} is not an int") from None
    try:
        if type_ == "json":
            return load_json(value)
        return yamlio.load(value, path=flag, strict=True)
    except (ValueError, InvalidInput) as exc:
        detail = exc.message if isinstance(exc, InvalidInput) else str(exc)
        raise click.UsageError(f"{flag} is not valid {type_}: {detail}") from None


def parse_stream(text: str, fmt: str, source: str) -> Any:
    """A JSON document, or the first YAML document (warning on stderr if there are more)."""
    if not text.strip():
        raise InvalidInput(f"{source} is empty; a {fmt} document is expected", path=source)
    if fmt == "json":
        try:
            return load_json(text)
        except ValueError as exc:
            raise InvalidInput(f"{source}: JSON does not parse: {exc}", path=source) from exc
    document, count = yamlio.load_all_first(text, path=source)
    if count > 1:
        click.echo(
            f"Warning: {source} holds {count} YAML documents; only the first is used", err=True
        )
    return document


def load_json(text: str) -> Any:
    """`json.loads`, refusing a key repeated in one object (ValueError naming it), as YAML input
    is refused: JSON would keep the last value without a word."""
    return json.loads(text, object_pairs_hook=_unrepeated)


def _unrepeated(pairs: list[tuple[str, Any]]) -> dict:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"key {key!r} is repeated in one mapping")
        found[key] = value
    return found


def jsonable(data: Any) -> Any:
    """`data` as JSON would carry it: dates as ISO strings, mapping keys as strings."""
    if isinstance(data, dict):
        return {_key(k): jsonable(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [jsonable(item) for item in data]
    if isinstance(data, datetime.date | datetime.datetime):
        return data.isoformat()
    return data


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, datetime.date | datetime.datetime):
        return key.isoformat()
    return json.dumps(key)  # what json.dumps makes of 1, 1.5, true and null keys
