"""``/agents``: the swarm's members; remote ones are registered by URL (their card is fetched) and removed."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from agent_server.http.responses import json_response
from gateway.service.bodies import RegisterAgentBody
from gateway.service.core import GatewayService
from gateway.service.errors import NotFound
from gateway.service.http import api_route, body_limit, read_body, service_of
from gateway.service.members import check_api_target
from gateway.swarm import Agent, RemoteAgent
from gateway.swarm.member import SwarmMember


def agent_info(service: GatewayService, member: SwarmMember) -> dict[str, Any]:
    """What the API shows of one agent."""
    info: dict[str, Any] = {
        "name": member.name,
        "starting": member is service.starting_agent,
        "handoff_from": service.members.handoff_sources(member.name),
    }
    if isinstance(member, RemoteAgent):
        info.update(
            kind="remote",
            url=member.uri,
            binding=member.binding,
            authenticated=member.authenticated,
            description=member.description,
            streaming=member.streaming,
            max_cost_usd=member.budget.max_cost_usd,
            health=member.health.to_dict(),
            proxy=f"/proxy/{quote(member.name, safe='')}",
            card=member.card.to_wire(),
        )
    elif isinstance(member, Agent):
        info.update(
            kind="local",
            description=member.description or member.specialty,
            model=type(member.get_model()).__name__,
            handoffs=[h.name for h in member.handoffs],
            tools=[t.name for t in member.tools],
        )
    else:
        info.update(kind=type(member).__name__, description=member.specialty)
    return info


async def _list(request: Request) -> Response:
    service = service_of(request)
    agents = [agent_info(service, member) for member in service.members.agents().values()]
    return json_response({"starting_agent": service.starting_agent.name, "agents": agents})


async def _register(request: Request) -> Response:
    body = await read_body(request, RegisterAgentBody, body_limit(request))
    service = service_of(request)
    check_api_target(service.gateway, body.url, "url")
    remote = await service.members.register_remote(
        body.url,
        name=body.name,
        description=body.description,
        handoff_from=body.handoff_from,
        token=body.token,
        max_cost_usd=body.max_cost_usd,
    )
    location = "/agents/" + quote(remote.name, safe="")
    return json_response(agent_info(service, remote), status_code=201, headers={"location": location})


async def _get(request: Request) -> Response:
    service = service_of(request)
    name = request.path_params["name"]
    member = service.members.agents().get(name)
    if member is None:
        raise NotFound(f"no agent named {name!r} (agents: {', '.join(sorted(service.members.agents())) or 'none'})")
    return json_response(agent_info(service, member))


async def _remove(request: Request) -> Response:
    removed = await service_of(request).members.remove_agent(request.path_params["name"])
    return json_response({"removed": removed.name, "url": removed.uri})


routes = [
    api_route("/agents", _list, ["GET"], scope="chat"),
    api_route("/agents", _register, ["POST"]),
    api_route("/agents/{name}", _get, ["GET"], scope="chat"),
    api_route("/agents/{name}", _remove, ["DELETE"]),
]
