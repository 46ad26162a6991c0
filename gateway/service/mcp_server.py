"""The swarm as an MCP server (the official SDK's low-level ``Server``): its tools, their calls, progress, cancel.

The tools are read from the live service at each ``tools/list``: the starting agent as one
tool (``ask_<gateway name>``: a turn in a session) and every agent tool of the gateway under
its own name, so tools defined through the API later show up on the next listing. An agent
tool whose name is the swarm tool's is not offered (the swarm's takes the name).

A call is a run like any other, started in the service's task group through the same paths
as the HTTP routes (``start_turn``, ``start_tool_call``) and owned by the caller's token; the
call follows the run's events in the event log. When the client sent a progress token, each
text the run streams (an agent's text delta, an agent tool's chunk) is sent as a progress
notification. When the call is cancelled (``notifications/cancelled``, or the client closing
the request on the 2026 wire, which the SDK turns into the handler's cancellation) before the
run ended, the run is cancelled as ``POST /runs/{id}/cancel`` would, in the caller's name.

A mistake in the arguments, a session of another caller or a failed run is a tool result with
``isError`` and a message for a person (MCP's way, so a model can correct itself); an unknown
tool is a JSON-RPC error.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

import anyio
import mcp_types
from anyio.abc import TaskStatus
from mcp import MCPError
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server.http.auth import Principal, principal_of
from agent_server.stores import StoreUnavailable
from gateway.recording.events import (
    AgentToolProgressEvent,
    Event,
    RunCancelledEvent,
    RunCompletedEvent,
    RunFailedEvent,
    TextDeltaEvent,
)
from gateway.service.core import GatewayService, ToolCallOutcome
from gateway.service.errors import ServiceError
from gateway.service.routes.sessions import check_session_id
from protocol import ErrorCode, ProtocolError

logger = logging.getLogger("gateway.service")

_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9_-]")
_MAX_TOOL_NAME = 64

Report = Callable[[str], Awaitable[None]]
"""Sends one progress notification with a text (a no-op when the client sent no progress token)."""


def swarm_tool_name(service: GatewayService) -> str:
    """``ask_<gateway name>``, in the characters every MCP client accepts in a tool name."""
    return ("ask_" + _NAME_CHARACTER.sub("_", service.name))[:_MAX_TOOL_NAME]


async def serve_mcp(service: GatewayService, max_body_bytes: int, *, task_status: TaskStatus[ASGIApp]) -> None:
    """Serve MCP sessions for ``service`` until cancelled; the endpoint goes to ``task_status`` (``TaskGroup.start``).

    The endpoint expects a request the gateway authenticated: each MCP session is its caller's,
    and a request for it with another caller's token is answered as for an unknown session.
    A body over ``max_body_bytes`` (the gateway's limit, as on every route) is refused with 413.
    """
    manager = StreamableHTTPSessionManager(app=_server(service), max_request_body_size=max_body_bytes)

    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        caller = principal_of(HTTPConnection(scope))
        scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=caller.name, scopes=[caller.scope]))
        await manager.handle_request(scope, receive, send)

    async with manager.run():
        task_status.started(endpoint)
        await anyio.sleep_forever()


def _server(service: GatewayService) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        await service.sync_registrations()
        return mcp_types.ListToolsResult(tools=_tools(service))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        await service.sync_registrations()
        caller = _caller(ctx)
        arguments = params.arguments or {}
        progress = _Progress(ctx)
        try:
            if params.name == swarm_tool_name(service):
                return await _ask(service, arguments, caller, progress.report)
            if params.name in service.gateway.tools:
                return await _call_agent_tool(service, params.name, arguments, caller, progress.report)
        except ProtocolError as exc:  # bad arguments, or the service refused: another caller's session, shutting down
            return _error_result(exc.message)
        tools = ", ".join(tool.name for tool in _tools(service))
        raise MCPError(mcp_types.INVALID_PARAMS, f"no tool named {params.name!r} (tools: {tools})")

    return Server(
        service.name,
        description=service.description,
        instructions=(
            f"{swarm_tool_name(service)} asks the swarm (pass the session_id it answers to go on with the same "
            "conversation); the other tools are the gateway's agent tools."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _tools(service: GatewayService) -> list[mcp_types.Tool]:
    ask = mcp_types.Tool(
        name=swarm_tool_name(service),
        description=(
            service.description
            or f"Ask the {service.name} swarm; {service.members.starting_agent_name} answers first and hands the "
            "conversation to the agent that fits."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What the user says."},
                "session_id": {
                    "type": "string",
                    "description": "The conversation to go on with (from an earlier answer); a new one when left out.",
                },
            },
            "required": ["message"],
        },
    )
    agent_tools = [
        mcp_types.Tool(
            name=tool.name,
            description=tool.description or f"Calls the agent {tool.agent}.",
            input_schema={
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The text sent to the agent."}},
                "required": ["input"],
            },
        )
        for tool in service.gateway.tools.values()
        if tool.name != ask.name
    ]
    return [ask, *agent_tools]


def _caller(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """Who called: the principal the gateway's authentication put on the HTTP request that carried the call."""
    request = ctx.request
    if not isinstance(request, HTTPConnection):
        raise MCPError(mcp_types.INTERNAL_ERROR, "the call did not arrive over the gateway's HTTP endpoint")
    return principal_of(request)


class _Progress:
    """The call's progress notifications, numbered from 1 (MCP asks for a value that grows)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._session = ctx.session
        self._sent = 0

    async def report(self, text: str) -> None:
        self._sent += 1
        await self._session.report_progress(self._sent, None, text)


async def _ask(
    service: GatewayService, arguments: dict[str, Any], caller: Principal, report: Report
) -> mcp_types.CallToolResult:
    """One turn of the swarm: its answer, and where to go on (``session_id``)."""
    message = _text_argument(arguments, "message")
    session_id = arguments.get("session_id")
    if session_id is None:
        session_id = f"mcp-{uuid.uuid4().hex}"
    elif not isinstance(session_id, str):
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"session_id must be a string, got {type(session_id).__name__}")
    check_session_id(session_id)
    run_id = await service.start_turn(session_id, message, caller=caller)
    last = await _follow(service, run_id, caller, report)
    if type(last) is RunCompletedEvent:
        structured = {
            "answer": last.content,
            "session_id": session_id,
            "run_id": run_id,
            "agent": last.active_agent_name,
            "state": last.state,
        }
        return mcp_types.CallToolResult(content=[_text(last.content)], structured_content=structured)
    reason = last.error if type(last) is RunFailedEvent else "it ended without an answer"
    return _error_result(f"the run failed: {reason} (run {run_id}, session {session_id})")


async def _call_agent_tool(
    service: GatewayService, name: str, arguments: dict[str, Any], caller: Principal, report: Report
) -> mcp_types.CallToolResult:
    """One call of an agent tool: its text, and the whole result as structured content."""
    outcome: ToolCallOutcome = await service.start_tool_call(name, _text_argument(arguments, "input"), caller)
    await _follow(service, outcome.run_id, caller, report)
    if outcome.result is not None:
        result = outcome.result.to_dict()
        return mcp_types.CallToolResult(content=[_text(outcome.result.text)], structured_content=result)
    error = outcome.error
    if error is None:
        return _error_result(f"agent tool {name!r} ended without a result (run {outcome.run_id})")
    return _error_result(f"agent tool {name!r} failed ({error.reason}): {error.message} (run {outcome.run_id})")


async def _follow(service: GatewayService, run_id: str, caller: Principal, report: Report) -> Event | None:
    """The run's last event (a cancel's note aside), its texts reported on the way; cancel it if left before."""
    last: Event | None = None
    ended = False
    try:
        async with aclosing(service.event_log.follow(run_id)) as events:
            async for event in events:
                text = _progress_text(event)
                if text:
                    await report(text)
                if type(event) is not RunCancelledEvent:
                    last = event
        ended = True
    finally:
        if not ended:
            with anyio.CancelScope(shield=True):
                try:
                    await service.cancel_run(run_id, caller)
                except ServiceError as exc:  # it ended meanwhile: nothing left to cancel
                    logger.info("run %s was not cancelled with its MCP call: %s", run_id, exc)
                except StoreUnavailable as exc:  # the cancel could not be recorded; the call's own end goes on
                    logger.warning("run %s was not cancelled with its MCP call: %s", run_id, exc)
    return last


def _progress_text(event: Event) -> str | None:
    """What a progress notification says for an event: the text the run streams, None for every other event."""
    if type(event) is TextDeltaEvent:
        return event.text or None
    if type(event) is AgentToolProgressEvent:
        return event.text or None
    return None


def _text_argument(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            f"the argument {name!r} must be a non-empty string, as the tool's input schema says",
        )
    return value


def _text(text: str) -> mcp_types.TextContent:
    return mcp_types.TextContent(type="text", text=text)


def _error_result(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[_text(message)], is_error=True)
