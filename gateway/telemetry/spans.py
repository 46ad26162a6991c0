"""The gateway's spans, one function per kind of step; each is a no-op when tracing is off.

Names and attributes follow the OpenTelemetry GenAI conventions where they have one
(``gen_ai.*`` for model and tool calls, ``http.*``/``url.*`` for requests) and
``switchboard.*`` otherwise; docs/observability.md lists them all. Run and session ids go
on the run and agent-turn spans (``switchboard.run_id``, ``switchboard.session_id``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from agent_server.telemetry import tracing

if TYPE_CHECKING:
    from opentelemetry.trace import Span


def run(session_id: str) -> AbstractContextManager[Span | None]:
    """One user turn of a session, from before ``run_started`` to its last event."""
    if not tracing.enabled():
        return tracing.span("")
    return tracing.span("switchboard.run", {"switchboard.session_id": session_id})


def run_started(span: Span | None, run_id: str, agent: str | None) -> None:
    tracing.set_attributes(span, {"switchboard.run_id": run_id, "switchboard.agent": agent})


def agent_turn(
    agent: str, *, remote: bool, step: int, run_id: str, session_id: str
) -> AbstractContextManager[Span | None]:
    """The turn's ``step``-th step (from 1): a local agent's model call and its tools, or a remote agent's task."""
    if not tracing.enabled():
        return tracing.span("")
    attributes: dict[str, str | bool | int] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "switchboard.agent.remote": remote,
        "switchboard.step": step,
        "switchboard.run_id": run_id,
        "switchboard.session_id": session_id,
    }
    return tracing.span(f"invoke_agent {agent}", attributes)


def model_call(agent: str, system: str, model: str) -> AbstractContextManager[Span | None]:
    """One model generation; ``usage`` adds its token counts when it is done."""
    if not tracing.enabled():
        return tracing.span("")
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": system,
        "gen_ai.request.model": model,
        "gen_ai.agent.name": agent,
    }
    return tracing.span(f"chat {model}", attributes, kind="client")


def usage(span: Span | None, input_tokens: int | None, output_tokens: int | None, cost_usd: float | None) -> None:
    tracing.set_attributes(
        span,
        {
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "switchboard.cost_usd": cost_usd,
        },
    )


def tool_call(tool: str, call_id: str) -> AbstractContextManager[Span | None]:
    """One tool a local agent's model called (function tools, agent tools and transfers alike)."""
    if not tracing.enabled():
        return tracing.span("")
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": call_id}
    return tracing.span(f"execute_tool {tool}", attributes)


def agent_tool(
    caller: str, agent: str, mode: str, max_cost_usd: float | None, run_id: str
) -> AbstractContextManager[Span | None]:
    """One call to an agent (an agent tool, or a remote member's turn); ``outcome`` is set when it ends."""
    if not tracing.enabled():
        return tracing.span("")
    attributes: dict[str, str | float] = {
        "switchboard.agent_tool.caller": caller,
        "switchboard.agent_tool.agent": agent,
        "switchboard.agent_tool.mode": mode,
        "switchboard.run_id": run_id,
    }
    if max_cost_usd is not None:
        attributes["switchboard.agent_tool.max_cost_usd"] = max_cost_usd
    return tracing.span(f"agent_tool {caller}", attributes)


def agent_tool_outcome(span: Span | None, outcome: str, **attributes: Any) -> None:
    """How an agent call ended (completed, or the failure's reason) and its totals (``switchboard.agent_tool.*``)."""
    fields = {"outcome": outcome, **attributes}
    tracing.set_attributes(span, {f"switchboard.agent_tool.{key}": value for key, value in fields.items()})


def handoff(source: str, target: str, reason: str | None, hop: int, run_id: str) -> AbstractContextManager[Span | None]:
    """An accepted transfer: from the moment it is admitted to the new agent taking the conversation."""
    if not tracing.enabled():
        return tracing.span("")
    attributes: dict[str, str | int] = {
        "switchboard.handoff.source": source,
        "switchboard.handoff.target": target,
        "switchboard.handoff.hop": hop,
        "switchboard.run_id": run_id,
    }
    if reason:
        attributes["switchboard.handoff.reason"] = reason
    return tracing.span(f"handoff {source} -> {target}", attributes)


def request(method: str, url: str) -> AbstractContextManager[Span | None]:
    """An outgoing HTTP request to an agent; send it with ``propagated`` headers from inside the block."""
    if not tracing.enabled():
        return tracing.span("")
    return tracing.span(method, {"http.request.method": method, "url.full": url}, kind="client")


def propagated(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` plus the current span's ``traceparent`` (the same mapping when tracing is off)."""
    if not tracing.enabled():
        return headers
    carrier = dict(headers)
    tracing.inject(carrier)
    return carrier


def response(span: Span | None, status: int) -> None:
    tracing.set_attributes(span, {"http.response.status_code": status})
