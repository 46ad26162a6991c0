"""``/tools``: agents exposed as tools; define, list, remove, and call one directly (JSON, or NDJSON events)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from agent_server.http.auth import principal_of
from agent_server.http.responses import NDJSONStreamResponse, error_response, json_response
from gateway.calls.tool import AgentTool
from gateway.service.bodies import DefineToolBody, ToolCallBody
from gateway.service.core import GatewayService
from gateway.service.errors import ApiErrorCode
from gateway.service.following import followed
from gateway.service.http import api_route, body_limit, read_body, service_of
from gateway.service.members import check_api_target
from protocol import ProtocolError


def tool_info(service: GatewayService, tool: AgentTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "agent": tool.agent,
        "mode": tool.mode.kind,
        "max_turns": tool.mode.max_turns if tool.mode.kind == "conversational" else None,
        "timeout_ms": tool.timeout_ms,
        "max_cost_usd": tool.budget.max_cost_usd,
        "idle_timeout_secs": tool.idle_timeout_s,
        "description": tool.description,
        "authenticated": tool.token is not None,
        "used_by": service.tool_users(tool),
    }


async def _list(request: Request) -> Response:
    service = service_of(request)
    return json_response({"tools": [tool_info(service, tool) for tool in service.gateway.tools.values()]})


async def _define(request: Request) -> Response:
    body = await read_body(request, DefineToolBody, body_limit(request))
    service = service_of(request)
    check_api_target(service.gateway, body.agent, "agent")
    tool = await service.add_tool(body.config(), attach_to=body.attach_to, token=body.token)
    return json_response(tool_info(service, tool), status_code=201, headers={"location": f"/tools/{tool.name}"})


async def _get(request: Request) -> Response:
    service = service_of(request)
    return json_response(tool_info(service, service.get_tool(request.path_params["name"])))


async def _remove(request: Request) -> Response:
    removed = await service_of(request).remove_tool(request.path_params["name"])
    return json_response({"removed": removed.name})


async def _call(request: Request) -> Response:
    """Sync: the result as JSON (a failure is 502/504 with the partial result). Stream: the call's events."""
    body = await read_body(request, ToolCallBody, body_limit(request))
    service = service_of(request)
    name = request.path_params["name"]
    caller = principal_of(request)
    if body.stream:
        run_id = (await service.start_tool_call(name, body.input, caller)).run_id
        lines = followed(service, run_id, caller, cancel_on_disconnect=body.cancel_on_disconnect)
        return NDJSONStreamResponse(lines, headers={"x-run-id": run_id})
    outcome = await service.call_tool(name, body.input, caller)
    headers = {"x-run-id": outcome.run_id}
    if outcome.error is not None:
        exc = outcome.error
        partial = exc.partial.to_dict() if exc.partial is not None else None
        status = 504 if exc.reason.endswith("timeout") else 502
        data = {"reason": exc.reason, "run_id": outcome.run_id, "partial": partial}
        message = f"agent tool {name!r} failed ({exc.reason}): {exc.message}"
        return error_response(
            ProtocolError(ApiErrorCode.AGENT_TOOL_FAILED, message, data=data, http_status=status), headers=headers
        )
    assert outcome.result is not None
    return json_response({"run_id": outcome.run_id, "result": outcome.result.to_dict()}, headers=headers)


routes = [
    api_route("/tools", _list, ["GET"], scope="chat"),
    api_route("/tools", _define, ["POST"]),
    api_route("/tools/{name}", _get, ["GET"], scope="chat"),
    api_route("/tools/{name}", _remove, ["DELETE"]),
    api_route("/tools/{name}/call", _call, ["POST"], scope="chat"),
]
