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
import logging
import logging.config
import os
import re
import sys
import time
from typing import Any

FORMATS = ("json", "text")
#: Set by `gitstore serve` for the processes its workers start (the push gate, run by git):
#: where the server's log goes (`/proc/<server pid>/fd/2`) and in which format.
TARGET_ENV = "GITSTORE_LOG_TARGET"
FORMAT_ENV = "GITSTORE_LOG_FORMAT"
REQUEST_ID_ENV = "GITSTORE_REQUEST_ID"
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
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`<ts> <LEVEL> <logger>: <message> key=value ...`."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in _fields(record).items() if v is not None)
        text = f"{_timestamp(record.created)} {record.levelname} {record.name}: "
        text += redact(record.getMessage()) + (f" [{fields}]" if fields else "")
        if record.exc_info:
            text += "\n" + redact(self.formatException(record.exc_info))
        return text


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = dict(getattr(record, "fields", None) or {})
    current = request_id.get()
    if current and "request_id" not in fields:
        fields["request_id"] = current
    return {k: redact(v) if isinstance(v, str) else v for k, v in fields.items()}


def _timestamp(created: float) -> str:
    millis = int(created * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{millis:03d}Z"


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
