"""Traces across services: a gateway, two remote agents (one hands off to the other) and a streaming agent tool.

Each service is its own process exporting to an OTLP/HTTP receiver the test serves on
loopback; the gateway's local agent is a scripted OpenAI-compatible model (also served
here) that calls the streaming ``research`` tool, then ``colleague`` (the gateway itself,
called as an agent over its A2A binding), then transfers to ``billing``, which hands off
to ``tech``. One user turn must be one trace, each span under the right parent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx
import orjson

from agent_server.http.loopback import free_port
from tests.support.processes import stop_process
from tests.support.servers import serve_app
from tests.support.telemetry import ANSWER, USAGE, OTLPReceiver, ReceivedSpan, triage_model_app
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[3]
ADMIN = "obs-admin-token"
GATEWAY = "switchboard-gateway-obs"
AGENT_SERVICES = {"switchboard-agent-researcher", "switchboard-agent-billing", "switchboard-agent-tech"}
MESSAGE = "I was charged twice and now the app crashes with E42; also research tidal energy"


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "gateway", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env
        )


def _answers(url: str, path: str, headers: dict[str, str] | None = None) -> bool:
    try:
        return httpx.get(url + path, headers=headers, timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


def _services(stack: ExitStack, tmp_path: Path, otlp: str, model: str) -> str:
    """Three agent servers and the gateway, each exporting spans to ``otlp``; the gateway's URL."""
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    urls = {}
    processes = []
    for name in ("researcher", "billing", "tech"):
        port = free_port()
        urls[name] = f"http://127.0.0.1:{port}"
        args = ["serve", f"examples.demo_agents:{name}", "--port", str(port)]
        processes.append((urls[name], _start(args, env, tmp_path / f"{name}.log")))
    for _, process in processes:
        stack.callback(stop_process, process)
    for url, process in processes:
        _wait_serving(url, "/.well-known/agent.json", process)
    port = free_port()
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\nname = "obs"\ndata_dir = "{tmp_path / "data"}"\n'
        f'[[agents]]\nname = "triage"\nmodel = "openai:fake-model"\nbase_url = "{model}/v1"\n'
        'handoffs = ["billing"]\ntools = ["research", "colleague"]\n'
        f'[[agents]]\nname = "billing"\nurl = "{urls["billing"]}"\n'
        f'[[agents]]\nname = "tech"\nurl = "{urls["tech"]}"\n'
        f'[[tools]]\nname = "research"\nagent = "{urls["researcher"]}"\nmode = "streaming"\n'
        f'[[tools]]\nname = "colleague"\nagent = "http://127.0.0.1:{port}"\nmode = "sync"\ntoken_env = "OBS_ADMIN"\n'
    )
    gateway_env = {**env, "SWITCHBOARD_ADMIN_TOKEN": ADMIN, "OBS_ADMIN": ADMIN}
    args = ["gateway", "--config", str(config), "--port", str(port), "--log-format", "json"]
    gateway = _start(args, gateway_env, tmp_path / "gateway.log")
    stack.callback(stop_process, gateway)
    url = f"http://127.0.0.1:{port}"
    _wait_serving(url, "/health", gateway)
    return url


def _wait_serving(url: str, path: str, process: subprocess.Popen[bytes]) -> None:
    wait_until(lambda: _answers(url, path) or process.poll() is not None, f"{url}{path}", PROCESS_S)
    assert process.poll() is None, f"the server for {url} exited"


def _conversation(url: str) -> list[dict[str, object]]:
    headers = {"authorization": f"Bearer {ADMIN}"}
    with httpx.Client(timeout=PROCESS_S, headers=headers) as client:
        response = client.post(url + "/sessions/s1/messages", json={"message": MESSAGE, "stream": True})
        assert response.status_code == 200, response.text
        return [orjson.loads(line) for line in response.text.splitlines()]


def _one(spans: list[ReceivedSpan], name: str, **where: object) -> ReceivedSpan:
    found = [s for s in spans if s.name == name and all(s.attributes.get(k) == v for k, v in where.items())]
    assert len(found) == 1, f"{name} {where}: {len(found)} spans among {sorted({s.name for s in spans})}"
    return found[0]


def _children(spans: list[ReceivedSpan], parent: ReceivedSpan, name: str | None = None) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_id == parent.span_id and (name is None or s.name == name)]


def _chain(spans: list[ReceivedSpan], call: ReceivedSpan, service: str) -> None:
    """agent call -> outgoing request -> the agent server's span -> the span around its handler."""
    (request,) = _children(spans, call, "POST")  # besides a first call's GET of the card, which picks the binding
    assert request.service == GATEWAY and request.kind == 3 and request.attributes["http.response.status_code"] == 200
    (served,) = _children(spans, request)
    assert served.service == service and served.kind == 2, served
    assert served.name in ("POST /tasks/sendSubscribe", "POST /tasks/send")
    (handler,) = _children(spans, served)
    assert handler.service == service and handler.name.startswith("handle ")


