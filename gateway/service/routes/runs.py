"""``/runs``: every run in the event log; one run's events from a seq, replayed then followed live; cancel one."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from agent_server.http.auth import principal_of
from agent_server.http.responses import NDJSONStreamResponse, json_response
from gateway.defaults import MAX_SUMMARY_EVENTS
from gateway.event_log.cancels import CancelAsk
from gateway.recording.events import AgentToolInvokedEvent, Event, RunStartedEvent
from gateway.recording.summary import summarize
from gateway.service.errors import NotFound
from gateway.service.http import api_route, query_bool, query_int, service_of


async def _list(request: Request) -> Response:
    """Newest first, each with what its first event says (session, agent or tool) and whether it ended."""
    service = service_of(request)
    limit = query_int(request, "limit", 50, minimum=1, maximum=1000)
    runs = []
    for run_id in await service.list_runs(limit, principal_of(request)):
        first = await service.event_log.read(run_id, -1, limit=1)
        head = first[0] if first else None
        session_id, agent, tool = _opening(head)
        runs.append(
            {
                "run_id": run_id,
                "closed": await service.event_log.is_closed(run_id),
                "first_event": head.type if head is not None else None,
                "started_ms": head.timestamp_ms if head is not None else None,
                "session_id": session_id,
                "agent": agent,
                "tool": tool,
            }
        )
    return json_response({"runs": runs})


def _opening(head: Event | None) -> tuple[str | None, str | None, str | None]:
    """The session, agent and tool a run's first event names: a swarm turn's ``run_started``, or the
    ``agent_tool_invoked`` of an agent call made outside a turn."""
    if type(head) is RunStartedEvent:
        return head.session_id, head.agent, None
    if type(head) is AgentToolInvokedEvent:
        return head.session_id, head.agent, head.tool
    return None, None, None


async def _summary(request: Request) -> Response:
    """Agents visited, hops, tools, tokens, cost and duration (gateway/recording/summary.py)."""
    service = service_of(request)
    run_id = request.path_params["run_id"]
    if not await service.run_known(run_id, principal_of(request)):
        raise NotFound(f"no run {run_id!r} in the event log (GET /runs lists them)")
    closed = await service.event_log.is_closed(run_id)
    events = await service.event_log.read(run_id, -1, limit=MAX_SUMMARY_EVENTS)
    return json_response(summarize(run_id, events, closed=closed))


async def _events(request: Request) -> Response:
    """``after_seq`` (default -1: from the start) and ``follow`` (1: stay until the run ends)."""
    service = service_of(request)
    run_id = request.path_params["run_id"]
    after_seq = query_int(request, "after_seq", -1, minimum=-1)
    follow = query_bool(request, "follow")
    if not await service.run_known(run_id, principal_of(request)):
        raise NotFound(f"no run {run_id!r} in the event log (GET /runs lists them)")
    return NDJSONStreamResponse(service.event_log.as_ndjson(run_id, after_seq, follow), headers={"x-run-id": run_id})


async def _cancel(request: Request) -> Response:
    """End a run going on: its agent calls in flight are sent their cancel; ``run_cancelled`` says who asked.

    202: the cancel was accepted (the run's ending events follow in its log): carried out here,
    or, for a run another replica runs, left for that replica, which carries it out within a
    moment (``"cancel": "requested"``); 404: no such run (or another caller's); 409: it already ended.
    """
    service = service_of(request)
    run_id = request.path_params["run_id"]
    if await service.cancel_run(run_id, principal_of(request)) is CancelAsk.STORED:
        return json_response({"run_id": run_id, "cancel": "requested", "on": "another replica"}, status_code=202)
    return json_response({"run_id": run_id, "cancelled": True}, status_code=202)


routes = [
    api_route("/runs", _list, ["GET"], scope="chat"),
    api_route("/runs/{run_id}", _summary, ["GET"], scope="chat"),
    api_route("/runs/{run_id}/events", _events, ["GET"], scope="chat"),
    api_route("/runs/{run_id}/cancel", _cancel, ["POST"], scope="chat"),
]
