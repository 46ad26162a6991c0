"""``GET /agents/{name}/reachable``: whether an agent answers now, for the console's agents page.

A remote agent is asked for its card (one request, under the peer's deadlines); a local
agent runs inside the gateway and is always reachable. The answer is what happened now,
never cached, so polling it is a request to the agent each time.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from agent_server.http.responses import json_response
from gateway.errors import AgentToolError
from gateway.service.errors import NotFound
from gateway.service.http import api_route, service_of
from gateway.swarm import RemoteAgent


async def _reachable(request: Request) -> Response:
    """``{"name", "reachable", "latency_ms"?, "reason"?, "message"?}``; 200 either way (the agent's state, not ours)."""
    service = service_of(request)
    name = request.path_params["name"]
    member = service.members.agents().get(name)
    if member is None:
        raise NotFound(f"no agent named {name!r} (agents: {', '.join(sorted(service.members.agents())) or 'none'})")
    if not isinstance(member, RemoteAgent):
        return json_response({"name": name, "reachable": True, "kind": "local"})
    started = time.perf_counter()
    try:
        await member.peer.card()
    except AgentToolError as exc:
        return json_response(
            {"name": name, "reachable": False, "kind": "remote", "reason": exc.reason, "message": exc.message}
        )
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    return json_response({"name": name, "reachable": True, "kind": "remote", "latency_ms": latency_ms})


routes = [api_route("/agents/{name}/reachable", _reachable, ["GET"], scope="chat")]