def test_one_turn_across_four_processes_is_one_trace_with_the_right_parents(tmp_path: Path) -> None:
    receiver = OTLPReceiver()
    with ExitStack() as stack:
        otlp = stack.enter_context(serve_app(receiver.app))
        model = stack.enter_context(serve_app(triage_model_app()))
        url = _services(stack, tmp_path, otlp, model)
        events = _conversation(url)
        assert events[-1]["type"] == "run_completed", events[-1]
        trace_id = events[0]["trace_id"]
        assert isinstance(trace_id, str) and len(trace_id) == 32

        def all_exported() -> bool:
            """Each process exports in batches of its own: wait for the last span of each, the request's too."""
            spans = [s for s in receiver.spans if s.trace_id == trace_id]
            runs = [
                s
                for s in spans
                if s.name == "switchboard.run" and s.attributes.get("switchboard.run_id") == events[0]["run_id"]
            ]
            names = {s.name for s in spans}
            # an agent server's last span is the request's: it lasts to the stream's last byte, past its handler's
            served = {s.service for s in spans if s.kind == 2 and s.name.startswith("POST /tasks/")}
            return (
                bool(runs)
                and any(s.span_id == runs[0].parent_id for s in spans)
                and {"handle researcher", "handle billing", "handle tech"} <= names
                and served >= AGENT_SERVICES
            )

        wait_until(all_exported, "the spans of the turn", PROCESS_S)
        spans = [s for s in receiver.spans if s.trace_id == trace_id]
        log = (tmp_path / "gateway.log").read_text()

    services = {s.service for s in spans}
    assert services == {GATEWAY, *AGENT_SERVICES}

    run = _one(spans, "switchboard.run", **{"switchboard.run_id": events[0]["run_id"]})
    assert run.attributes["switchboard.session_id"] == "s1"
    served = [s for s in spans if s.span_id == run.parent_id]
    assert served and served[0].name == "POST /sessions/{session_id}/messages", "the run is under its request"

    # triage takes three steps (research, colleague, the transfer): one agent-turn span each, with one model call
    outer = {"switchboard.run_id": events[0]["run_id"]}
    steps = [_one(spans, "invoke_agent triage", **outer, **{"switchboard.step": i}) for i in (1, 2, 3)]
    researching, _, transferring = steps
    billing = _one(spans, "invoke_agent billing")
    tech = _one(spans, "invoke_agent tech")
    assert {*(s.parent_id for s in steps), billing.parent_id, tech.parent_id} == {run.span_id}
    assert billing.attributes["switchboard.agent.remote"] is True

    for step, tool in zip(steps, ("research", "colleague", "transfer_to_billing"), strict=True):
        (model,) = _children(spans, step, "chat fake-model")
        assert (
            model.attributes["gen_ai.system"] == "openai" and model.attributes["gen_ai.request.model"] == "fake-model"
        )
        assert model.attributes["gen_ai.usage.input_tokens"] == USAGE[tool]["prompt_tokens"]
        assert model.attributes["gen_ai.usage.output_tokens"] == USAGE[tool]["completion_tokens"]

    # the gateway called as an agent of a gateway (here itself) continues the trace with a run of its own
    (colleague,) = _children(spans, _one(spans, "execute_tool colleague"), "agent_tool colleague")
    assert colleague.attributes["switchboard.agent_tool.mode"] == "sync"
    (request,) = _children(spans, colleague, "POST")  # after the GET of its card, which picks the binding
    (served,) = _children(spans, request)
    assert served.service == GATEWAY and served.name == "POST /tasks/send"
    (handler,) = _children(spans, served)
    (inner,) = _children(spans, handler, "switchboard.run")
    assert inner.attributes["switchboard.run_id"] != events[0]["run_id"]
    (inner_step,) = _children(spans, inner, "invoke_agent triage")
    (inner_model,) = _children(spans, inner_step, "chat fake-model")
    assert inner_model.attributes["gen_ai.usage.input_tokens"] == USAGE[ANSWER]["prompt_tokens"]

    research = _one(spans, "execute_tool research")
    assert research.parent_id == researching.span_id
    (tool_call,) = _children(spans, research, "agent_tool research")
    assert tool_call.attributes["switchboard.agent_tool.mode"] == "streaming"
    assert tool_call.attributes["switchboard.agent_tool.outcome"] == "completed"
    _chain(spans, tool_call, "switchboard-agent-researcher")
    _chain(spans, _one(spans, "agent_tool billing"), "switchboard-agent-billing")
    _chain(spans, _one(spans, "agent_tool tech"), "switchboard-agent-tech")
    assert _one(spans, "agent_tool billing").parent_id == billing.span_id

    first = _one(spans, "handoff triage -> billing")
    assert first.parent_id == transferring.span_id
    assert first.attributes["switchboard.handoff.hop"] == 1
    assert first.attributes["switchboard.handoff.reason"] == "a charge to refund"
    second = _one(spans, "handoff billing -> tech")
    assert second.parent_id == billing.span_id
    assert second.attributes["switchboard.handoff.hop"] == 2
    assert "technical problem" in second.attributes["switchboard.handoff.reason"]

    lines = [orjson.loads(line) for line in log.splitlines() if line.startswith("{")]
    completed = [line for line in lines if "run_completed" in line["message"] and line.get("session_id") == "s1"]
    assert len(completed) == 1, "the outer run's end, logged once"
    assert completed[0]["run_id"] == events[0]["run_id"] and completed[0]["trace_id"] == trace_id
