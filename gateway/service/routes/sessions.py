"""``/sessions``: the caller's sessions; post a user message and receive the run's events live; read or forget one."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from agent_server.http.auth import principal_of
from agent_server.http.responses import NDJSONStreamResponse, error_response, json_response
from gateway.errors import SessionConflictError
from gateway.recording.events import Event, RunCancelledEvent, RunCompletedEvent, RunFailedEvent, RunStartedEvent
from gateway.service.bodies import MessageBody, SessionAgentBody
from gateway.service.core import GatewayService
from gateway.service.errors import ApiErrorCode, Conflict, NotFound
from gateway.service.following import followed
from gateway.service.http import api_route, body_limit, query_int, read_body, service_of
from protocol import ErrorCode, ProtocolError

_SESSION_ID = re.compile(r"^[A-Za-z0-9._:~-]{1,128}\Z")
"""Ends in ``\\Z``, not ``$``: ``$`` also matches before a final newline, which the x-session-id header cannot carry."""


def session_id_of(request: Request) -> str:
    return check_session_id(request.path_params["session_id"])


def check_session_id(session_id: str) -> str:
    """``session_id`` if a session may be named so (it travels in a path and a header), else INVALID_PARAMS."""
    if not _SESSION_ID.match(session_id):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            f"session id {session_id!r} is not valid (1-128 letters, digits, '.', '_', ':', '~' or '-')",
        )
    return session_id


async def _post_message(request: Request) -> Response:
    """The run goes on in the gateway even if this response is dropped; ``GET /runs/{id}/events`` picks it up."""
    session_id = session_id_of(request)
    body = await read_body(request, MessageBody, body_limit(request))
    service = service_of(request)
    caller = principal_of(request)
    run_id = await service.start_turn(session_id, body.message, body.context_variables, caller)
    headers = {"x-run-id": run_id, "x-session-id": session_id}
    if body.stream:
        lines = followed(service, run_id, caller, cancel_on_disconnect=body.cancel_on_disconnect)
        return NDJSONStreamResponse(lines, headers=headers)
    return await _summary(service, run_id, session_id, headers)


async def _summary(service: GatewayService, run_id: str, session_id: str, headers: dict[str, str]) -> Response:
    """Wait for the run's end; its answer as one JSON object, or its failure as a 502."""
    count = 0
    last: Event | None = None
    async for event in service.event_log.follow(run_id):
        count += 1
        if type(event) is not RunCancelledEvent:  # a cancel's note, before the run's own end
            last = event
    if type(last) is RunCompletedEvent:
        summary = {
            "run_id": run_id,
            "session_id": session_id,
            "active_agent_name": last.active_agent_name,
            "content": last.content,
            "state": last.state,
            "handoffs": last.handoffs,
            "events": count,
        }
        return json_response(summary, headers=headers)
    failed = last if type(last) is RunFailedEvent else None
    data = {"run_id": run_id, "session_id": session_id, "error_type": failed.error_type if failed else None}
    message = f"the run failed: {failed.error if failed else 'it ended without a result'}"
    return error_response(ProtocolError(ApiErrorCode.RUN_FAILED, message, data=data, http_status=502), headers=headers)


async def _list(request: Request) -> Response:
    """The sessions of the caller's ``runs`` newest runs (default 200), newest first; read from the event log.

    Each: ``{"session_id", "last_run_id", "last_started_ms", "runs", "last_message", "closed"}``, where
    ``runs`` counts its turns among those runs and ``closed`` says whether its last turn ended.
    """
    service = service_of(request)
    limit = query_int(request, "runs", 200, minimum=1, maximum=1000)
    sessions: dict[str, dict[str, Any]] = {}
    for run_id in await service.list_runs(limit, principal_of(request)):
        first = await service.event_log.read(run_id, -1, limit=1)
        started = first[0] if first else None
        if type(started) is not RunStartedEvent:
            continue
        session_id = str(started.session_id)
        entry = sessions.get(session_id)
        if entry is None:
            sessions[session_id] = {
                "session_id": session_id,
                "last_run_id": run_id,
                "last_started_ms": started.timestamp_ms,
                "last_message": started.user_message,
                "closed": await service.event_log.is_closed(run_id),
                "runs": 1,
            }
        else:
            entry["runs"] += 1
    return json_response({"sessions": list(sessions.values())})


async def _get(request: Request) -> Response:
    """``open_run``: a turn that started and has not ended, ``running`` (on any replica) or ``interrupted``."""
    service = service_of(request)
    session = await service.session(session_id_of(request), principal_of(request))
    open_run = (
        {"run_id": session.open_run, "state": await service.run_state(session.open_run)} if session.open_run else None
    )
    return json_response(
        {
            "session_id": session.id,
            "active_agent": session.active_agent,
            "context_variables": session.context_variables,
            "history": session.history,
            "open_run": open_run,
            "version": session.version,
        }
    )


async def _set_agent(request: Request) -> Response:
    """Hand the session to ``agent`` for its next turn (``switchboard chat``'s ``/agent`` and ``/reset``).

    The history stays; a new session is started, owned by the caller. Waits for a turn going on in it.
    """
    session_id = session_id_of(request)
    body = await read_body(request, SessionAgentBody, body_limit(request))
    service = service_of(request)
    agents = service.members.agents()
    if body.agent not in agents:
        raise NotFound(f"no agent named {body.agent!r} (agents: {', '.join(sorted(agents)) or 'none'})")
    caller = principal_of(request)
    async with service.session_store.lock(session_id):
        session = await service.session_store.load(session_id)
        if session.version > 0:
            session = await service.session(session_id, caller)
        else:
            session.owner = caller.name
        session.active_agent = body.agent
        session.active_agent_uri = None
        session.handoff = None
        try:
            saved = await service.session_store.save(session)
        except SessionConflictError as exc:
            raise Conflict(f"{exc}; try again") from None
    return json_response({"session_id": session_id, "active_agent": saved.active_agent, "version": saved.version})


async def _delete(request: Request) -> Response:
    """Waits for a turn going on in the session, so that turn cannot save it back afterwards."""
    session_id = session_id_of(request)
    service = service_of(request)
    async with service.session_store.lock(session_id):
        await service.session(session_id, principal_of(request))
        await service.session_store.delete(session_id)
    return json_response({"deleted": session_id})


routes = [
    api_route("/sessions", _list, ["GET"], scope="chat"),
    api_route("/sessions/{session_id}/messages", _post_message, ["POST"], scope="chat"),
    api_route("/sessions/{session_id}", _get, ["GET"], scope="chat"),
    api_route("/sessions/{session_id}/agent", _set_agent, ["PUT"], scope="chat"),
    api_route("/sessions/{session_id}", _delete, ["DELETE"], scope="chat"),
]
