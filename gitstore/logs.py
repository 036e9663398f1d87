"""Logging of the server, configured in one place: `dictConfig(config(format))`.

`gitstore serve` hands `config()` to gunicorn (`logconfig_dict`), which applies it in the
arbiter before forking: gunicorn's own loggers and gitstore's go through the same handler and
formatter. In `json` every line is one JSON object (`ts`, `level`, `logger`, `message`, and the
fields of the event); `text` is for people at a terminal.

Fields reach a line through `extra={"fields": {...}}`; the id of the request being answered is
added to every line logged while answering it (`request_id`, set by the API's request hooks).
Whatever a message says, `redact` masks what looks like a credential before it is written:
code must not log secrets, and this is the net under that rule.
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import json.encoder
import logging
import logging.config
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

FORMATS = ("json", "text")
#: Set by `gitstore serve` for the processes its workers start (the push gate, run by git):
#: where the server's log goes (`/proc/<server pid>/fd/2`) and in which format.
TARGET_ENV = "GITSTORE_LOG_TARGET"
FORMAT_ENV = "GITSTORE_LOG_FORMAT"
REQUEST_ID_ENV = "GITSTORE_REQUEST_ID"
#: A log label only, like `metrics.commit_source`: it tags lines and decides nothing.
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "gitstore_request_id", default=None
)

_VALUE = r"[^\s\"',;}]+"
#: (pattern, replacement) in order: a header with its scheme, a bare scheme and credential,
#: a key that names a secret (`password=`, `"db_password": "..."`, `token: ...`), our tokens.
_CREDENTIALS = (
    (
        re.compile(
            rf"(?i)\b(authorization|x-auth-token)(\s*[:=]\s*)(?:(?:basic|bearer)\s+)?{_VALUE}"
        ),
        r"\1\2***",
    ),
    (re.compile(rf"(?i)\b(basic|bearer)\s+{_VALUE}"), r"\1 ***"),
    (
        re.compile(
            rf"(?i)\b(\w*(?:password|passwd|passphrase|token|secret))\b([\"']?\s*[:=]\s*[\"']?){_VALUE}"
        ),
        r"\1\2***",
    ),
    (re.compile(r"\bgst_[A-Za-z0-9]+_[A-Za-z0-9_-]+"), "gst_***"),
)


#: A word every pattern above needs: most texts (a route, an id, a commit) have none, and one
#: search is cheaper than four substitutions (the log line of every request is redacted).
_SUSPECT = re.compile(
    r"(?i)authorization|x-auth-token|basic|bearer|password|passwd|passphrase|token|secret|gst_"
)


def redact(text: str) -> str:
    """`text` with anything that looks like a credential replaced by `***`."""
    if _SUSPECT.search(text) is None:
        return text
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text


def default_format(stream: Any = None) -> str:
    """`text` on a terminal, `json` otherwise (a service manager, a file, a pipe)."""
    stream = stream or sys.stderr
    return "text" if hasattr(stream, "isatty") and stream.isatty() else "json"


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info))
        line.update(_fields(record))
        return encodable(json.dumps(line, default=str, ensure_ascii=False))


class TextFormatter(logging.Formatter):
    """`<ts> <LEVEL> <logger>: <message> key=value ...`."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in _fields(record).items() if v is not None)
        text = f"{_timestamp(record.created)} {record.levelname} {record.name}: "
        text += redact(record.getMessage()) + (f" [{fields}]" if fields else "")
        if record.exc_info:
            text += "\n" + redact(self.formatException(record.exc_info))
        return encodable(text)


def encodable(text: str) -> str:
    """`text` that every stream can write: a lone surrogate (a byte of a path name that is not
    UTF-8, as Python decodes it) as `\\udcff`. UTF-8 refuses to encode one, and the line was
    lost with a traceback on the pusher's screen instead."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = dict(getattr(record, "fields", None) or {})
    current = request_id.get()
    if current and "request_id" not in fields:
        fields["request_id"] = current
    return {k: redact(v) if isinstance(v, str) else v for k, v in fields.items()}


class PerSecond:
    """A text that depends on the whole second only, made once a second: formatting a time
    (strftime, email.utils) is most of what a log line's stamp or a `Date` header costs."""

    def __init__(self, make: Callable[[int], str]) -> None:
        self._make = make
        self._pair: tuple[int | None, str] = (None, "")  # the last second and its text

    def text(self, second: int) -> str:
        kept, text = self._pair  # one read: another thread may replace the pair meanwhile
        if kept != second:
            text = self._make(second)
            self._pair = (second, text)
        return text


_STAMP = PerSecond(lambda second: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))


def _timestamp(created: float) -> str:
    millis = int(created * 1000) % 1000
    return f"{_STAMP.text(int(created))}.{millis:03d}Z"


