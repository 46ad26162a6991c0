"""When tracing is on, and what it costs when off; the JSON log line."""

from __future__ import annotations

import logging
import subprocess
import sys

import orjson
import pytest

from agent_server.telemetry import tracing
from agent_server.telemetry.logs import JsonLines
from tests.support.waiting import PROCESS_S


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
    ],
)
def test_the_standard_environment_says_whether_spans_are_exported(environ: dict[str, str], wanted: bool) -> None:
    assert tracing.wanted(environ) is wanted


def test_off_a_served_turn_imports_nothing_of_the_sdk_and_spans_are_one_shared_no_op() -> None:
    script = (
        "import sys, httpx\n"
        "from gateway.config.load import validate_config\n"
        "from gateway.service import create_gateway_app\n"
        "from agent_server.telemetry import tracing\n"
        "app = create_gateway_app(validate_config({'stores': {'sessions': 'memory', 'events': 'memory', "
        "'tasks': 'memory'}}))\n"
        "async def turn():\n"
        "    async with app.router.lifespan_context(app):\n"
        "        transport = httpx.ASGITransport(app=app)\n"
        "        async with httpx.AsyncClient(transport=transport, base_url='http://gw') as client:\n"
        "            r = await client.post('/sessions/s/messages', json={'message': 'hi', 'stream': False})\n"
        "            assert r.status_code == 200, r.text\n"
        "import anyio; anyio.run(turn)\n"
        "assert not tracing.enabled()\n"
        "assert tracing.span('a') is tracing.span('b')\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=PROCESS_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_json_log_line_carries_the_ids_it_was_given() -> None:
    record = logging.LogRecord("gateway.events", logging.INFO, __file__, 1, "run=%s done", ("r1",), None)
    record.run_id, record.session_id, record.trace_id = "r1", "s1", "ab" * 16
    line = orjson.loads(JsonLines().format(record))
    assert line["message"] == "run=r1 done" and line["level"] == "info" and line["logger"] == "gateway.events"
    assert (line["run_id"], line["session_id"], line["trace_id"]) == ("r1", "s1", "ab" * 16)
    assert line["time"].endswith("Z")
