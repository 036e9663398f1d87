"""The log formats and the credential net under every line."""

from __future__ import annotations

import io
import json
import logging
import logging.config
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore import logs, metrics


def _record(message: str, *args, **fields) -> logging.LogRecord:
    record = logging.LogRecord("gitstore.test", logging.INFO, __file__, 1, message, args, None)
    record.fields = fields
    return record


def test_json_lines_carry_the_fields_and_the_request_id():
    token = logs.request_id.set("req-7")
    try:
        line = json.loads(logs.JsonFormatter().format(_record("did %s", "it", route="/x")))
    finally:
        logs.request_id.reset(token)
    assert line["message"] == "did it" and line["level"] == "info"
    assert line["logger"] == "gitstore.test" and line["ts"].endswith("Z")
    assert line["route"] == "/x" and line["request_id"] == "req-7"


def test_text_lines_read_as_text():
    text = logs.TextFormatter().format(_record("hello", status=200))
    assert " INFO gitstore.test: hello [status=200]" in text


def test_credentials_are_masked_whatever_the_message_says():
    leaks = [
        "Authorization: Basic b3BlcmF0b3I6cGFzcw==",
        "header authorization=Bearer gst_abc123_SECRETPART",
        "password=hunter2 and passphrase: swordfish",
        '{"api_token": "tok-123", "webhook_secret": "wh-456"}',
        "X-Auth-Token: abcdef",
    ]
    for text in leaks:
        shown = logs.redact(text)
        for secret in (
            "b3BlcmF0b3I6cGFzcw",
            "SECRETPART",
            "hunter2",
            "swordfish",
            "tok-123",
            "wh-456",
            "abcdef",
        ):
            assert secret not in shown, (text, shown)
    assert logs.redact("GET /api/v1/config 200") == "GET /api/v1/config 200"


def test_the_config_routes_gunicorn_through_the_same_handler():
    config = logs.config("json")
    logging.config.dictConfig(config)  # valid for dictConfig as it stands
    try:
        assert config["loggers"]["gunicorn.error"]["propagate"] is True
        assert config["root"]["handlers"] == ["stderr"]
        assert config["loggers"]["gunicorn.access"]["level"] == "CRITICAL"
        assert logs.config("text", access_log=True)["loggers"]["gunicorn.access"]["level"] == "INFO"
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})


def test_gunicorn_builds_access_lines_only_when_they_are_logged():
    from gunicorn.config import Config

    from gitstore.serve.workers import Logger

    try:
        for access_log in (False, True):
            cfg = Config()
            cfg.set("logconfig_dict", logs.config("json", access_log=access_log))
            assert Logger(cfg).access_log_enabled is access_log
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})


def test_a_text_without_a_credential_word_is_returned_as_it_is():
    text = "GET /api/v1/config/environments/<int:env_id>/<path:rest> 200"
    assert logs.redact(text) is text
    assert logs.redact("the Token: abc") == "the Token: ***"


# -- the request line written without a LogRecord (logs.FieldsLine) ---------------------------
TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["gst_abc123_SECRETPART", "Bearer x", "password=hunter2", 'a"b\\c\n', "n\udcff\u00e9"]
    ),
    st.text(alphabet="abcdefgst_-.0123456789", max_size=40),
)
VALUES = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.booleans(), TEXTS)


class _Stream(io.StringIO):
    line_buffering = True


def _handler(
    formatter: logging.Formatter | None = None, stream: Any = None
) -> logging.StreamHandler:
    handler = logging.StreamHandler(stream or _Stream())
    handler.setFormatter(formatter or logs.JsonFormatter())
    return handler


@settings(max_examples=300, deadline=None)
@given(
    message=TEXTS,
    fields=st.dictionaries(
        st.text(min_size=1, max_size=12).filter(
            lambda k: k not in ("ts", "level", "logger", "message")
        ),
        VALUES,
        max_size=6,
    ),
    varying=st.lists(VALUES, max_size=3),
    created=st.floats(min_value=0, max_value=4e9),
)
def test_a_fields_line_is_the_line_the_json_formatter_writes(message, fields, varying, created):
    names = [f"v{index}" for index in range(len(varying))]
    fields = {name: None for name in names} | {k: v for k, v in fields.items() if k not in names}
    logger = logging.getLogger("gitstore.requests")
    handler = _handler()
    logs.FieldsLine(logger, message, fields, tuple(names)).write(handler, created, tuple(varying))
    record = logging.LogRecord(logger.name, logging.INFO, __file__, 1, "%s", (message,), None)
    record.created = created
    record.fields = fields | dict(zip(names, varying, strict=True))
    assert handler.stream.getvalue() == logs.JsonFormatter().format(record) + "\n"


def test_a_fields_line_is_written_only_to_a_lone_plain_json_stream():
    logger = logging.getLogger("gitstore.test.lines")
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        root.handlers[:] = [_handler()]
        root.setLevel(logging.INFO)
        assert logs.plain_json_stream(logger) is root.handlers[0]
        root.handlers.append(_handler())  # a second listener (a test's capture): logging
        assert logs.plain_json_stream(logger) is None
        root.handlers[:] = [_handler(logs.TextFormatter())]
        assert logs.plain_json_stream(logger) is None
        root.handlers[:] = [_handler()]
        root.setLevel(logging.WARNING)
        assert logs.plain_json_stream(logger) is None
        root.setLevel(logging.INFO)
        logger.addFilter(lambda record: False)
        assert logs.plain_json_stream(logger) is None
    finally:
        logger.filters.clear()
        root.handlers[:], level = saved
        root.setLevel(level)


def test_a_request_line_with_a_lone_surrogate_is_written_escaped(
    client, tmp_path, capsys, monkeypatch
):
    """A field of the line holding a lone surrogate (bytes that are not UTF-8, as Python
    decodes them; here the method) is written escaped, as `JsonFormatter` writes it: a strict
    UTF-8 stream refused the line, and logging printed '--- Logging error ---' instead."""
    # Not counted: this process's metrics would keep the method as a label that their
    # exposition cannot encode (gunicorn refuses such a method before the app sees it).
    monkeypatch.setattr(metrics, "request_answered", lambda *args: None)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    path = tmp_path / "server.log"
    with open(path, "w", encoding="utf-8") as stream:  # strict, as a service's stderr
        try:
            root.handlers[:] = [_handler(stream=stream)]
            root.setLevel(logging.INFO)
            assert logs.plain_json_stream(logging.getLogger("gitstore.requests")) is not None
            client.open("/api/v1/environments", method="G\udcffT")
        finally:
            root.handlers[:], level = saved
            root.setLevel(level)
    assert "Logging error" not in capsys.readouterr().err
    text = path.read_text(encoding="utf-8").splitlines()[-1]
    assert '"method": "G\\udcffT"' in text  # a JSON escape: a reader gets the value back
    assert json.loads(text)["message"].startswith("G\udcffT ")