# -- the request line, written without a LogRecord ---------------------------------------------
class FieldsLine:
    """The JSON line of `JsonFormatter` for one logger, level and message, whose fields are
    fixed but for those named `varying`: made once as text pieces (the fixed fields encoded and
    redacted once), then joined with the varying values per line.

    A request's line through `logging` costs a LogRecord, the formatter, five redaction
    searches and two lock rounds: `write` is one redaction search, one join and one write.
    """

    def __init__(
        self, logger: logging.Logger, message: str, fields: dict[str, Any], varying: tuple[Any, ...]
    ) -> None:
        self.logger = logger
        head = {"level": "info", "logger": logger.name, "message": redact(message)}
        if head.keys() & fields.keys() or "ts" in fields:
            raise ValueError(f"fields may not be named {sorted(head.keys() & fields.keys())}")
        self._pieces: list[str] = []
        text = ", " + json.dumps(head, ensure_ascii=False)[1:-1]
        for name, value in fields.items():
            if name in varying:
                self._pieces.append(text + ", " + json.dumps(name, ensure_ascii=False) + ": ")
                text = ""
            else:
                pair = json.dumps({name: _redacted(value)}, default=str, ensure_ascii=False)
                text += ", " + pair[1:-1]
        self._tail = text + "}\n"

    def write(
        self, stream: logging.StreamHandler[Any], created: float, values: tuple[Any, ...]
    ) -> None:
        """Write the line with `values` of the varying fields (in their order) to `stream`."""
        parts = ['{"ts": "', _timestamp(created), '"']
        for piece, value in zip(self._pieces, values, strict=True):
            parts += (piece, _encode(value))
        parts.append(self._tail)
        line = encodable("".join(parts))  # as the formatter's, or a strict stream refuses it
        assert stream.lock is not None  # made by `Handler.__init__`
        with stream.lock:
            try:
                stream.stream.write(line)  # one write: a line-buffered stderr passes it on
                if not getattr(stream.stream, "line_buffering", False):
                    stream.flush()
            except Exception:  # what logging does with a failed write: say so, go on
                stream.handleError(logging.makeLogRecord({"msg": line.rstrip()}))


def _redacted(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


_ENCODE_TEXT = json.encoder.encode_basestring  # JSON of a str with ensure_ascii=False


def _encode(value: Any) -> str:
    """The JSON of one field's value as `JsonFormatter` writes it (redacted when text)."""
    if isinstance(value, str):
        return _ENCODE_TEXT(redact(value))
    if value is None:
        return "null"
    if type(value) is float or type(value) is int:
        return repr(value) if value == value and value not in (_INF, -_INF) else json.dumps(value)
    return json.dumps(value, default=str, ensure_ascii=False)


_INF = float("inf")


def plain_json_stream(logger: logging.Logger) -> logging.StreamHandler[Any] | None:
    """The handler an INFO line of `logger` reaches when that is all that happens to it: one
    `StreamHandler` with a `JsonFormatter` (what `config` sets up), no filters, nothing else
    listening. Then `FieldsLine.write` writes what `logger.info` would. None otherwise (a
    test's capture, the text format, a filter, the level off): log through `logging` then."""
    if not logger.isEnabledFor(logging.INFO):
        return None
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters or current.disabled:
            return None
        found += current.handlers
        current = current.parent if current.propagate else None
    if len(found) != 1:
        return None
    handler = found[0]
    if (
        type(handler) is not logging.StreamHandler
        or type(handler.formatter) is not JsonFormatter
        or handler.filters
        or handler.level > logging.INFO
    ):
        return None
    return handler


def config(log_format: str, level: str = "INFO", *, access_log: bool = False) -> dict[str, Any]:
    """The `dictConfig` of a server: every logger, gunicorn's included, to stderr in `format`.

    gunicorn's access lines (`access_log`) repeat gitstore's own request line, so they are off
    unless asked for.
    """
    if log_format not in FORMATS:
        raise ValueError(f"unknown log format {log_format!r}; use json or text")
    formatter = JsonFormatter if log_format == "json" else TextFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"gitstore": {"()": f"{__name__}.{formatter.__name__}"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "gitstore",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": [], "propagate": True},
            "gunicorn.access": {
                "level": "INFO" if access_log else "CRITICAL",
                "handlers": [],
                "propagate": True,
            },
        },
    }


def configure(log_format: str, level: str = "INFO") -> None:
    """Apply `config` to this process (before gunicorn starts, for the lines said before)."""
    logging.config.dictConfig(config(log_format, level))


def export_to_children(log_format: str) -> None:
    """Let processes started under this one (git, and the push gate it runs) log to this
    process's stderr in `log_format`: their own stderr goes to the pusher, not the log.

    They open it anew (`/proc/<pid>/fd/2`), so it is switched to append mode first: a log file
    opened with a shell's `>` would otherwise be written at this process's offset, over the
    lines they added.
    """
    try:
        fcntl.fcntl(2, fcntl.F_SETFL, fcntl.fcntl(2, fcntl.F_GETFL) | os.O_APPEND)
    except OSError:
        return  # no stderr to share
    os.environ[TARGET_ENV] = f"/proc/{os.getpid()}/fd/2"
    os.environ[FORMAT_ENV] = log_format


def configure_child(logger_name: str) -> None:
    """In a process `export_to_children` prepared: send `logger_name` to the server's log, with
    the request id of the request that started it. Elsewhere: keep `logger_name` quiet."""
    logger = logging.getLogger(logger_name)
    logger.propagate = False
    target, log_format = os.environ.get(TARGET_ENV), os.environ.get(FORMAT_ENV)
    handler: logging.Handler = logging.NullHandler()
    if target and log_format in FORMATS:
        try:
            handler = logging.FileHandler(target, mode="a")
            handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
        except OSError:
            pass  # the server is gone, or not on Linux: lose the line, never the push
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    request_id.set(os.environ.get(REQUEST_ID_ENV) or None)
