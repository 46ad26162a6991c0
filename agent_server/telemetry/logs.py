"""How a server process logs: ``text`` (the default) or ``json`` (``--log-format json``), one object per line.

A JSON line has ``time``, ``level``, ``logger`` and ``message``, plus the ids of what the
line is about when there are any: ``run_id`` and ``session_id`` (the event log's lines,
gateway/recording/recorder.py) and ``trace_id``/``span_id`` (the current span, when tracing is on).
A traceback, when a line has one, is the ``exception`` string of the same line. A text
line ends with ``trace=<id>`` when a span is current.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from agent_server.telemetry import tracing

LOG_FORMATS = ("text", "json")
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_IDS = ("run_id", "session_id", "trace_id")


class TextLines(logging.Formatter):
    """The usual text line, plus ``trace=<id>`` when a span is current and the line does not say it already."""

    def __init__(self) -> None:
        super().__init__(_TEXT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        trace_id = getattr(record, "trace_id", None) or tracing.current_trace_id()
        return line if not trace_id or "trace=" in line else f"{line} trace={trace_id}"


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in _IDS:
            value = getattr(record, key, None)
            if value:
                line[key] = value
        if "trace_id" not in line:
            trace_id = tracing.current_trace_id()
            if trace_id:
                line["trace_id"] = trace_id
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(level: str, log_format: str) -> None:
    """The root logger at ``level`` (debug, info, warning, error) in ``log_format``, on stderr.

    No line says its thread, process or the code that logged it, so a record does not look them
    up (the logging module's own switches for it): the lookups were a good part of a record's
    CPU, and a call through the gateway logs two or three lines at INFO.
    """
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines() if log_format == "json" else TextLines())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def uvicorn_logging(log_format: str) -> dict[str, Any]:
    """What to give ``uvicorn.Config``: its own handlers for text, none for JSON (its lines reach ours)."""
    return {} if log_format != "json" else {"log_config": None}
